//go:build cgo

package gds

import (
	"fmt"
	"os"
	"slices"
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

// TestNVMLOnThisMachine checks the real DetectNVML against the kernel's
// own view of the NVIDIA driver, /proc/driver/nvidia. Without the driver,
// nvml.Init must fail (no library, or no driver loaded) and nothing else be
// reported. With it, the only failure allowed is a missing libnvidia-ml;
// otherwise the driver version is the kernel module's, the CUDA version is
// set, and every GPU is read whole and is one the driver lists (a container
// may see fewer than the driver does).
func TestNVMLOnThisMachine(t *testing.T) {
	rep := DetectNVML()
	notFound := "nvml.Init: " + nvml.ERROR_LIBRARY_NOT_FOUND.Error()
	empty := len(rep.GPUs) == 0 && rep.DriverVersion == "" && rep.CUDAVersion == 0
	kernel, err := os.ReadFile("/proc/driver/nvidia/version")
	if err != nil {
		if rep.Err == nil {
			t.Fatalf("NVML reports no error without the NVIDIA driver (%v): %+v", err, rep)
		}
		if e := rep.Err.Error(); e != notFound && e != "nvml.Init: "+nvml.ERROR_DRIVER_NOT_LOADED.Error() {
			t.Errorf("without the driver: %v, want library not found or driver not loaded", e)
		}
		if !empty {
			t.Errorf("report beside the Init error: %+v", rep)
		}
		return
	}
	if rep.Err != nil && rep.Err.Error() == notFound {
		if !empty {
			t.Errorf("report beside the Init error: %+v", rep)
		}
		t.Logf("NVIDIA driver loaded, libnvidia-ml absent: %v", rep.Err)
		return
	}
	if rep.Err != nil {
		t.Fatalf("NVML fails beside a loaded driver: %v", rep.Err)
	}
	if !slices.Contains(strings.Fields(string(kernel)), rep.DriverVersion) || rep.CUDAVersion <= 0 {
		t.Errorf("driver %q, CUDA %d; the kernel module says %q", rep.DriverVersion, rep.CUDAVersion, kernel)
	}
	dirs, err := os.ReadDir("/proc/driver/nvidia/gpus")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, d := range dirs {
		listed[strings.ToLower(d.Name())] = true
	}
	if len(rep.GPUs) == 0 || len(rep.GPUs) > len(listed) {
		t.Errorf("NVML sees %d GPUs, the driver lists %d", len(rep.GPUs), len(listed))
	}
	for i, g := range rep.GPUs {
		if g.Index != i || g.Err != nil || g.Name == "" || !strings.HasPrefix(g.UUID, "GPU-") || g.MemoryTotal == 0 {
			t.Errorf("GPU %d: %+v", i, g)
		}
		// NVML's bus id has an 8-digit PCI domain (00000000:07:00.0), the
		// driver's directory a 4-digit one (0000:07:00.0).
		bus := strings.ToLower(g.PCIBusID)
		if len(bus) > len("0000:07:00.0") {
			bus = bus[len(bus)-len("0000:07:00.0"):]
		}
		if !listed[bus] {
			t.Errorf("GPU %d at %q is not among the driver's %v", i, g.PCIBusID, listed)
		}
	}
}
