package gds

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/deltafs/deltafs/extents"
	"github.com/deltafs/deltafs/internal/testkit"
)

func newReader(t testing.TB, o Options) *Reader {
	t.Helper()
	r, err := NewReader(o)
	if err != nil {
		t.Fatalf("NewReader: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func alloc(t testing.TB, r *Reader, n int64) DeviceBuffer {
	t.Helper()
	b, err := r.Alloc(n)
	if err != nil {
		t.Fatalf("Alloc(%d): %v", n, err)
	}
	return b
}

// TestGDSBatchBinding reads 300 samples from 3 cache files with the GDS
// path and checks the bytes and every cuFile call: each file registered
// once (O_DIRECT) and deregistered, each sample read with its file's handle
// at its file offset and size rounded up to 4 KiB, into the registered
// buffer at its packed offset.
func TestGDSBatchBinding(t *testing.T) {
	f := fakes(t)
	r := newReader(t, f.opts(ModeAuto))
	if r.Path() != PathGDS {
		t.Fatalf("path %v, want gds (reason: %v)", r.Path(), r.Info().Reason)
	}
	info := r.Info()
	if info.Driver == nil || info.Driver.NVFSVersion() != "2.17" || info.CuFileVersion != 1130 {
		t.Errorf("driver info %+v, version %d", info.Driver, info.CuFileVersion)
	}
	if info.CuFileLib != f.CuFile || info.CUDALib != f.CUDA {
		t.Errorf("library files %q %q, want %q %q", info.CuFileLib, info.CUDALib, f.CuFile, f.CUDA)
	}
	if info.Device.Name != "Fake GPU 0" || info.Devices != 1 || info.CUDAVersion != 12040 {
		t.Errorf("device info %+v", info)
	}

	l := newCacheLayout(t, 3, 300)
	offsets, size := r.BatchLayout(l.exts)
	buf := alloc(t, r, size)
	dm := buf.(*DeviceMem)
	if !dm.Registered() {
		t.Fatalf("buffer not registered: %v", dm.RegisterErr())
	}
	res, err := r.ReadBatch(context.Background(), l.exts, buf)
	if err != nil {
		t.Fatal(err)
	}
	if res.Path() != PathGDS || res.Count(PathGDS) != len(l.exts) {
		t.Errorf("batch path %v, %d of %d by GDS", res.Path(), res.Count(PathGDS), len(l.exts))
	}
	var total int64
	for i, e := range l.exts {
		total += e.Length
		if res.Offsets[i]%extents.Alignment != 0 || res.Offsets[i] != offsets[i] {
			t.Fatalf("offset %d = %d, layout says %d", i, res.Offsets[i], offsets[i])
		}
		if !res.Results[i].Direct {
			t.Errorf("sample %d: file not opened with O_DIRECT", i)
		}
	}
	if res.Bytes != total {
		t.Errorf("Bytes %d, want %d", res.Bytes, total)
	}
	l.check(t, r, buf, res.Offsets)

	bufReg := f.calls("buf_register")
	if len(bufReg) != 1 || bufReg[0].int("ptr") != int64(buf.DevicePtr()) || bufReg[0].int("len") != size || bufReg[0].int("flags") != 0 {
		t.Errorf("buf_register calls %v, want one for %#x len %d", bufReg, buf.DevicePtr(), size)
	}
	handles := map[string]string{} // path -> fh
	for _, c := range f.calls("register") {
		p := c.fields["path"]
		if _, dup := handles[p]; dup {
			t.Errorf("%s registered twice in one batch", p)
		}
		if c.fields["direct"] != "1" {
			t.Errorf("%s registered without O_DIRECT", p)
		}
		handles[p] = c.fields["fh"]
	}
	if len(handles) != len(l.files) {
		t.Errorf("%d files registered, want %d", len(handles), len(l.files))
	}
	dereg := map[string]bool{}
	for _, c := range f.calls("deregister") {
		dereg[c.fields["fh"]] = true
	}
	for p, fh := range handles {
		if !dereg[fh] {
			t.Errorf("handle %s of %s never deregistered", fh, p)
		}
	}
	type key struct {
		fh         string
		foff, boff int64
	}
	reads := map[key]call{}
	for _, c := range f.calls("read") {
		reads[key{c.fields["fh"], c.int("foff"), c.int("boff")}] = c
	}
	if len(reads) != len(l.exts) {
		t.Errorf("%d cuFileRead calls, want %d", len(reads), len(l.exts))
	}
	for i, e := range l.exts {
		c, ok := reads[key{handles[e.Path], e.Offset, res.Offsets[i]}]
		if !ok {
			t.Fatalf("sample %d (%s): no cuFileRead with its handle, file offset %d and buffer offset %d", i, e, e.Offset, res.Offsets[i])
		}
		// Aligned file offset and buffer offset: read whole 4 KiB blocks.
		if c.int("size") != roundUp(e.Length, extents.Alignment) || c.int("base") != int64(buf.DevicePtr()) || c.fields["path"] != e.Path {
			t.Errorf("sample %d: read %v, want size %d base %#x", i, c.fields, roundUp(e.Length, extents.Alignment), buf.DevicePtr())
		}
	}
	if n := f.cudaStat("nocontext"); n != 0 {
		t.Errorf("%d CUDA calls on a thread without the context", n)
	}
}

// TestGDSShortReads makes cuFileRead return at most 1000 bytes per call:
// the reader must keep calling with advancing file and buffer offsets.
func TestGDSShortReads(t *testing.T) {
	f := fakes(t)
	f.setMaxRead(1000)
	r := newReader(t, f.opts(ModeGDS))
	l := newCacheLayout(t, 2, 40)
	_, size := r.BatchLayout(l.exts)
	buf := alloc(t, r, size)
	res, err := r.ReadBatch(context.Background(), l.exts, buf)
	if err != nil {
		t.Fatal(err)
	}
	l.check(t, r, buf, res.Offsets)
	var n int
	for _, c := range f.calls("read") {
		if c.int("ret") > 1000 {
			t.Fatalf("read returned %d > cap", c.int("ret"))
		}
		n++
	}
	if n <= len(l.exts) {
		t.Errorf("%d reads for %d samples: short reads were not continued", n, len(l.exts))
	}
}

func TestReadExtentAt(t *testing.T) {
	f := fakes(t)
	r := newReader(t, f.opts(ModeGDS))
	p, data := writeCacheFile(t, t.TempDir(), "c", 5*extents.Alignment, 7)
	buf := alloc(t, r, 3*extents.Alignment)
	ext := extents.Extent{Path: p, Offset: 2 * extents.Alignment, Length: 5000}
	res, err := r.ReadExtentAt(context.Background(), ext, buf, 100)
	if err != nil {
		t.Fatal(err)
	}
	if res.Path != PathGDS || res.Bytes != 5000 || !res.Direct {
		t.Errorf("result %+v", res)
	}
	got := make([]byte, 5000)
	if err := r.CopyToHost(got, buf, 100); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data[2*extents.Alignment:2*extents.Alignment+5000]) {
		t.Fatal("bytes differ")
	}
	reads := f.calls("read")
	if len(reads) != 1 || reads[0].int("boff") != 100 || reads[0].int("foff") != 2*extents.Alignment || reads[0].int("size") != 5000 {
		t.Errorf("reads %v", reads)
	}
	// Does not fit.
	if _, err := r.ReadExtentAt(context.Background(), ext, buf, 3*extents.Alignment-10); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Errorf("overflowing read: %v", err)
	}
	// Zero-length extents read nothing and open nothing.
	if res, err := r.ReadExtent(context.Background(), extents.Extent{Path: "/nonexistent", Length: 0}, buf); err != nil || res.Bytes != 0 {
		t.Errorf("empty extent: %+v %v", res, err)
	}
}

