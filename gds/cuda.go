package gds

import (
	"fmt"
	"sync"
	"unsafe"
)

// cudaLib is the CUDA driver API (libcuda) bound through purego: just what
// device memory and the compatibility path need.
type cudaLib struct {
	lib *library

	init              func(flags uint32) int32
	driverGetVersion  func(v *int32) int32
	deviceGetCount    func(n *int32) int32
	deviceGet         func(dev *int32, ordinal int32) int32
	primaryCtxRetain  func(ctx *uintptr, dev int32) int32
	primaryCtxRelease func(dev int32) int32
	ctxSetCurrent     func(ctx uintptr) int32
	memAlloc          func(dptr *uintptr, size uintptr) int32
	memFree           func(dptr uintptr) int32
	memcpyHtoD        func(dst uintptr, src unsafe.Pointer, size uintptr) int32
	memcpyDtoH        func(dst unsafe.Pointer, src uintptr, size uintptr) int32

	// Optional: used for reports only.
	deviceGetName     func(name *byte, n int32, dev int32) int32
	deviceGetPCIBusID func(id *byte, n int32, dev int32) int32
	deviceTotalMem    func(bytes *uint64, dev int32) int32
	getErrorName      func(code int32, name **byte) int32
}

var cudaLibs struct {
	mu   sync.Mutex
	libs map[string]*cudaLib
}

func loadCUDA(name string) (*cudaLib, error) {
	cudaLibs.mu.Lock()
	defer cudaLibs.mu.Unlock()
	if l := cudaLibs.libs[name]; l != nil {
		return l, nil
	}
	lib, err := openLibrary(name)
	if err != nil {
		return nil, err
	}
	c := &cudaLib{lib: lib}
	if err := lib.bind([]symbol{
		{names: []string{"cuInit"}, fptr: &c.init},
		{names: []string{"cuDriverGetVersion"}, fptr: &c.driverGetVersion},
		{names: []string{"cuDeviceGetCount"}, fptr: &c.deviceGetCount},
		{names: []string{"cuDeviceGet"}, fptr: &c.deviceGet},
		{names: []string{"cuDevicePrimaryCtxRetain"}, fptr: &c.primaryCtxRetain},
		{names: []string{"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}, fptr: &c.primaryCtxRelease},
		{names: []string{"cuCtxSetCurrent"}, fptr: &c.ctxSetCurrent},
		{names: []string{"cuMemAlloc_v2"}, fptr: &c.memAlloc},
		{names: []string{"cuMemFree_v2"}, fptr: &c.memFree},
		{names: []string{"cuMemcpyHtoD_v2"}, fptr: &c.memcpyHtoD},
		{names: []string{"cuMemcpyDtoH_v2"}, fptr: &c.memcpyDtoH},
		{names: []string{"cuDeviceGetName"}, fptr: &c.deviceGetName, optional: true},
		{names: []string{"cuDeviceGetPCIBusId"}, fptr: &c.deviceGetPCIBusID, optional: true},
		{names: []string{"cuDeviceTotalMem_v2"}, fptr: &c.deviceTotalMem, optional: true},
		{names: []string{"cuGetErrorName"}, fptr: &c.getErrorName, optional: true},
	}); err != nil {
		return nil, err
	}
	if cudaLibs.libs == nil {
		cudaLibs.libs = map[string]*cudaLib{}
	}
	cudaLibs.libs[name] = c
	return c, nil
}

// check turns a CUresult into a *CUDAError, naming it with cuGetErrorName
// when the library has it.
func (c *cudaLib) check(op string, rc int32) error {
	if rc == 0 {
		return nil
	}
	name := ""
	if c.getErrorName != nil {
		var p *byte
		if c.getErrorName(rc, &p) == 0 {
			name = cString(p)
		}
	}
	if name == "" {
		name = cuResultName(rc)
	}
	return &CUDAError{Op: op, Code: rc, Name: name}
}

// devices initialises the driver and returns the number of devices.
func (c *cudaLib) devices() (int, error) {
	if err := c.check("cuInit", c.init(0)); err != nil {
		return 0, err
	}
	var n int32
	if err := c.check("cuDeviceGetCount", c.deviceGetCount(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// driverVersion returns the CUDA driver API version, for example 12040.
func (c *cudaLib) driverVersion() int {
	var v int32
	if c.driverGetVersion(&v) != 0 {
		return 0
	}
	return int(v)
}

// device describes device ordinal i (after devices succeeded).
func (c *cudaLib) device(i int) (GPU, error) {
	g := GPU{Index: i}
	var dev int32
	if err := c.check("cuDeviceGet", c.deviceGet(&dev, int32(i))); err != nil {
		return g, err
	}
	if c.deviceGetName != nil {
		buf := make([]byte, 256)
		if c.deviceGetName(&buf[0], int32(len(buf)), dev) == 0 {
			g.Name = goString(buf)
		}
	}
	if c.deviceGetPCIBusID != nil {
		buf := make([]byte, 64)
		if c.deviceGetPCIBusID(&buf[0], int32(len(buf)), dev) == 0 {
			g.PCIBusID = goString(buf)
		}
	}
	if c.deviceTotalMem != nil {
		var n uint64
		if c.deviceTotalMem(&n, dev) == 0 {
			g.MemoryTotal = n
		}
	}
	return g, nil
}

// FormatCUDAVersion formats a CUDA version number such as 12040 as "12.4".
func FormatCUDAVersion(v int) string {
	if v <= 0 {
		return "unknown"
	}
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}
