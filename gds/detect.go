package gds

// GPU describes one NVIDIA GPU.
type GPU struct {
	Index       int
	Name        string
	UUID        string // NVML only
	PCIBusID    string // for example "00000000:07:00.0"
	MemoryTotal uint64 // bytes
	Err         error  // a query about this GPU that failed, if any
}

// GPUReport is what NVML says about the machine's GPUs.
type GPUReport struct {
	// Err is why NVML gave nothing: built without cgo, library not found,
	// driver not loaded. When it is set, no other field is.
	Err           error
	DriverVersion string // NVIDIA driver, for example "550.54.15"
	CUDAVersion   int    // highest CUDA version the driver supports, for example 12040
	GPUs          []GPU
}