func TestNoDirectOption(t *testing.T) {
	f := fakes(t)
	o := f.opts(ModeGDS)
	o.NoDirect = true
	r := newReader(t, o)
	p, _ := writeCacheFile(t, t.TempDir(), "c", extents.Alignment, 1)
	buf := alloc(t, r, extents.Alignment)
	res, err := r.ReadExtent(context.Background(), extents.Extent{Path: p, Length: extents.Alignment}, buf)
	if err != nil || res.Direct {
		t.Fatalf("%+v %v", res, err)
	}
	if c := f.calls("register"); len(c) != 1 || c[0].fields["direct"] != "0" {
		t.Errorf("register calls %v", c)
	}
}

// TestODirectRefused: procfs refuses O_DIRECT (EINVAL), so the file is
// registered without it, the result says so, and the bytes are right.
func TestODirectRefused(t *testing.T) {
	f := fakes(t)
	r := newReader(t, f.opts(ModeGDS))
	want, err := os.ReadFile("/proc/version")
	if err != nil {
		t.Fatal(err)
	}
	ext := extents.Extent{Path: "/proc/version", Length: int64(len(want))}
	buf := alloc(t, r, ext.Length)
	res, err := r.ReadExtent(context.Background(), ext, buf)
	if err != nil || res.Direct || res.Path != PathGDS {
		t.Fatalf("%+v %v", res, err)
	}
	got := make([]byte, ext.Length)
	if err := r.CopyToHost(got, buf, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("bytes differ (%v)", err)
	}
	if c := f.calls("register"); len(c) != 1 || c[0].fields["direct"] != "0" {
		t.Errorf("register calls %v", c)
	}
}

