//go:build !cgo

package gds

import "testing"

func TestNVMLWithoutCgo(t *testing.T) {
	rep := DetectNVML()
	if NVMLAvailable || rep.Err == nil || rep.Err.Error() != "NVML unavailable: built without cgo" || len(rep.GPUs) != 0 {
		t.Fatalf("%+v", rep)
	}
}
