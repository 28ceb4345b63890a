package gds

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Verdict is the probe's one-line answer.
type Verdict int

const (
	// VerdictReady: a GPU, libcuda, libcufile with the nvidia-fs driver in
	// use, and (when checked) a cache directory on a filesystem GDS
	// supports. Reads take PathGDS.
	VerdictReady Verdict = iota
	// VerdictCompat: a usable GPU but not GPUDirect Storage. Reads take
	// PathCompat (pread, then a copy to the GPU).
	VerdictCompat
	// VerdictNoGPU: no usable GPU. Reads take PathHost.
	VerdictNoGPU
)

func (v Verdict) String() string {
	switch v {
	case VerdictReady:
		return "ready"
	case VerdictCompat:
		return "compatibility mode"
	case VerdictNoGPU:
		return "no GPU"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// FSSupport says whether GDS can DMA from a filesystem's files.
type FSSupport int

const (
	FSSupported   FSSupport = iota // local ext4 or XFS
	FSConditional                  // distributed filesystems with vendor GDS support
	FSUnsupported
)

func (s FSSupport) String() string {
	switch s {
	case FSSupported:
		return "supported"
	case FSConditional:
		return "supported only with the vendor's GDS client"
	}
	return "not supported"
}

// Filesystem describes the filesystem a directory is on.
type Filesystem struct {
	Dir     string
	Magic   int64  // statfs f_type
	Type    string // for example "ext4"
	Support FSSupport
	Note    string
}

type fsKind struct {
	name    string
	support FSSupport
	note    string
}

// fsKinds maps statfs magic numbers (linux/magic.h) to what GDS can do on
// the filesystem.
var fsKinds = map[int64]fsKind{
	0xEF53:     {"ext4", FSSupported, "GDS needs ext4's default data=ordered journaling mode"},
	0x58465342: {"xfs", FSSupported, ""},
	0x01021994: {"tmpfs", FSUnsupported, "memory-backed: host memory already holds the bytes"},
	0x858458F6: {"ramfs", FSUnsupported, "memory-backed: host memory already holds the bytes"},
	0x794C7630: {"overlayfs", FSUnsupported, "put the cache on a bind-mounted ext4/XFS volume instead"},
	0x65735546: {"fuse", FSUnsupported, "FUSE reads always land in host memory"},
	0x9123683E: {"btrfs", FSUnsupported, ""},
	0x2FC12FC1: {"zfs", FSUnsupported, ""},
	0x73717368: {"squashfs", FSUnsupported, ""},
	0xFF534D42: {"cifs", FSUnsupported, ""},
	0x6969:     {"nfs", FSConditional, "needs NFS over RDMA with a GDS-enabled client"},
	0x0BD00BD0: {"lustre", FSConditional, "needs a GDS-enabled Lustre client"},
	0x47504653: {"gpfs", FSConditional, "needs GPUDirect Storage support in IBM Storage Scale"},
	0x19830326: {"beegfs", FSConditional, "needs a GDS-enabled BeeGFS client"},
}

// CheckFilesystem reports the filesystem dir is on and whether GDS
// supports it.
func CheckFilesystem(dir string) (Filesystem, error) {
	magic, err := statfsType(dir)
	if err != nil {
		return Filesystem{Dir: dir}, err
	}
	return classifyFS(dir, magic), nil
}

func classifyFS(dir string, magic int64) Filesystem {
	fs := Filesystem{Dir: dir, Magic: magic}
	if k, ok := fsKinds[magic]; ok {
		fs.Type, fs.Support, fs.Note = k.name, k.support, k.note
	} else {
		fs.Type, fs.Support = fmt.Sprintf("unknown (0x%x)", magic), FSUnsupported
	}
	return fs
}

// ModuleReport is the nvidia-fs kernel module's state.
type ModuleReport struct {
	Loaded  bool
	Version string // from /sys/module/nvidia_fs/version when present
}

// nvidiaFSModule looks for the nvidia_fs module under root (normally "/").
func nvidiaFSModule(root string) ModuleReport {
	var m ModuleReport
	if fi, err := os.Stat(filepath.Join(root, "sys/module/nvidia_fs")); err == nil && fi.IsDir() {
		m.Loaded = true
	} else if f, err := os.Open(filepath.Join(root, "proc/modules")); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "nvidia_fs ") {
				m.Loaded = true
				break
			}
		}
		f.Close()
	}
	if !m.Loaded {
		return m
	}
	for _, p := range []string{"sys/module/nvidia_fs/version", "proc/driver/nvidia-fs/version"} {
		if b, err := os.ReadFile(filepath.Join(root, p)); err == nil {
			v, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
			v = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), "version:"))
			if v != "" {
				m.Version = v
				break
			}
		}
	}
	return m
}

