package gds

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClassifyFS(t *testing.T) {
	for magic, want := range map[int64]struct {
		typ string
		s   FSSupport
	}{
		0xEF53: {"ext4", FSSupported}, 0x58465342: {"xfs", FSSupported},
		0x01021994: {"tmpfs", FSUnsupported}, 0x794C7630: {"overlayfs", FSUnsupported},
		0x65735546: {"fuse", FSUnsupported}, 0x6969: {"nfs", FSConditional},
		0x1234: {"unknown (0x1234)", FSUnsupported},
	} {
		fs := classifyFS("/d", magic)
		if fs.Type != want.typ || fs.Support != want.s || fs.Magic != magic {
			t.Errorf("%#x: %+v", magic, fs)
		}
	}
	fs, err := CheckFilesystem(t.TempDir())
	if err != nil || fs.Type == "" || fs.Magic == 0 {
		t.Errorf("CheckFilesystem(TempDir): %+v %v", fs, err)
	}
	if _, err := CheckFilesystem("/nonexistent/dir"); err == nil {
		t.Error("CheckFilesystem of a missing directory succeeded")
	}
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestNvidiaFSModule(t *testing.T) {
	sysRoot := t.TempDir()
	writeFiles(t, sysRoot, map[string]string{"sys/module/nvidia_fs/version": "2.17.5\n"})
	if m := nvidiaFSModule(sysRoot); !m.Loaded || m.Version != "2.17.5" {
		t.Errorf("sysfs: %+v", m)
	}
	procRoot := t.TempDir()
	writeFiles(t, procRoot, map[string]string{
		"proc/modules":                  "nvidia 1 0 - Live 0x0\nnvidia_fs 274432 0 - Live 0x0000000000000000 (OE)\n",
		"proc/driver/nvidia-fs/version": "version: 2.18.3\n",
	})
	if m := nvidiaFSModule(procRoot); !m.Loaded || m.Version != "2.18.3" {
		t.Errorf("procfs: %+v", m)
	}
	none := t.TempDir()
	writeFiles(t, none, map[string]string{"proc/modules": "nvidia 1 0 - Live 0x0\nnvidia_fsx 1 0 - Live 0x0\n"})
	if m := nvidiaFSModule(none); m.Loaded {
		t.Errorf("no module: %+v", m)
	}
}

func TestProbeVerdicts(t *testing.T) {
	withModule := t.TempDir()
	writeFiles(t, withModule, map[string]string{"sys/module/nvidia_fs/version": "2.17.5\n"})
	noNVML := func() GPUReport { return GPUReport{Err: errors.New("nvml.Init: ERROR_LIBRARY_NOT_FOUND")} }
	missing := "/nonexistent/libmissing.so"
	cases := []struct {
		name    string
		setup   func(f *fakeLibs, o *ProbeOptions)
		verdict Verdict
		reason  string
	}{
		{"ready", func(f *fakeLibs, o *ProbeOptions) {}, VerdictReady, ""},
		{"no nvidia-fs module", func(f *fakeLibs, o *ProbeOptions) { o.Root = t.TempDir() }, VerdictCompat, "nvidia-fs kernel module not loaded"},
		{"cuFile compat mode", func(f *fakeLibs, o *ProbeOptions) { f.setCompat(1) }, VerdictCompat, "compatibility mode"},
		{"no libcufile", func(f *fakeLibs, o *ProbeOptions) { o.CuFileLib = missing }, VerdictCompat, "cuFile: " + missing},
		{"driver fails", func(f *fakeLibs, o *ProbeOptions) { f.fail("cuFileDriverOpen", 5009, 0) }, VerdictCompat, "CU_FILE_DEVICE_NOT_SUPPORTED (5009)"},
		{"no libcuda", func(f *fakeLibs, o *ProbeOptions) { o.CUDALib = missing }, VerdictNoGPU, "CUDA driver: " + missing},
		{"no device", func(f *fakeLibs, o *ProbeOptions) { f.cudaSet(0, 0) }, VerdictNoGPU, "no CUDA device"},
		{"cuInit fails", func(f *fakeLibs, o *ProbeOptions) { f.cudaSet(1, 100) }, VerdictNoGPU, "CUDA_ERROR_NO_DEVICE"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := fakes(t)
			o := ProbeOptions{CuFileLib: f.CuFile, CUDALib: f.CUDA, Root: withModule, NVML: noNVML}
			c.setup(f, &o)
			rep, err := Probe(o)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Verdict != c.verdict {
				t.Fatalf("verdict %v, want %v; reasons %q", rep.Verdict, c.verdict, rep.Reasons)
			}
			if c.reason == "" && len(rep.Reasons) != 0 {
				t.Errorf("reasons %q", rep.Reasons)
			}
			if c.reason != "" && !strings.Contains(strings.Join(rep.Reasons, "\n"), c.reason) {
				t.Errorf("reasons %q lack %q", rep.Reasons, c.reason)
			}
			if f.driverIsOpen() != 0 {
				t.Error("probe left the cuFile driver open")
			}
			if f.cudaStat("retain") != f.cudaStat("release") {
				t.Errorf("context retained %d, released %d", f.cudaStat("retain"), f.cudaStat("release"))
			}
		})
	}

	f := fakes(t)
	rep, err := Probe(ProbeOptions{CuFileLib: f.CuFile, CUDALib: f.CUDA, Root: withModule, NVML: noNVML})
	if err != nil {
		t.Fatal(err)
	}
	if rep.CUDA.File != f.CUDA || rep.CuFile.File != f.CuFile || rep.CUDA.Version != 12040 || rep.CuFile.Version != 1130 {
		t.Errorf("libraries %+v %+v", rep.CUDA, rep.CuFile)
	}
	if len(rep.CUDA.Devices) != 1 || rep.CUDA.Devices[0].Name != "Fake GPU 0" || rep.CUDA.Devices[0].PCIBusID != "0000:07:00.0" || rep.GPUCount() != 1 {
		t.Errorf("devices %+v", rep.CUDA.Devices)
	}
	if d := rep.CuFile.Driver; d == nil || !d.GDSAvailable() || !d.CompatAllowed() || strings.Join(d.Storage(), ",") != "NVMe" {
		t.Errorf("driver %+v", d)
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "cache dir not checked") {
		t.Errorf("notes %q", rep.Notes)
	}
}

func TestProbeCacheDir(t *testing.T) {
	f := fakes(t)
	dir := t.TempDir()
	rep, err := Probe(ProbeOptions{CuFileLib: f.CuFile, CUDALib: f.CUDA, CacheDir: dir, NVML: func() GPUReport { return GPUReport{} }})
	if err != nil {
		t.Fatal(err)
	}
	if rep.CacheDir == nil || rep.CacheDir.Dir != dir || rep.CacheDir.Type == "" {
		t.Errorf("cache dir %+v", rep.CacheDir)
	}
	if _, err := Probe(ProbeOptions{CacheDir: "/nonexistent/cache"}); err == nil || !strings.Contains(err.Error(), "/nonexistent/cache") {
		t.Errorf("missing cache dir: %v", err)
	}
}
