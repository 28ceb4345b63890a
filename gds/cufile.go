package gds

import (
	"fmt"
	"sync"
)

// The cuFile ABI, as in cufile.h (GDS 1.x, CUDA 11.4 and later). Only
// what deltafs calls is declared.

// cuFileErr is CUfileError_t {CUfileOpError err; CUresult cu_err;},
// returned by value (in RAX on amd64, x0 on arm64; purego handles both).
type cuFileErr struct {
	Err   int32
	CUErr int32
}

// cuFileHandleTypeOpaqueFD is CU_FILE_HANDLE_TYPE_OPAQUE_FD.
const cuFileHandleTypeOpaqueFD = 1

// cuFileDescr is CUfileDescr_t on a 64-bit platform:
//
//	enum CUfileFileHandleType type;            // offset 0, 4 bytes + 4 padding
//	union { int fd; void *handle; } handle;    // offset 8, 8 bytes
//	const CUfileFSOps_t *fs_ops;               // offset 16
type cuFileDescr struct {
	typ   int32
	_     int32
	fd    int32 // the union's int member, at its start
	_     int32
	fsOps uintptr // NULL: the filesystem is discovered with fstat
}

// cuFileDrvProps is CUfileDrvProps_t, followed by spare room in case a
// newer library writes fields this declaration does not know.
type cuFileDrvProps struct {
	nvfsMajor, nvfsMinor   uint32
	pollThreshSize         uint64 // size_t, KiB
	maxDirectIOSize        uint64 // size_t, KiB
	dstatusflags           uint32
	dcontrolflags          uint32
	fflags                 uint32
	maxDeviceCacheSize     uint32
	perBufferCacheSize     uint32
	maxDevicePinnedMemSize uint32
	maxBatchIOSize         uint32
	maxBatchIOTimeoutMsecs uint32
	_                      [448]byte
}

// Bits of CUfileDrvProps_t.nvfs.dcontrolflags (CUfileDriverControlFlags
// are bit positions).
const (
	cuFileUsePollMode     = 0
	cuFileAllowCompatMode = 1
)

// CUfileDriverStatusFlags bit positions: which storage the driver supports.
var cuFileStatusFlagNames = []string{
	0: "Lustre", 1: "WekaFS", 2: "NFS", 3: "GPFS", 4: "NVMe", 5: "NVMeoF",
	6: "SCSI", 7: "ScaleFlux CSD", 8: "NVMesh", 9: "BeeGFS", 11: "NVMe P2P",
	12: "ScateFS", 13: "VirtioFS",
}

// DriverProperties is what cuFileDriverGetProperties reports.
type DriverProperties struct {
	NVFSMajor, NVFSMinor uint32 // nvidia-fs version; 0.0 means nvidia-fs is not in use
	PollThresholdKiB     uint64
	MaxDirectIOKiB       uint64
	StatusFlags          uint32 // CUfileDriverStatusFlags bits
	ControlFlags         uint32 // CUfileDriverControlFlags bits
	FeatureFlags         uint32
	MaxPinnedMemKiB      uint32
}

// GDSAvailable reports whether the nvidia-fs driver is in use: cuFile
// reports its version as 0.0 when it runs in compatibility mode.
func (p DriverProperties) GDSAvailable() bool { return p.NVFSMajor != 0 || p.NVFSMinor != 0 }

// CompatAllowed reports whether cufile.json allows compatibility mode.
func (p DriverProperties) CompatAllowed() bool {
	return p.ControlFlags&(1<<cuFileAllowCompatMode) != 0
}

// Storage returns the storage kinds the driver reports support for.
func (p DriverProperties) Storage() []string {
	var out []string
	for bit, name := range cuFileStatusFlagNames {
		if name != "" && p.StatusFlags&(1<<uint(bit)) != 0 {
			out = append(out, name)
		}
	}
	return out
}

// NVFSVersion returns "MAJOR.MINOR".
func (p DriverProperties) NVFSVersion() string { return fmt.Sprintf("%d.%d", p.NVFSMajor, p.NVFSMinor) }

// cuFileLib is libcufile bound through purego.
type cuFileLib struct {
	lib *library

	driverOpen       func() cuFileErr
	driverClose      func() cuFileErr // cuFileDriverClose_v2, else cuFileDriverClose
	driverGetProps   func(props *cuFileDrvProps) cuFileErr
	handleRegister   func(fh *uintptr, descr *cuFileDescr) cuFileErr
	handleDeregister func(fh uintptr)
	bufRegister      func(ptr uintptr, size uintptr, flags int32) cuFileErr
	bufDeregister    func(ptr uintptr) cuFileErr
	read             func(fh uintptr, buf uintptr, size uintptr, fileOff int64, bufOff int64) int64
	getVersion       func(v *int32) cuFileErr // optional (CUDA 12.2+)
}

var cuFileLibs struct {
	mu   sync.Mutex
	libs map[string]*cuFileLib // by name asked for; successful loads only
}