// CUDAReport is what libcuda says.
type CUDAReport struct {
	Lib     string // name asked for
	File    string // file it loaded from
	Err     error  // why libcuda is unusable: not loaded, missing symbol, cuInit failed
	Version int    // CUDA driver API version
	Devices []GPU
}

// CuFileReport is what libcufile says.
type CuFileReport struct {
	Lib     string
	File    string
	Err     error // why it did not load (not found, missing symbol)
	Version int   // cuFileGetVersion, 0 when unknown
	// Driver is the driver's properties; nil when the driver was not
	// opened (no GPU) or failed to open (DriverErr).
	Driver    *DriverProperties
	DriverErr error
}

// ProbeOptions configures Probe. The zero value probes the default
// libraries and checks no cache directory.
type ProbeOptions struct {
	CacheDir  string // when set, check the filesystem it is on
	CuFileLib string // see Options
	CUDALib   string
	Device    int
	Root      string           // prefixed to /proc and /sys paths; default "/"
	NVML      func() GPUReport // replaces DetectNVML (tests)
}

// ProbeReport is everything Probe found, and its verdict.
type ProbeReport struct {
	NVML     GPUReport
	CUDA     CUDAReport
	CuFile   CuFileReport
	NVIDIAFS ModuleReport
	CacheDir *Filesystem // nil when not checked
	Verdict  Verdict
	Reasons  []string // why the verdict is not ready
	Notes    []string // worth knowing, not blocking
}

// Probe checks everything the GDS path needs, in the order of the
// checklist: a GPU (NVML, then libcuda's cuInit and device count),
// libcufile and its driver (opened and closed again; compatibility mode is
// nvidia-fs version 0.0), the nvidia-fs kernel module, and the cache
// directory's filesystem. It fails only when the cache directory cannot be
// examined; everything else is reported.
func Probe(opts ProbeOptions) (*ProbeReport, error) {
	rep := &ProbeReport{}
	if opts.CacheDir != "" {
		fs, err := CheckFilesystem(opts.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("cache dir: %w", err)
		}
		rep.CacheDir = &fs
	}
	detect := opts.NVML
	if detect == nil {
		detect = DetectNVML
	}
	rep.NVML = detect()
	root := opts.Root
	if root == "" {
		root = "/"
	}
	rep.NVIDIAFS = nvidiaFSModule(root)

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cu, ctxRelease := probeCUDA(opts, rep)
	if ctxRelease != nil {
		defer ctxRelease()
	}
	probeCuFile(opts, rep, cu != nil)
	rep.decide()
	return rep, nil
}

