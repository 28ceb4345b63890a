//go:build !cgo

package gds

import "errors"

// NVMLAvailable reports whether this binary was built with NVML support
// (cgo).
const NVMLAvailable = false

// errNoCgo is DetectNVML's error in a binary built with CGO_ENABLED=0:
// go-nvml is a cgo package.
var errNoCgo = errors.New("NVML unavailable: built without cgo")

// DetectNVML reports that NVML is unavailable: this binary was built
// without cgo. GPUs are still found through libcuda (see Probe).
func DetectNVML() GPUReport { return GPUReport{Err: errNoCgo} }