// TestCuFileErrorCodes makes each cuFile entry point fail with every
// status cufile.h defines and checks the Go error: type, op, code, name
// and message.
func TestCuFileErrorCodes(t *testing.T) {
	fakes(t)
	p, data := writeCacheFile(t, t.TempDir(), "c", 2*extents.Alignment, 3)
	ext := extents.Extent{Path: p, Offset: extents.Alignment, Length: 3000}
	ctx := context.Background()

	checkErr := func(t *testing.T, err error, op string, code Status, cuErr int32) {
		t.Helper()
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%v (%T): not a *gds.Error", err, err)
		}
		if e.Op != op || e.Code != code || e.Name != code.Name() || e.CUResult != cuErr {
			t.Fatalf("got %+v, want op %s code %d name %s cu %d", e, op, code, code.Name(), cuErr)
		}
		prefix := fmt.Sprintf("%s: %s (%d): %s", op, code.Name(), int32(code), code.Description())
		if !strings.HasPrefix(e.Error(), prefix) {
			t.Fatalf("message %q, want prefix %q", e.Error(), prefix)
		}
		if !errors.Is(err, &Error{Code: code}) || !errors.Is(err, &Error{Op: op, Code: code}) || errors.Is(err, &Error{Op: "other", Code: code}) {
			t.Fatalf("errors.Is on %v", err)
		}
	}

	for _, code := range Statuses()[1:] {
		cuErr := int32(0)
		if code == StatusCUDADriverError {
			cuErr = 2 // CUDA_ERROR_OUT_OF_MEMORY
		}
		t.Run(code.Name(), func(t *testing.T) {
			// cuFileDriverOpen: ModeGDS fails, ModeAuto falls back to compat.
			f := fakes(t)
			f.fail("cuFileDriverOpen", int32(code), cuErr)
			_, err := NewReader(f.opts(ModeGDS))
			if !errors.Is(err, ErrNotGDS) {
				t.Fatalf("ModeGDS with a failing driver: %v", err)
			}
			checkErr(t, err, "cuFileDriverOpen", code, cuErr)
			if cuErr != 0 && !strings.Contains(err.Error(), "CUDA CUDA_ERROR_OUT_OF_MEMORY (2)") {
				t.Errorf("message %q lacks the CUDA error", err)
			}
			r := newReader(t, f.opts(ModeAuto))
			if r.Path() != PathCompat {
				t.Fatalf("path %v, want compat", r.Path())
			}
			checkErr(t, r.Info().Reason, "cuFileDriverOpen", code, cuErr)
			r.Close()

			// cuFileBufRegister: the buffer stays usable, unregistered.
			f = fakes(t)
			f.fail("cuFileBufRegister", int32(code), cuErr)
			r = newReader(t, f.opts(ModeGDS))
			buf := alloc(t, r, extents.Alignment)
			if buf.(*DeviceMem).Registered() {
				t.Fatal("registered despite the failure")
			}
			checkErr(t, buf.(*DeviceMem).RegisterErr(), "cuFileBufRegister", code, cuErr)
			if _, err := r.ReadExtent(ctx, ext, buf); err != nil {
				t.Fatalf("read into an unregistered buffer: %v", err)
			}

			// cuFileRead returns -code.
			f.fail("cuFileRead", -int32(code), 0)
			_, err = r.ReadExtent(ctx, ext, buf)
			checkErr(t, err, "cuFileRead", code, 0)
			r.Close()

			// cuFileHandleRegister: an error, or for "GDS cannot serve
			// this file" codes in ModeAuto, the compat path for the file.
			f = fakes(t)
			f.fail("cuFileHandleRegister", int32(code), cuErr)
			rg := newReader(t, f.opts(ModeGDS))
			_, err = rg.ReadExtent(ctx, ext, alloc(t, rg, extents.Alignment))
			checkErr(t, err, "cuFileHandleRegister", code, cuErr)
			if !strings.Contains(err.Error(), p) {
				t.Errorf("message %q does not name the file", err)
			}
			ra := newReader(t, f.opts(ModeAuto))
			buf = alloc(t, ra, extents.Alignment)
			res, err := ra.ReadExtent(ctx, ext, buf)
			if code.fileUnsupported() {
				if err != nil || res.Path != PathCompat || res.Direct {
					t.Fatalf("file fallback: %+v %v", res, err)
				}
				got := make([]byte, ext.Length)
				if err := ra.CopyToHost(got, buf, 0); err != nil || !bytes.Equal(got, data[ext.Offset:ext.End()]) {
					t.Fatalf("file fallback bytes differ (%v)", err)
				}
			} else {
				checkErr(t, err, "cuFileHandleRegister", code, cuErr)
			}
		})
	}
}

