package gds

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/deltafs/deltafs/extents"
	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/ebitengine/purego"
)

// The fake libraries (testdata/fakecufile.c, testdata/fakecuda.c) are built
// with gcc once per test binary and loaded once per process, as the real
// ones would be; each test resets their state through the fake_* control
// functions. Tests that use them do not run in parallel.

var fakeBuild struct {
	once sync.Once
	dir  string
	libs *fakeLibs
	err  error
}

func TestMain(m *testing.M) {
	code := mounttest.Tests(m).Run() // and removes the deltafs binary it built
	if fakeBuild.dir != "" {
		os.RemoveAll(fakeBuild.dir)
	}
	os.Exit(code)
}

type fakeLibs struct {
	CuFile       string // fake libcufile.so.0
	CuFileNoRead string // the same without cuFileRead
	CUDA         string // fake libcuda.so.1

	cufileReset  func()
	setCompat    func(on int32)
	setMaxRead   func(n uintptr)
	fail         func(op string, err int32, cuErr int32)
	logFn        func(dst *byte, n uintptr) uintptr
	driverIsOpen func() int32
	cudaSet      func(devices int32, initErr int32)
	cudaReset    func()
	cudaStat     func(what string) int64
}

// fakes returns the fake libraries, reset to their defaults: one device,
// GDS available (nvidia-fs 2.17), nothing failing, an empty log.
func fakes(t testing.TB) *fakeLibs {
	t.Helper()
	fakeBuild.once.Do(func() { fakeBuild.libs, fakeBuild.err = buildFakes() })
	if fakeBuild.err != nil {
		t.Fatalf("building the fake CUDA libraries (needs gcc): %v", fakeBuild.err)
	}
	f := fakeBuild.libs
	f.cufileReset()
	f.cudaReset()
	return f
}

func buildFakes() (*fakeLibs, error) {
	dir, err := os.MkdirTemp("", "gds-fakes-")
	if err != nil {
		return nil, err
	}
	fakeBuild.dir = dir
	f := &fakeLibs{
		CuFile:       filepath.Join(dir, "gds", "libcufile.so.0"),
		CuFileNoRead: filepath.Join(dir, "noread", "libcufile.so.0"),
		CUDA:         filepath.Join(dir, "gds", "libcuda.so.1"),
	}
	for _, b := range []struct {
		out, src string
		flags    []string
	}{
		{f.CuFile, "testdata/fakecufile.c", nil},
		{f.CuFileNoRead, "testdata/fakecufile.c", []string{"-DOMIT_READ"}},
		{f.CUDA, "testdata/fakecuda.c", nil},
	} {
		if err := os.MkdirAll(filepath.Dir(b.out), 0o755); err != nil {
			return nil, err
		}
		args := append([]string{"-shared", "-fPIC", "-O1", "-Wall", "-o", b.out, b.src, "-lpthread"}, b.flags...)
		if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
			return nil, &exec.ExitError{Stderr: out}
		}
	}
	hc, err := purego.Dlopen(f.CuFile, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, err
	}
	hd, err := purego.Dlopen(f.CUDA, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, err
	}
	purego.RegisterLibFunc(&f.cufileReset, hc, "fake_cufile_reset")
	purego.RegisterLibFunc(&f.setCompat, hc, "fake_cufile_set_compat")
	purego.RegisterLibFunc(&f.setMaxRead, hc, "fake_cufile_set_maxread")
	purego.RegisterLibFunc(&f.fail, hc, "fake_cufile_fail")
	purego.RegisterLibFunc(&f.logFn, hc, "fake_cufile_log")
	purego.RegisterLibFunc(&f.driverIsOpen, hc, "fake_cufile_driver_is_open")
	purego.RegisterLibFunc(&f.cudaSet, hd, "fake_cuda_set")
	purego.RegisterLibFunc(&f.cudaReset, hd, "fake_cuda_reset")
	purego.RegisterLibFunc(&f.cudaStat, hd, "fake_cuda_stat")
	return f, nil
}

