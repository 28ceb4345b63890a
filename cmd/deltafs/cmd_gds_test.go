package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/extents"
	"github.com/deltafs/deltafs/gds"
	"github.com/deltafs/deltafs/internal/testkit"
)

// squash collapses runs of blanks, so checks do not depend on column widths.
func squash(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

var verdictCodes = map[string]int{
	"verdict: ready":              exitGDSReady,
	"verdict: compatibility mode": exitGDSCompat,
	"verdict: no GPU":             exitGDSNoGPU,
}

// TestGDSProbeNoGPU: without libcuda the verdict is "no GPU", exit 4.
func TestGDSProbeNoGPU(t *testing.T) {
	out, errOut, code := testkit.RunMain(t, []string{"DELTAFS_CUDA_LIB=/nonexistent/libcuda.so.1"}, "gds", "probe", "--cache-dir", t.TempDir())
	if lastLine(out) != "verdict: no GPU" || code != exitGDSNoGPU || errOut != "" {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"CUDA driver: not found: /nonexistent/libcuda.so.1", "nvidia-fs:", "cache dir:", "why: CUDA driver"} {
		if !strings.Contains(squash(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestGDSProbeThisMachine runs the probe as it is, with the machine's own
// libraries. Without NVIDIA device nodes it must say "no GPU" (exit 4);
// anywhere, the exit status must match the verdict.
func TestGDSProbeThisMachine(t *testing.T) {
	out, errOut, code := testkit.RunMain(t, nil, "gds", "probe")
	t.Logf("deltafs gds probe (exit %d):\n%s%s", code, out, errOut)
	want, ok := verdictCodes[lastLine(out)]
	if !ok || code != want {
		t.Fatalf("last line %q with exit %d", lastLine(out), code)
	}
	if _, err := os.Stat("/dev/nvidiactl"); err != nil && (lastLine(out) != "verdict: no GPU" || code != exitGDSNoGPU) {
		t.Fatalf("no /dev/nvidiactl here, yet: %q exit %d", lastLine(out), code)
	}
}

func TestGDSProbeErrors(t *testing.T) {
	_, errOut, code := testkit.RunMain(t, nil, "gds", "probe", "--cache-dir", "/nonexistent/cache")
	if code != 1 || !strings.Contains(errOut, "deltafs: cache dir: statfs /nonexistent/cache") {
		t.Errorf("missing cache dir: exit %d, %q", code, errOut)
	}
	if _, errOut, code := testkit.RunMain(t, nil, "gds", "probe", "extra"); code != 2 || !strings.Contains(errOut, `unexpected argument "extra"`) {
		t.Errorf("extra argument: exit %d, %q", code, errOut)
	}
}

// buildFakeLibs builds the gds package's fake libcufile and libcuda.
func buildFakeLibs(t *testing.T) (cufile, cuda string) {
	t.Helper()
	dir := t.TempDir()
	cufile, cuda = filepath.Join(dir, "libcufile.so.0"), filepath.Join(dir, "libcuda.so.1")
	for out, src := range map[string]string{cufile: "../../gds/testdata/fakecufile.c", cuda: "../../gds/testdata/fakecuda.c"} {
		if b, err := exec.Command("gcc", "-shared", "-fPIC", "-O1", "-o", out, src, "-lpthread").CombinedOutput(); err != nil {
			t.Fatalf("gcc %s (the fake CUDA libraries need gcc): %v\n%s", src, err, b)
		}
	}
	return cufile, cuda
}

// TestGDSProbeWithFakeLibraries: with the fake libraries, the verdict is
// "compatibility mode" (exit 3) without the nvidia-fs module and "ready"
// (exit 0) with it.
func TestGDSProbeWithFakeLibraries(t *testing.T) {
	cufile, cuda := buildFakeLibs(t)
	env := []string{"DELTAFS_CUFILE_LIB=" + cufile, "DELTAFS_CUDA_LIB=" + cuda}

	out, errOut, code := testkit.RunMain(t, env, "gds", "probe", "--sys-root", t.TempDir())
	if lastLine(out) != "verdict: compatibility mode" || code != exitGDSCompat {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"GPU 0: Fake GPU 0, 16.0 GiB, PCIe 0000:07:00.0", "CUDA driver: " + cuda + ", CUDA 12.4, 1 device(s)",
		"cuFile: " + cufile + " (version 1.13)", "cuFile driver: GDS, nvidia-fs 2.17, storage [NVMe]", "why: nvidia-fs kernel module not loaded"} {
		if !strings.Contains(squash(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "sys/module/nvidia_fs"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = testkit.RunMain(t, env, "gds", "probe", "--sys-root", root, "--json")
	var rep struct {
		Verdict string   `json:"verdict"`
		Reasons []string `json:"reasons"`
		GPUs    int      `json:"gpus"`
		CuFile  struct {
			File   string `json:"file"`
			Driver struct {
				GDSAvailable bool `json:"gds_available"`
			} `json:"driver"`
		} `json:"cufile"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s%s", err, out, errOut)
	}
	if rep.Verdict != "ready" || code != exitGDSReady || len(rep.Reasons) != 0 || rep.GPUs != 1 || rep.CuFile.File != cufile || !rep.CuFile.Driver.GDSAvailable {
		t.Fatalf("exit %d, %+v", code, rep)
	}
}

// benchFiles writes n sample files and a cache file holding the same
// samples at 4 KiB-aligned offsets, with its extent list.
func benchFiles(t *testing.T, n int) (dir, extentList string) {
	t.Helper()
	dir = t.TempDir()
	cacheDir := t.TempDir()
	var cache []byte
	var entries []extents.Entry
	for i := 0; i < n; i++ {
		b := bytes.Repeat([]byte{byte(i), byte(i >> 8), 0x5a}, 1000+i*37)
		name := filepath.Join(dir, fmt.Sprintf("s%04d.bin", i))
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
		off := (int64(len(cache)) + extents.Alignment - 1) / extents.Alignment * extents.Alignment
		cache = append(cache, make([]byte, off-int64(len(cache)))...)
		cache = append(cache, b...)
		entries = append(entries, extents.Entry{Sample: filepath.Base(name), Extent: extents.Extent{Path: "cache.blk", Offset: off, Length: int64(len(b)), Sum: extents.ChecksumOf(b)}})
	}
	if err := os.WriteFile(filepath.Join(cacheDir, "cache.blk"), cache, 0o644); err != nil {
		t.Fatal(err)
	}
	var m bytes.Buffer
	if err := extents.WriteList(&m, entries); err != nil {
		t.Fatal(err)
	}
	extentList = filepath.Join(cacheDir, extents.ListName)
	if err := os.WriteFile(extentList, m.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, extentList
}

func TestGDSBench(t *testing.T) {
	dir, extentList := benchFiles(t, 100)
	ctx := context.Background()
	base := gdsBenchOptions{Mode: "auto", Batch: 16, Parallelism: 3, Repeat: 2, Verify: true}

	// This machine's libraries: whatever path, the bytes must verify.
	var out bytes.Buffer
	o := base
	o.Dir = dir
	if err := runGDSBench(ctx, o, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"samples: 100,", "in 100 file(s); 100 at 4 KiB-aligned offsets", "reader: ", "GB/s", "samples/s",
		"deltafs gds reader (", "pread into host memory", "verified: every sample read matches its file"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--dir output lacks %q:\n%s", want, out.String())
		}
	}

	// The fake libraries: the GDS path, from the extent list's one cache file.
	cufile, cuda := buildFakeLibs(t)
	t.Setenv(gds.EnvCuFileLib, cufile)
	t.Setenv(gds.EnvCUDALib, cuda)
	out.Reset()
	o = base
	o.Manifest = extentList
	o.Mode = "gds"
	o.Cold = true
	if err := runGDSBench(ctx, o, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"in 1 file(s); 100 at 4 KiB-aligned offsets", "reader: gds path on GPU 0 (Fake GPU 0)",
		"deltafs gds reader (gds)", "verified", "page cache: dropped"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--manifest output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestGDSBenchCorruptEntry: a byte flipped in the extent list's cache file
// fails the bench, by the cuFile path (fake libraries) and by plain pread,
// with one line naming the extent and the checksums: it never measures
// (or verifies as right) bytes that are not the samples'.
func TestGDSBenchCorruptEntry(t *testing.T) {
	_, extentList := benchFiles(t, 40)
	entries, err := extents.ReadListFile(extentList)
	if err != nil {
		t.Fatal(err)
	}
	bad := entries[23]
	testkit.FlipByte(t, bad.Path, bad.Offset+bad.Length/2)
	cufile, cuda := buildFakeLibs(t)
	env := []string{gds.EnvCuFileLib + "=" + cufile, gds.EnvCUDALib + "=" + cuda}
	for _, mode := range []string{"gds", "host"} {
		out, errOut, code := testkit.RunMain(t, env, "gds", "bench", "--manifest", extentList, "--mode", mode, "--batch", "8", "--verify")
		line := strings.TrimRight(errOut, "\n")
		if code != 1 || strings.Contains(line, "\n") || !strings.Contains(line, "checksum mismatch") || !strings.Contains(line, bad.Sum.String()) || !strings.Contains(line, bad.Path) {
			t.Errorf("--mode %s: exit %d, stderr %q, stdout:\n%s", mode, code, errOut, out)
		}
		if strings.Contains(out, "verified: every sample") {
			t.Errorf("--mode %s: reported as verified:\n%s", mode, out)
		}
		t.Logf("--mode %s: %s", mode, line)
	}
}

func TestGDSBenchUsage(t *testing.T) {
	ctx := context.Background()
	for _, o := range []gdsBenchOptions{
		{Mode: "auto", Batch: 1, Parallelism: 1, Repeat: 1},
		{Manifest: "m", Dir: "d", Mode: "auto", Batch: 1, Parallelism: 1, Repeat: 1},
		{Dir: "d", Mode: "turbo", Batch: 1, Parallelism: 1, Repeat: 1},
		{Dir: "d", Mode: "auto", Batch: 0, Parallelism: 1, Repeat: 1},
	} {
		var u usageError
		if err := runGDSBench(ctx, o, &bytes.Buffer{}); !errors.As(err, &u) {
			t.Errorf("%+v: %v, want a usage error", o, err)
		}
	}
	if _, errOut, code := testkit.RunMain(t, nil, "gds", "bench"); code != 2 || !strings.Contains(errOut, "exactly one of --manifest") {
		t.Errorf("no source: exit %d, %q", code, errOut)
	}
	if err := runGDSBench(ctx, gdsBenchOptions{Dir: t.TempDir(), Mode: "host", Batch: 1, Parallelism: 1, Repeat: 1}, &bytes.Buffer{}); err == nil {
		t.Error("empty directory accepted")
	}
}