func TestCuFileReadErrno(t *testing.T) {
	f := fakes(t)
	r := newReader(t, f.opts(ModeGDS))
	p, _ := writeCacheFile(t, t.TempDir(), "c", extents.Alignment, 3)
	f.fail("cuFileRead", -1, int32(syscall.EIO))
	_, err := r.ReadExtent(context.Background(), extents.Extent{Path: p, Length: 10}, alloc(t, r, extents.Alignment))
	if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), p) {
		t.Fatalf("got %v, want EIO naming %s", err, p)
	}
}

func TestStatusTable(t *testing.T) {
	all := Statuses()
	if len(all) != 49 || all[0] != StatusSuccess || all[len(all)-1] != StatusIOMaxError {
		t.Fatalf("%d statuses, first %v last %v", len(all), all[0], all[len(all)-1])
	}
	names := map[string]bool{}
	for _, s := range all {
		if s == 5021 || s == 5032 {
			t.Errorf("%d is unassigned in cufile.h", s)
		}
		n := s.Name()
		if !strings.HasPrefix(n, "CU_FILE_") || names[n] {
			t.Errorf("bad or duplicate name %q", n)
		}
		names[n] = true
	}
	for code, name := range map[Status]string{
		5001: "CU_FILE_DRIVER_NOT_INITIALIZED", 5011: "CU_FILE_CUDA_DRIVER_ERROR",
		5020: "CU_FILE_DIO_NOT_SET", 5022: "CU_FILE_INVALID_VALUE", 5030: "CU_FILE_INTERNAL_ERROR",
		5033: "CU_FILE_NVFS_SETUP_ERROR", 5049: "CU_FILE_BATCH_NOCOMPAT_ERROR", 5050: "CU_FILE_IO_MAX_ERROR",
	} {
		if code.Name() != name {
			t.Errorf("%d: %s, want %s", code, code.Name(), name)
		}
	}
	if s := Status(5099); s.Name() != "CU_FILE_UNKNOWN_ERROR" || s.String() != "CU_FILE_UNKNOWN_ERROR (5099)" {
		t.Errorf("unknown status: %s", s)
	}
	e := newError("cuFileHandleRegister", StatusInternalError, 0, "")
	if e.Error() != "cuFileHandleRegister: CU_FILE_INTERNAL_ERROR (5030): internal error" {
		t.Errorf("message %q", e.Error())
	}
}

