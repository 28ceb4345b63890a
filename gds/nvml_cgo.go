//go:build cgo

package gds

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// NVMLAvailable reports whether this binary was built with NVML support
// (cgo).
const NVMLAvailable = true

// DetectNVML asks NVML (libnvidia-ml.so.1, loaded at run time) for the
// driver version, the CUDA version and every GPU. When nvml.Init fails
// (no library, no driver) nothing else is called and Err says why.
func DetectNVML() GPUReport { return detectNVML(nvml.New()) }

// detectNVML is DetectNVML over any nvml.Interface, so tests can pass
// go-nvml's mock.Interface. NVML's symbols are unresolved until Init
// succeeds, so Init comes first and gates every other call.
func detectNVML(lib nvml.Interface) GPUReport {
	var rep GPUReport
	if ret := lib.Init(); ret != nvml.SUCCESS {
		rep.Err = fmt.Errorf("nvml.Init: %s", nvmlError(ret))
		return rep
	}
	defer lib.Shutdown()
	if v, ret := lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		rep.DriverVersion = v
	}
	if v, ret := lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
		rep.CUDAVersion = v
	}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		rep.Err = fmt.Errorf("nvml.DeviceGetCount: %s", nvmlError(ret))
		return rep
	}
	for i := 0; i < n; i++ {
		rep.GPUs = append(rep.GPUs, nvmlDevice(lib, i))
	}
	return rep
}

func nvmlDevice(lib nvml.Interface, i int) GPU {
	g := GPU{Index: i}
	d, ret := lib.DeviceGetHandleByIndex(i)
	if ret != nvml.SUCCESS {
		g.Err = fmt.Errorf("nvml.DeviceGetHandleByIndex(%d): %s", i, nvmlError(ret))
		return g
	}
	var failed []string
	if v, ret := d.GetName(); ret == nvml.SUCCESS {
		g.Name = v
	} else {
		failed = append(failed, "name: "+nvmlError(ret))
	}
	if v, ret := d.GetUUID(); ret == nvml.SUCCESS {
		g.UUID = v
	} else {
		failed = append(failed, "uuid: "+nvmlError(ret))
	}
	if m, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
		g.MemoryTotal = m.Total
	} else {
		failed = append(failed, "memory: "+nvmlError(ret))
	}
	if p, ret := d.GetPciInfo(); ret == nvml.SUCCESS {
		g.PCIBusID = int8String(p.BusId[:])
	} else {
		failed = append(failed, "pci: "+nvmlError(ret))
	}
	if len(failed) > 0 {
		g.Err = fmt.Errorf("nvml GPU %d: %v", i, failed)
	}
	return g
}

// nvmlError names a Return. It is safe before a successful Init: until the
// library is loaded, go-nvml names Returns in Go.
func nvmlError(ret nvml.Return) string { return ret.Error() }

func int8String(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}