// probeCUDA fills rep.CUDA. When a device is usable it returns the library
// with the device's primary context current on this (locked) thread, and a
// func releasing it.
func probeCUDA(opts ProbeOptions, rep *ProbeReport) (*cudaLib, func()) {
	rep.CUDA.Lib = cudaLibName(opts.CUDALib)
	c, err := loadCUDA(rep.CUDA.Lib)
	if err != nil {
		rep.CUDA.Err = err
		return nil, nil
	}
	rep.CUDA.File = c.lib.file
	n, err := c.devices()
	if err != nil {
		rep.CUDA.Err = err
		return nil, nil
	}
	rep.CUDA.Version = c.driverVersion()
	for i := 0; i < n; i++ {
		g, err := c.device(i)
		g.Err = err
		rep.CUDA.Devices = append(rep.CUDA.Devices, g)
	}
	if n == 0 {
		return nil, nil
	}
	dev := opts.Device
	if dev < 0 || dev >= n {
		rep.CUDA.Err = fmt.Errorf("CUDA device %d does not exist (%d devices)", dev, n)
		return nil, nil
	}
	var d int32
	var ctx uintptr
	if err := c.check("cuDeviceGet", c.deviceGet(&d, int32(dev))); err != nil {
		rep.CUDA.Err = err
		return nil, nil
	}
	if err := c.check("cuDevicePrimaryCtxRetain", c.primaryCtxRetain(&ctx, d)); err != nil {
		rep.CUDA.Err = err
		return nil, nil
	}
	if err := c.check("cuCtxSetCurrent", c.ctxSetCurrent(ctx)); err != nil {
		rep.CUDA.Err = err
		c.primaryCtxRelease(d)
		return nil, nil
	}
	return c, func() { c.primaryCtxRelease(d) }
}

// probeCuFile fills rep.CuFile, opening the driver only with a GPU.
func probeCuFile(opts ProbeOptions, rep *ProbeReport, gpu bool) {
	rep.CuFile.Lib = cuFileLibName(opts.CuFileLib)
	cf, err := loadCuFile(rep.CuFile.Lib)
	if err != nil {
		rep.CuFile.Err = err
		return
	}
	rep.CuFile.File = cf.lib.file
	rep.CuFile.Version = cf.version()
	if !gpu {
		return
	}
	if err := cf.open(); err != nil {
		rep.CuFile.DriverErr = err
		return
	}
	defer cf.close()
	props, err := cf.properties()
	if err != nil {
		rep.CuFile.DriverErr = err
		return
	}
	rep.CuFile.Driver = &props
}

// GPUCount returns the number of GPUs found: NVML's count when NVML
// worked, else libcuda's.
func (rep *ProbeReport) GPUCount() int {
	if rep.NVML.Err == nil && len(rep.NVML.GPUs) > 0 {
		return len(rep.NVML.GPUs)
	}
	return len(rep.CUDA.Devices)
}

func (rep *ProbeReport) decide() {
	usable := rep.CUDA.Err == nil && len(rep.CUDA.Devices) > 0
	if !usable {
		rep.Verdict = VerdictNoGPU
		switch {
		case rep.CUDA.Err != nil:
			rep.Reasons = append(rep.Reasons, "CUDA driver: "+rep.CUDA.Err.Error())
		default:
			rep.Reasons = append(rep.Reasons, "CUDA driver: no CUDA device")
		}
		if n := len(rep.NVML.GPUs); n > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("NVML sees %d GPU(s), but CUDA cannot use them", n))
		}
		return
	}
	switch {
	case rep.CuFile.Err != nil:
		rep.Reasons = append(rep.Reasons, "cuFile: "+rep.CuFile.Err.Error())
	case rep.CuFile.DriverErr != nil:
		rep.Reasons = append(rep.Reasons, "cuFile driver: "+rep.CuFile.DriverErr.Error())
	case rep.CuFile.Driver != nil && !rep.CuFile.Driver.GDSAvailable():
		rep.Reasons = append(rep.Reasons, "cuFile: "+ErrCuFileCompat.Error())
	}
	if !rep.NVIDIAFS.Loaded {
		rep.Reasons = append(rep.Reasons, "nvidia-fs kernel module not loaded")
	}
	if fs := rep.CacheDir; fs != nil {
		switch fs.Support {
		case FSUnsupported:
			rep.Reasons = append(rep.Reasons, fmt.Sprintf("cache dir %s is on %s, which GDS does not support", fs.Dir, fs.Type))
		case FSConditional:
			rep.Notes = append(rep.Notes, fmt.Sprintf("cache dir %s is on %s: %s", fs.Dir, fs.Type, fs.Note))
		}
	} else {
		rep.Notes = append(rep.Notes, "cache dir not checked (pass --cache-dir)")
	}
	if len(rep.Reasons) == 0 {
		rep.Verdict = VerdictReady
	} else {
		rep.Verdict = VerdictCompat
	}
}