// TestFallbackPaths checks which path NewReader picks for each missing
// piece, and that every path delivers the right bytes.
func TestFallbackPaths(t *testing.T) {
	missing := "/nonexistent/libmissing.so.0"
	cases := []struct {
		name   string
		setup  func(f *fakeLibs, o *Options)
		path   Path
		reason string
	}{
		{"all present", func(f *fakeLibs, o *Options) {}, PathGDS, ""},
		{"no libcufile", func(f *fakeLibs, o *Options) { o.CuFileLib = missing }, PathCompat, "libmissing.so.0"},
		{"cuFile compat mode", func(f *fakeLibs, o *Options) { f.setCompat(1) }, PathCompat, "compatibility mode"},
		{"cuFile driver not initialized", func(f *fakeLibs, o *Options) { f.fail("cuFileDriverOpen", 5001, 0) }, PathCompat, "CU_FILE_DRIVER_NOT_INITIALIZED (5001)"},
		{"missing cuFile symbol", func(f *fakeLibs, o *Options) { o.CuFileLib = f.CuFileNoRead }, PathCompat, "missing symbol cuFileRead"},
		{"no libcuda", func(f *fakeLibs, o *Options) { o.CUDALib = missing }, PathHost, "libmissing.so.0"},
		{"no libs", func(f *fakeLibs, o *Options) { o.CUDALib, o.CuFileLib = missing, missing }, PathHost, "libmissing.so.0"},
		{"zero devices", func(f *fakeLibs, o *Options) { f.cudaSet(0, 0) }, PathHost, "no CUDA device"},
		{"cuInit fails", func(f *fakeLibs, o *Options) { f.cudaSet(1, 100) }, PathHost, "cuInit: CUDA_ERROR_NO_DEVICE (100)"},
		{"compat requested", func(f *fakeLibs, o *Options) { o.Mode = ModeCompat }, PathCompat, "compatibility path requested"},
		{"host requested", func(f *fakeLibs, o *Options) { o.Mode = ModeHost }, PathHost, "host path requested"},
	}
	l := newCacheLayout(t, 2, 50)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := fakes(t)
			o := f.opts(ModeAuto)
			c.setup(f, &o)
			r := newReader(t, o)
			if r.Path() != c.path {
				t.Fatalf("path %v, want %v (reason %v)", r.Path(), c.path, r.Info().Reason)
			}
			if c.reason == "" {
				if r.Info().Reason != nil {
					t.Errorf("reason %v, want none", r.Info().Reason)
				}
			} else if r.Info().Reason == nil || !strings.Contains(r.Info().Reason.Error(), c.reason) {
				t.Errorf("reason %v, want it to mention %q", r.Info().Reason, c.reason)
			}
			_, size := r.BatchLayout(l.exts)
			buf := alloc(t, r, size)
			if _, host := buf.(HostBuffer); host != (c.path == PathHost) {
				t.Errorf("Alloc gave %T on the %v path", buf, c.path)
			}
			res, err := r.ReadBatch(context.Background(), l.exts, buf)
			if err != nil {
				t.Fatal(err)
			}
			if res.Path() != c.path || res.Count(c.path) != len(l.exts) {
				t.Errorf("batch path %v, want %v for all", res.Path(), c.path)
			}
			l.check(t, r, buf, res.Offsets)
			if c.path != PathGDS && len(f.calls("read")) != 0 {
				t.Errorf("cuFileRead called on the %v path", c.path)
			}
			if c.path == PathCompat && f.cudaStat("htod") == 0 {
				t.Error("compat path without cuMemcpyHtoD")
			}
			if r.Path() != PathGDS && f.driverIsOpen() != 0 {
				t.Error("cuFile driver left open on a fallback path")
			}
		})
	}
}

func TestStrictModes(t *testing.T) {
	f := fakes(t)
	o := f.opts(ModeGDS)
	o.CuFileLib = f.CuFileNoRead
	_, err := NewReader(o)
	var se *SymbolError
	if !errors.Is(err, ErrNotGDS) || !errors.As(err, &se) || se.Symbol != "cuFileRead" || se.File != f.CuFileNoRead {
		t.Fatalf("missing symbol in ModeGDS: %v", err)
	}
	if !strings.Contains(err.Error(), "gds: GPUDirect Storage not usable: "+f.CuFileNoRead+": missing symbol cuFileRead") {
		t.Errorf("message %q", err)
	}

	f.setCompat(1)
	if _, err := NewReader(f.opts(ModeGDS)); !errors.Is(err, ErrCuFileCompat) {
		t.Errorf("compat cuFile in ModeGDS: %v", err)
	}
	f = fakes(t)
	o = f.opts(ModeCompat)
	o.CUDALib = "/nonexistent/libcuda.so.1"
	_, err = NewReader(o)
	var le *LibraryError
	if !errors.Is(err, ErrNoGPU) || !errors.As(err, &le) {
		t.Errorf("ModeCompat without libcuda: %v", err)
	}
	o = f.opts(ModeAuto)
	o.Device = 1
	if _, err := NewReader(o); err == nil || !strings.Contains(err.Error(), "device 1 does not exist") {
		t.Errorf("device out of range: %v", err)
	}
}