// opts returns reader options pointing at the fakes.
func (f *fakeLibs) opts(mode Mode) Options {
	return Options{Mode: mode, CuFileLib: f.CuFile, CUDALib: f.CUDA}
}

// log returns the fake cuFile's call log, one call per line.
func (f *fakeLibs) log() []string {
	n := f.logFn(nil, 0)
	if n == 0 {
		return nil
	}
	buf := make([]byte, n)
	f.logFn(&buf[0], n)
	return strings.Split(strings.TrimSuffix(string(buf), "\n"), "\n")
}

// call is one parsed log line: "read fh=0x.. path=/x size=4096 ...".
type call struct {
	op     string
	fields map[string]string
}

func (c call) int(k string) int64 {
	v, err := strconv.ParseInt(c.fields[k], 0, 64)
	if err != nil {
		panic("log field " + k + "=" + c.fields[k] + ": " + err.Error())
	}
	return v
}

func (f *fakeLibs) calls(op string) []call {
	var out []call
	for _, line := range f.log() {
		name, rest, _ := strings.Cut(line, " ")
		if name != op {
			continue
		}
		c := call{op: name, fields: map[string]string{}}
		for _, kv := range strings.Fields(rest) {
			k, v, _ := strings.Cut(kv, "=")
			c.fields[k] = v
		}
		out = append(out, c)
	}
	return out
}

// writeCacheFile writes a cache-like file of n random bytes and returns its
// path and contents.
func writeCacheFile(t testing.TB, dir, name string, n int, seed uint64) (string, []byte) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, b
}

// cacheLayout is a set of cache files holding samples at 4 KiB-aligned
// offsets, as deltafs's disk cache lays them out, with the expected bytes.
type cacheLayout struct {
	exts  []extents.Extent
	want  [][]byte
	files map[string][]byte
}

// newCacheLayout writes nfiles cache files holding nsamples samples of
// assorted lengths (1 byte to ~70 KiB, some exact multiples of 4 KiB) at
// 4 KiB-aligned offsets, interleaved across the files, each extent with
// its checksum.
func newCacheLayout(t testing.TB, nfiles, nsamples int) *cacheLayout {
	t.Helper()
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(uint64(nfiles), uint64(nsamples)))
	lens := make([]int64, nsamples)
	offs := make([]int64, nsamples)
	fileOf := make([]int, nsamples)
	sizes := make([]int64, nfiles)
	for i := range lens {
		switch i % 5 {
		case 0:
			lens[i] = 1 + r.Int64N(100)
		case 1:
			lens[i] = extents.Alignment * (1 + r.Int64N(4))
		default:
			lens[i] = 1 + r.Int64N(70000)
		}
		fileOf[i] = r.IntN(nfiles)
		offs[i] = roundUp(sizes[fileOf[i]], extents.Alignment)
		sizes[fileOf[i]] = offs[i] + lens[i]
	}
	l := &cacheLayout{files: map[string][]byte{}}
	paths := make([]string, nfiles)
	for j := range paths {
		p, b := writeCacheFile(t, dir, "cache-"+strconv.Itoa(j)+".blk", int(roundUp(sizes[j], extents.Alignment)), uint64(j+1))
		paths[j] = p
		l.files[p] = b
	}
	for i := range lens {
		p := paths[fileOf[i]]
		e := extents.Extent{Path: p, Offset: offs[i], Length: lens[i]}
		want := l.files[p][e.Offset:e.End()]
		e.Sum = extents.ChecksumOf(want)
		l.exts = append(l.exts, e)
		l.want = append(l.want, want)
	}
	return l
}

// check copies the batch back from dst and compares every sample.
func (l *cacheLayout) check(t testing.TB, r *Reader, dst DeviceBuffer, offsets []int64) {
	t.Helper()
	for i, e := range l.exts {
		got := make([]byte, e.Length)
		if err := r.CopyToHost(got, dst, offsets[i]); err != nil {
			t.Fatalf("CopyToHost sample %d: %v", i, err)
		}
		if !bytes.Equal(got, l.want[i]) {
			t.Fatalf("sample %d (%s): bytes differ from the file", i, e)
		}
	}
}