// loadCuFile loads and binds libcufile. Every required symbol is checked
// before any is registered, so a library missing one returns *SymbolError.
// Successful loads are kept for the life of the process.
func loadCuFile(name string) (*cuFileLib, error) {
	cuFileLibs.mu.Lock()
	defer cuFileLibs.mu.Unlock()
	if l := cuFileLibs.libs[name]; l != nil {
		return l, nil
	}
	lib, err := openLibrary(name)
	if err != nil {
		return nil, err
	}
	c := &cuFileLib{lib: lib}
	if err := lib.bind([]symbol{
		{names: []string{"cuFileDriverOpen"}, fptr: &c.driverOpen},
		{names: []string{"cuFileDriverClose_v2", "cuFileDriverClose"}, fptr: &c.driverClose},
		{names: []string{"cuFileDriverGetProperties"}, fptr: &c.driverGetProps},
		{names: []string{"cuFileHandleRegister"}, fptr: &c.handleRegister},
		{names: []string{"cuFileHandleDeregister"}, fptr: &c.handleDeregister},
		{names: []string{"cuFileBufRegister"}, fptr: &c.bufRegister},
		{names: []string{"cuFileBufDeregister"}, fptr: &c.bufDeregister},
		{names: []string{"cuFileRead"}, fptr: &c.read},
		{names: []string{"cuFileGetVersion"}, fptr: &c.getVersion, optional: true},
	}); err != nil {
		return nil, err
	}
	if cuFileLibs.libs == nil {
		cuFileLibs.libs = map[string]*cuFileLib{}
	}
	cuFileLibs.libs[name] = c
	return c, nil
}

func cuFileStatus(op string, e cuFileErr, detail string) error {
	if e.Err == 0 {
		return nil
	}
	code := e.Err
	if code < 0 {
		code = -code
	}
	return newError(op, Status(code), e.CUErr, detail)
}

// Call with the CUDA context current on the calling OS thread.
func (c *cuFileLib) open() error { return cuFileStatus("cuFileDriverOpen", c.driverOpen(), "") }

func (c *cuFileLib) close() error { return cuFileStatus("cuFileDriverClose", c.driverClose(), "") }

func (c *cuFileLib) properties() (DriverProperties, error) {
	var p cuFileDrvProps
	if err := cuFileStatus("cuFileDriverGetProperties", c.driverGetProps(&p), ""); err != nil {
		return DriverProperties{}, err
	}
	return DriverProperties{
		NVFSMajor:        p.nvfsMajor,
		NVFSMinor:        p.nvfsMinor,
		PollThresholdKiB: p.pollThreshSize,
		MaxDirectIOKiB:   p.maxDirectIOSize,
		StatusFlags:      p.dstatusflags,
		ControlFlags:     p.dcontrolflags,
		FeatureFlags:     p.fflags,
		MaxPinnedMemKiB:  p.maxDevicePinnedMemSize,
	}, nil
}

// version returns the cuFile library version (for example 1130 for 1.13),
// or 0 when the library does not export cuFileGetVersion.
func (c *cuFileLib) version() int {
	if c.getVersion == nil {
		return 0
	}
	var v int32
	if c.getVersion(&v).Err != 0 {
		return 0
	}
	return int(v)
}

func (c *cuFileLib) registerFD(fd int, path string) (uintptr, error) {
	d := cuFileDescr{typ: cuFileHandleTypeOpaqueFD, fd: int32(fd)}
	var fh uintptr
	if err := cuFileStatus("cuFileHandleRegister", c.handleRegister(&fh, &d), path); err != nil {
		return 0, err
	}
	return fh, nil
}

func (c *cuFileLib) registerBuf(ptr uintptr, n int64) error {
	return cuFileStatus("cuFileBufRegister", c.bufRegister(ptr, uintptr(n), 0), "")
}

func (c *cuFileLib) deregisterBuf(ptr uintptr) error {
	return cuFileStatus("cuFileBufDeregister", c.bufDeregister(ptr), "")
}

// readAt calls cuFileRead once, mapping a negative return to an error:
// -1 means errno is set (a filesystem error); other negative values are a
// negated CUfileOpError. Call with the OS thread locked, so errno is this
// call's.
func (c *cuFileLib) readAt(fh uintptr, dev uintptr, size int64, fileOff, devOff int64, path string) (int64, error) {
	n := c.read(fh, dev, uintptr(size), fileOff, devOff)
	if n >= 0 {
		return n, nil
	}
	detail := fmt.Sprintf("%s@%d+%d", path, fileOff, size)
	if n == -1 {
		if errno := lastErrno(); errno != 0 {
			return 0, fmt.Errorf("cuFileRead %s: %w", detail, errnoErr(errno))
		}
		return 0, fmt.Errorf("cuFileRead %s: failed (-1) with errno unset", detail)
	}
	if -n >= 5000 {
		return 0, newError("cuFileRead", Status(-n), 0, detail)
	}
	// Some cuFile versions return -errno directly.
	return 0, fmt.Errorf("cuFileRead %s: %w", detail, errnoErr(int32(-n)))
}