func TestEnvOverride(t *testing.T) {
	f := fakes(t)
	t.Setenv(EnvCuFileLib, f.CuFile)
	t.Setenv(EnvCUDALib, f.CUDA)
	r := newReader(t, Options{})
	if r.Path() != PathGDS {
		t.Fatalf("path %v (%v)", r.Path(), r.Info().Reason)
	}
}

// TestHostDestination: a host buffer given to a GDS reader is filled by
// pread, with no cuFile call.
func TestHostDestination(t *testing.T) {
	f := fakes(t)
	r := newReader(t, f.opts(ModeAuto))
	l := newCacheLayout(t, 1, 20)
	_, size := r.BatchLayout(l.exts)
	buf := make(HostBuffer, size)
	res, err := r.ReadBatch(context.Background(), l.exts, buf)
	if err != nil {
		t.Fatal(err)
	}
	if res.Path() != PathHost || len(f.calls("register")) != 0 {
		t.Errorf("path %v, %d registrations", res.Path(), len(f.calls("register")))
	}
	l.check(t, r, buf, res.Offsets)

	h := newReader(t, Options{Mode: ModeHost})
	if _, err := h.ReadBatch(context.Background(), l.exts, DevicePointer(1<<20, size)); err == nil {
		t.Error("device buffer on a host-path reader accepted")
	}
}

func TestPackedBatch(t *testing.T) {
	f := fakes(t)
	o := f.opts(ModeGDS)
	o.BatchAlign = 1
	o.Parallelism = 1
	r := newReader(t, o)
	l := newCacheLayout(t, 2, 30)
	offsets, size := r.BatchLayout(l.exts)
	var sum int64
	for i, e := range l.exts {
		if offsets[i] != sum {
			t.Fatalf("offset %d = %d, want %d", i, offsets[i], sum)
		}
		sum += e.Length
	}
	if size != sum {
		t.Fatalf("size %d, want %d", size, sum)
	}
	buf := alloc(t, r, size)
	res, err := r.ReadBatch(context.Background(), l.exts, buf)
	if err != nil {
		t.Fatal(err)
	}
	l.check(t, r, buf, res.Offsets)
	reads := map[int64]int64{} // boff -> size
	for _, c := range f.calls("read") {
		reads[c.int("boff")] = c.int("size")
	}
	for i, e := range l.exts { // packed: exact sizes
		if reads[offsets[i]] != e.Length {
			t.Errorf("sample %d: read %d bytes, want %d", i, reads[offsets[i]], e.Length)
		}
	}
	if _, err := r.ReadBatch(context.Background(), l.exts, DevicePointer(buf.DevicePtr(), size-1)); err == nil {
		t.Error("too small a destination accepted")
	}
}

func TestShortFile(t *testing.T) {
	f := fakes(t)
	p, _ := writeCacheFile(t, t.TempDir(), "c", 3000, 1)
	ext := extents.Extent{Path: p, Offset: 0, Length: 5000}
	for _, mode := range []Mode{ModeGDS, ModeCompat, ModeHost} {
		r := newReader(t, f.opts(mode))
		_, err := r.ReadExtent(context.Background(), ext, alloc(t, r, 5000))
		if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "3000 bytes into") {
			t.Errorf("%v: %v", mode, err)
		}
	}
	r := newReader(t, f.opts(ModeGDS))
	_, err := r.ReadExtent(context.Background(), extents.Extent{Path: p + ".missing", Length: 1}, alloc(t, r, 1))
	if !errors.Is(err, syscall.ENOENT) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	// In a batch: the evicted file is named with the extent's index.
	exts := []extents.Extent{{Path: p, Length: 10}, {Path: p + ".evicted", Offset: extents.Alignment, Length: 10}}
	_, size := r.BatchLayout(exts)
	_, err = r.ReadBatch(context.Background(), exts, alloc(t, r, size))
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "extent 1 ("+p+".evicted@4096+10): ") {
		t.Errorf("evicted file in a batch: %v", err)
	}
}

