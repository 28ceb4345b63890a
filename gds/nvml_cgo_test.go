//go:build cgo

package gds

import (
	"fmt"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// mockGPU is a go-nvml mock device.
func mockGPU(i int) *mock.Device {
	return &mock.Device{
		GetNameFunc: func() (string, nvml.Return) { return fmt.Sprintf("NVIDIA A100-SXM4-80GB #%d", i), nvml.SUCCESS },
		GetUUIDFunc: func() (string, nvml.Return) { return fmt.Sprintf("GPU-0000000%d", i), nvml.SUCCESS },
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: 80 << 30, Free: 79 << 30, Used: 1 << 30}, nvml.SUCCESS
		},
		GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) {
			var p nvml.PciInfo
			for j, c := range fmt.Sprintf("00000000:%02X:00.0", 7+i) {
				p.BusId[j] = int8(c)
			}
			return p, nvml.SUCCESS
		},
	}
}

// mockNVML is an NVML with n GPUs.
func mockNVML(n int) *mock.Interface {
	return &mock.Interface{
		InitFunc:                       func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:                   func() nvml.Return { return nvml.SUCCESS },
		SystemGetDriverVersionFunc:     func() (string, nvml.Return) { return "550.54.15", nvml.SUCCESS },
		SystemGetCudaDriverVersionFunc: func() (int, nvml.Return) { return 12040, nvml.SUCCESS },
		DeviceGetCountFunc:             func() (int, nvml.Return) { return n, nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i >= n {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return mockGPU(i), nvml.SUCCESS
		},
	}
}

func TestNVMLDetect(t *testing.T) {
	for _, n := range []int{0, 1, 2} {
		t.Run(fmt.Sprint(n, " GPUs"), func(t *testing.T) {
			m := mockNVML(n)
			rep := detectNVML(m)
			if rep.Err != nil {
				t.Fatal(rep.Err)
			}
			if rep.DriverVersion != "550.54.15" || rep.CUDAVersion != 12040 || FormatCUDAVersion(rep.CUDAVersion) != "12.4" {
				t.Errorf("versions %q %d", rep.DriverVersion, rep.CUDAVersion)
			}
			if len(rep.GPUs) != n {
				t.Fatalf("%d GPUs, want %d", len(rep.GPUs), n)
			}
			for i, g := range rep.GPUs {
				want := GPU{Index: i, Name: fmt.Sprintf("NVIDIA A100-SXM4-80GB #%d", i), UUID: fmt.Sprintf("GPU-0000000%d", i),
					PCIBusID: fmt.Sprintf("00000000:%02X:00.0", 7+i), MemoryTotal: 80 << 30}
				if g != want {
					t.Errorf("GPU %d: %+v, want %+v", i, g, want)
				}
			}
			if len(m.InitCalls()) != 1 || len(m.ShutdownCalls()) != 1 {
				t.Errorf("Init %d, Shutdown %d calls", len(m.InitCalls()), len(m.ShutdownCalls()))
			}
		})
	}
}

// TestNVMLInitFailure: only InitFunc is set, so any other call would panic
// (the mock's nil function fields) — the real library's symbols are
// unresolved until Init succeeds.
func TestNVMLInitFailure(t *testing.T) {
	for _, ret := range []nvml.Return{nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED, nvml.ERROR_NO_PERMISSION} {
		m := &mock.Interface{InitFunc: func() nvml.Return { return ret }}
		rep := detectNVML(m)
		if rep.Err == nil || rep.Err.Error() != "nvml.Init: "+ret.Error() || len(rep.GPUs) != 0 || rep.DriverVersion != "" {
			t.Errorf("%v: %+v", ret, rep)
		}
	}
}

func TestNVMLPartialFailures(t *testing.T) {
	m := mockNVML(2)
	m.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
	if rep := detectNVML(m); rep.Err == nil || !strings.Contains(rep.Err.Error(), "DeviceGetCount") || len(m.ShutdownCalls()) != 1 {
		t.Errorf("count failure: %+v", rep)
	}
	m = mockNVML(2)
	m.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i == 1 {
			return nil, nvml.ERROR_GPU_IS_LOST
		}
		d := mockGPU(i)
		d.GetUUIDFunc = func() (string, nvml.Return) { return "", nvml.ERROR_NOT_SUPPORTED }
		return d, nvml.SUCCESS
	}
	rep := detectNVML(m)
	if rep.Err != nil || len(rep.GPUs) != 2 {
		t.Fatalf("%+v", rep)
	}
	if g := rep.GPUs[0]; g.Name == "" || g.UUID != "" || g.Err == nil || !strings.Contains(g.Err.Error(), "uuid") {
		t.Errorf("GPU 0: %+v", g)
	}
	if g := rep.GPUs[1]; g.Err == nil || !strings.Contains(g.Err.Error(), "ERROR_GPU_IS_LOST") {
		t.Errorf("GPU 1: %+v", g)
	}
}

// TestNVMLOnThisMachine: the real DetectNVML must not crash without the
// library; with it, it reports whatever is there.
func TestNVMLOnThisMachine(t *testing.T) {
	rep := DetectNVML()
	if rep.Err != nil {
		t.Logf("NVML: %v", rep.Err)
		if len(rep.GPUs) != 0 {
			t.Errorf("GPUs alongside an error: %+v", rep)
		}
	}
}
