package gds

// DeviceBuffer is memory a read lands in: GPU memory (from Reader.Alloc, or
// foreign memory wrapped with DevicePointer) or host memory (HostBuffer).
// Exactly one of DevicePtr and HostBytes is non-zero for a non-empty buffer.
type DeviceBuffer interface {
	// DevicePtr returns the CUDA device address (CUdeviceptr) of the first
	// byte, or 0 for host memory.
	DevicePtr() uintptr
	// HostBytes returns the buffer itself when it is host memory, else nil.
	HostBytes() []byte
	// Len returns the buffer's size in bytes.
	Len() int64
}

// HostBuffer is host memory used as a read destination: on the host path,
// and in tests.
type HostBuffer []byte

func (h HostBuffer) DevicePtr() uintptr { return 0 }
func (h HostBuffer) HostBytes() []byte  { return h }
func (h HostBuffer) Len() int64         { return int64(len(h)) }

// DeviceMem is GPU memory: allocated by Reader.Alloc (freed by Reader.Free
// or Reader.Close), or foreign memory wrapped by DevicePointer (never freed
// by this package).
type DeviceMem struct {
	ptr         uintptr
	n           int64
	owner       *Reader // nil for foreign memory
	registered  bool    // with cuFileBufRegister
	registerErr error   // why cuFileBufRegister failed, if it did
}

func (d *DeviceMem) DevicePtr() uintptr { return d.ptr }
func (d *DeviceMem) HostBytes() []byte  { return nil }
func (d *DeviceMem) Len() int64         { return d.n }

// Registered reports whether the buffer is registered with cuFile
// (cuFileBufRegister), which lets GDS DMA into it without bounce buffers.
func (d *DeviceMem) Registered() bool { return d.registered }

// RegisterErr returns why cuFileBufRegister failed for a buffer from
// Reader.Alloc on the GDS path (reads still work, through cuFile's bounce
// buffers), or nil.
func (d *DeviceMem) RegisterErr() error { return d.registerErr }

// DevicePointer wraps n bytes of device memory at ptr that something else
// allocated in the reader's CUDA context (for example a framework's tensor
// storage), so reads can land in it.
func DevicePointer(ptr uintptr, n int64) *DeviceMem { return &DeviceMem{ptr: ptr, n: n} }