func TestCancel(t *testing.T) {
	f := fakes(t)
	r := newReader(t, f.opts(ModeGDS))
	l := newCacheLayout(t, 1, 10)
	_, size := r.BatchLayout(l.exts)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.ReadBatch(ctx, l.exts, alloc(t, r, size)); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

func TestCloseReleasesEverything(t *testing.T) {
	f := fakes(t)
	r, err := NewReader(f.opts(ModeGDS))
	if err != nil {
		t.Fatal(err)
	}
	a := alloc(t, r, 100)
	alloc(t, r, 200)
	if err := r.Free(a); err != nil {
		t.Fatal(err)
	}
	if err := r.Free(a); err == nil {
		t.Error("double Free accepted")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if f.cudaStat("alloc") != 2 || f.cudaStat("free") != 2 {
		t.Errorf("alloc %d free %d", f.cudaStat("alloc"), f.cudaStat("free"))
	}
	if f.cudaStat("retain") != 1 || f.cudaStat("release") != 1 {
		t.Errorf("retain %d release %d", f.cudaStat("retain"), f.cudaStat("release"))
	}
	if len(f.calls("buf_register")) != 2 || len(f.calls("buf_deregister")) != 2 {
		t.Errorf("buffer (de)registrations: %v", f.log())
	}
	if f.driverIsOpen() != 0 {
		t.Error("driver still open")
	}
	if _, err := r.Alloc(1); !errors.Is(err, ErrClosed) {
		t.Errorf("Alloc after Close: %v", err)
	}
	if _, err := r.ReadExtent(context.Background(), extents.Extent{Path: "x", Length: 1}, make(HostBuffer, 1)); !errors.Is(err, ErrClosed) {
		t.Errorf("ReadExtent after Close: %v", err)
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range []Mode{ModeAuto, ModeGDS, ModeCompat, ModeHost} {
		got, err := ParseMode(strings.ToUpper(m.String()))
		if err != nil || got != m {
			t.Errorf("%v: %v %v", m, got, err)
		}
	}
	if _, err := ParseMode("fast"); err == nil {
		t.Error("bad mode accepted")
	}
}

// TestChecksumEveryPath: a byte flipped in a cache file after the extents
// were taken is caught on every path, where the bytes landed: ReadBatch and
// ReadExtent return a *ChecksumError naming the extent; on the GDS path the
// check copies the sample back from the device.
func TestChecksumEveryPath(t *testing.T) {
	for _, mode := range []Mode{ModeGDS, ModeCompat, ModeHost} {
		t.Run(mode.String(), func(t *testing.T) {
			f := fakes(t)
			r := newReader(t, f.opts(mode))
			l := newCacheLayout(t, 2, 30)
			_, size := r.BatchLayout(l.exts)
			buf := alloc(t, r, size)
			res, err := r.ReadBatch(context.Background(), l.exts, buf)
			if err != nil {
				t.Fatal(err)
			}
			l.check(t, r, buf, res.Offsets)
			if mode == ModeGDS && f.cudaStat("dtoh") < int64(len(l.exts)) {
				t.Fatalf("%d device-to-host copies for %d samples: the GDS path did not check what cuFile read", f.cudaStat("dtoh"), len(l.exts))
			}
			bad := l.exts[17]
			testkit.FlipByte(t, bad.Path, bad.Offset+bad.Length-1)
			_, err = r.ReadBatch(context.Background(), l.exts, buf)
			var ce *extents.ChecksumError
			if !errors.Is(err, extents.ErrChecksum) || !errors.As(err, &ce) || ce.Extent != bad || !strings.HasPrefix(err.Error(), "extent 17 (") {
				t.Fatalf("batch with a flipped byte: %v", err)
			}
			if _, err := r.ReadExtent(context.Background(), bad, buf); !errors.Is(err, extents.ErrChecksum) || !strings.Contains(err.Error(), bad.Sum.String()) {
				t.Fatalf("ReadExtent of the flipped sample: %v", err)
			}
			// Without a checksum nothing is verified: the caller's choice.
			raw := bad
			raw.Sum = extents.Checksum{}
			if _, err := r.ReadExtent(context.Background(), raw, buf); err != nil {
				t.Fatalf("extent without a checksum: %v", err)
			}
			// An empty extent with a checksum that is not the empty one's.
			if _, err := r.ReadExtent(context.Background(), extents.Extent{Path: "/nonexistent", Sum: extents.NewChecksum(1)}, buf); !errors.Is(err, extents.ErrChecksum) {
				t.Fatalf("empty extent, wrong checksum: %v", err)
			}
		})
	}
}

// staticShard writes a shard directory by hand: the layout's cache files,
// an extent list naming them, and sample files holding the true bytes, as the
// mount would. Its extent list does not change when read again, so a
// re-read cannot cure anything: what misses twice comes from the sample
// files.
func staticShard(t *testing.T, l *cacheLayout) (dir string, names []string) {
	t.Helper()
	dir = filepath.Dir(l.exts[0].Path)
	var entries []extents.Entry
	for i, e := range l.exts {
		name := fmt.Sprintf("%03d.bin", i)
		entries = append(entries, extents.Entry{Sample: name, Extent: e})
		names = append(names, name)
		if err := os.WriteFile(filepath.Join(dir, name), l.want[i], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var m bytes.Buffer
	if err := extents.WriteList(&m, entries); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, extents.ListName), m.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, names
}

// TestReadSamplesNeverWrong: a corrupt entry that reading the extent list
// again does not cure is read from its sample file, and counted; a sample
// file that fails the checksum too is an error, never the bytes.
func TestReadSamplesNeverWrong(t *testing.T) {
	f := fakes(t)
	r := newReader(t, f.opts(ModeGDS))
	l := newCacheLayout(t, 2, 20)
	dir, names := staticShard(t, l)
	s, err := extents.OpenShard(dir)
	if err != nil {
		t.Fatal(err)
	}
	bad := l.exts[5]
	testkit.FlipByte(t, bad.Path, bad.Offset)
	_, size := r.BatchLayout(l.exts)
	buf := alloc(t, r, size)
	res, err := r.ReadSamples(context.Background(), s, nil, buf)
	if err != nil {
		t.Fatal(err)
	}
	l.check(t, r, buf, res.Offsets)
	if res.Corrupt != 1 || res.FromMount != 1 || !res.Results[5].Corrupt || res.Results[5].Path != PathCompat {
		t.Fatalf("%d corrupt, %d from the mount, result 5 %+v", res.Corrupt, res.FromMount, res.Results[5])
	}
	one, err := r.ReadSampleExtent(context.Background(), filepath.Join(dir, names[5]), bad, buf)
	got := make([]byte, bad.Length)
	if err == nil {
		err = r.CopyToHost(got, buf, 0)
	}
	if err != nil || !one.Corrupt || one.Path != PathCompat || !bytes.Equal(got, l.want[5]) {
		t.Fatalf("ReadSampleExtent: %+v %v, bytes equal %v", one, err, bytes.Equal(got, l.want[5]))
	}

	// The sample file is wrong too: no true bytes anywhere.
	if err := os.WriteFile(filepath.Join(dir, names[5]), make([]byte, bad.Length), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadSamples(context.Background(), s, nil, buf); !errors.Is(err, extents.ErrChecksum) || !strings.Contains(err.Error(), "sample "+names[5]+": ") || !strings.Contains(err.Error(), "through the mount") {
		t.Fatalf("ReadSamples with no true bytes: %v", err)
	}
	if _, err := r.ReadSampleExtent(context.Background(), filepath.Join(dir, names[5]), bad, buf); !errors.Is(err, extents.ErrChecksum) {
		t.Fatalf("ReadSampleExtent with no true bytes: %v", err)
	}

	// An extent list line without a checksum: read from the sample file, not
	// the cache, and not counted corrupt.
	nosum := l.exts[7]
	if err := os.WriteFile(filepath.Join(dir, names[5]), l.want[5], 0o644); err != nil {
		t.Fatal(err)
	}
	ents := s.Entries()
	ents[7].Sum = extents.Checksum{}
	var m bytes.Buffer
	if err := extents.WriteList(&m, ents); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, extents.ListName), m.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	res, err = r.ReadSamples(context.Background(), s, []string{names[7]}, buf)
	got = make([]byte, nosum.Length)
	if err == nil {
		err = r.CopyToHost(got, buf, 0)
	}
	if err != nil || res.FromMount != 1 || res.Corrupt != 0 || !bytes.Equal(got, l.want[7]) {
		t.Fatalf("no checksum: %+v %v", res, err)
	}
}
