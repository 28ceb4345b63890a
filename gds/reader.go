package gds

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/deltafs/deltafs/extents"
)

// Path is how a reader moves bytes from a cache file into its destination.
type Path int

const (
	// PathHost: pread into host memory. No GPU (or a host destination).
	PathHost Path = iota
	// PathCompat: pread into a host staging buffer, then cuMemcpyHtoD. A
	// GPU without usable GPUDirect Storage.
	PathCompat
	// PathGDS: cuFileRead, DMA from NVMe straight into GPU memory.
	PathGDS
)

func (p Path) String() string {
	switch p {
	case PathHost:
		return "host"
	case PathCompat:
		return "compat"
	case PathGDS:
		return "gds"
	}
	return fmt.Sprintf("Path(%d)", int(p))
}

// Mode says which paths NewReader may choose.
type Mode int

const (
	// ModeAuto takes the fastest path the machine supports: GDS, else
	// compat, else host. Why it fell back is in Info().Reason.
	ModeAuto Mode = iota
	// ModeGDS requires GPUDirect Storage: NewReader fails with ErrNotGDS
	// otherwise, and files GDS cannot serve are errors, not fallbacks.
	ModeGDS
	// ModeCompat uses the GPU but never cuFile.
	ModeCompat
	// ModeHost reads into host memory only; it loads no library.
	ModeHost
)

var modeNames = []string{ModeAuto: "auto", ModeGDS: "gds", ModeCompat: "compat", ModeHost: "host"}

func (m Mode) String() string {
	if int(m) >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode parses "auto", "gds", "compat" or "host".
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if strings.EqualFold(s, n) {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("unknown mode %q (want auto, gds, compat or host)", s)
}

// Options configures a Reader. The zero value is ModeAuto on device 0 with
// the default libraries.
type Options struct {
	Mode Mode
	// CuFileLib and CUDALib name the libraries to dlopen. Empty means
	// $DELTAFS_CUFILE_LIB / $DELTAFS_CUDA_LIB, else libcufile.so.0 and
	// libcuda.so.1 from the loader's search path.
	CuFileLib string
	CUDALib   string
	// Device is the CUDA device ordinal.
	Device int
	// Parallelism bounds the concurrent reads of ReadBatch (default 4).
	Parallelism int
	// BatchAlign is the alignment of each sample in a ReadBatch
	// destination: 0 means Alignment (4 KiB, what GDS needs to DMA without
	// a bounce buffer); 1 packs samples back to back.
	BatchAlign int64
	// NoDirect opens cache files without O_DIRECT on the GDS path.
	NoDirect bool
}

// Info describes the path a reader chose and why.
type Info struct {
	Path Path
	// Reason is why Path is not PathGDS (nil when it is): a library that
	// did not load, no device, the cuFile driver failing to open, or
	// ErrCuFileCompat.
	Reason        error
	CUDALib       string // file libcuda was loaded from; "" when not loaded
	CuFileLib     string // file libcufile was loaded from; "" when not loaded
	CUDAVersion   int    // CUDA driver API version, for example 12040
	Devices       int    // CUDA devices
	Device        GPU    // the device in use
	Driver        *DriverProperties
	CuFileVersion int // from cuFileGetVersion, 0 when unknown
}

// ErrCuFileCompat is the fallback reason when libcufile opens but reports
// compatibility mode (nvidia-fs version 0.0): cuFile would itself pread and
// copy, so the reader does that directly.
var ErrCuFileCompat = errors.New("cuFile is in compatibility mode: nvidia-fs driver not in use (nvfs version 0.0)")

// ErrNoGPU is returned by NewReader in ModeCompat when there is no usable
// GPU; it wraps the reason.
var ErrNoGPU = errors.New("gds: no usable GPU")

const (
	defaultParallelism = 4
	// readChunk bounds one cuFileRead or pread call, so a cancelled
	// context stops a large read within one chunk.
	readChunk = 64 << 20
	// stageSize is the compat path's host staging buffer.
	stageSize = 8 << 20
)

var stagePool = sync.Pool{New: func() any { b := make([]byte, stageSize); return &b }}

// Reader reads extents into device (or host) memory by the fastest path
// available. Its methods are safe for concurrent use; Close waits for
// running reads.
type Reader struct {
	opts Options
	info Info

	// Read only after NewReader.
	cuda *cudaLib   // nil on the host path
	dev  int32      // CUdevice
	ctx  uintptr    // CUcontext: the device's primary context
	cf   *cuFileLib // nil unless the path is PathGDS

	mu     sync.RWMutex // held shared by every operation, exclusively by Close
	closed bool         // guarded by mu

	amu    sync.Mutex
	allocs map[*DeviceMem]struct{} // guarded by amu: live allocations, freed by Close

	warned sync.Map // kind of fallback -> true: each is logged once per reader
}

// warnOnce logs a per-file fallback the first time it happens.
func (r *Reader) warnOnce(kind, msg string, args ...any) {
	if _, dup := r.warned.LoadOrStore(kind, true); !dup {
		slog.Warn(msg, args...)
	}
}

// NewReader loads what the machine has and picks a path (see Mode). In
// ModeAuto it fails only on a bad option (a device ordinal that does not
// exist); a missing library or GPU is a fallback, reported by Info.
func NewReader(opts Options) (*Reader, error) {
	if opts.Parallelism <= 0 {
		opts.Parallelism = defaultParallelism
	}
	if opts.BatchAlign <= 0 {
		opts.BatchAlign = extents.Alignment
	}
	r := &Reader{opts: opts, allocs: map[*DeviceMem]struct{}{}}
	r.info.Path = PathHost
	if opts.Mode == ModeHost {
		r.info.Reason = errors.New("host path requested")
		return r, nil
	}
	reason, err := r.openCUDA()
	if err != nil {
		return nil, err
	}
	if reason != nil {
		switch opts.Mode {
		case ModeGDS:
			return nil, fmt.Errorf("%w: %w", ErrNotGDS, reason)
		case ModeCompat:
			return nil, fmt.Errorf("%w: %w", ErrNoGPU, reason)
		}
		r.info.Reason = reason
		return r, nil
	}
	r.info.Path = PathCompat
	if opts.Mode == ModeCompat {
		r.info.Reason = errors.New("compatibility path requested")
		return r, nil
	}
	if reason := r.openCuFile(); reason != nil {
		if opts.Mode == ModeGDS {
			r.Close()
			return nil, fmt.Errorf("%w: %w", ErrNotGDS, reason)
		}
		r.info.Reason = reason
		return r, nil
	}
	r.info.Path = PathGDS
	return r, nil
}

// openCUDA loads libcuda and retains the device's primary context. reason
// is why there is no usable GPU; err is a bad option.
func (r *Reader) openCUDA() (reason, err error) {
	c, err := loadCUDA(cudaLibName(r.opts.CUDALib))
	if err != nil {
		return err, nil
	}
	r.info.CUDALib = c.lib.file
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	n, err := c.devices()
	if err != nil {
		return err, nil
	}
	r.info.Devices = n
	r.info.CUDAVersion = c.driverVersion()
	if n == 0 {
		return errors.New("no CUDA device (cuDeviceGetCount: 0)"), nil
	}
	if r.opts.Device < 0 || r.opts.Device >= n {
		return nil, fmt.Errorf("gds: CUDA device %d does not exist (%d devices)", r.opts.Device, n)
	}
	g, err := c.device(r.opts.Device)
	if err != nil {
		return err, nil
	}
	r.info.Device = g
	var dev int32
	if err := c.check("cuDeviceGet", c.deviceGet(&dev, int32(r.opts.Device))); err != nil {
		return err, nil
	}
	var ctx uintptr
	if err := c.check("cuDevicePrimaryCtxRetain", c.primaryCtxRetain(&ctx, dev)); err != nil {
		return err, nil
	}
	r.cuda, r.dev, r.ctx = c, dev, ctx
	return nil, nil
}

// openCuFile loads libcufile and opens its driver; a non-nil result is why
// the reader stays on the compat path.
func (r *Reader) openCuFile() error {
	cf, err := loadCuFile(cuFileLibName(r.opts.CuFileLib))
	if err != nil {
		return err
	}
	r.info.CuFileLib = cf.lib.file
	unbind, err := r.bind()
	if err != nil {
		return err
	}
	defer unbind()
	if err := cf.open(); err != nil {
		return err
	}
	props, err := cf.properties()
	if err != nil {
		cf.close()
		return err
	}
	r.info.Driver = &props
	r.info.CuFileVersion = cf.version()
	if !props.GDSAvailable() {
		cf.close()
		return ErrCuFileCompat
	}
	r.cf = cf
	return nil
}

// bind locks the goroutine to its OS thread and makes the reader's context
// current there: CUDA contexts are per thread, goroutines are not. Call
// the returned func when done.
func (r *Reader) bind() (unbind func(), err error) {
	runtime.LockOSThread()
	if err := r.cuda.check("cuCtxSetCurrent", r.cuda.ctxSetCurrent(r.ctx)); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	return runtime.UnlockOSThread, nil
}

// Path returns the path the reader chose.
func (r *Reader) Path() Path { return r.info.Path }

// Info describes the reader's path and the libraries and device behind it.
func (r *Reader) Info() Info { return r.info }

// Options returns the options in effect, defaults filled in.
func (r *Reader) Options() Options { return r.opts }

func (r *Reader) acquire() error {
	r.mu.RLock()
	if r.closed {
		r.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

// Alloc returns n bytes of memory to read into: device memory registered
// with cuFile on the GDS path (a registration failure leaves it
// unregistered, see DeviceMem.RegisterErr), device memory on the compat
// path, host memory (HostBuffer) on the host path.
func (r *Reader) Alloc(n int64) (DeviceBuffer, error) {
	if n < 0 {
		return nil, fmt.Errorf("gds: Alloc(%d): negative size", n)
	}
	if err := r.acquire(); err != nil {
		return nil, err
	}
	defer r.mu.RUnlock()
	if r.cuda == nil {
		return HostBuffer(make([]byte, n)), nil
	}
	unbind, err := r.bind()
	if err != nil {
		return nil, err
	}
	defer unbind()
	size := max(n, 1)
	var p uintptr
	if err := r.cuda.check("cuMemAlloc_v2", r.cuda.memAlloc(&p, uintptr(size))); err != nil {
		return nil, err
	}
	d := &DeviceMem{ptr: p, n: n, owner: r}
	if r.cf != nil {
		if err := r.cf.registerBuf(p, size); err != nil {
			d.registerErr = err
		} else {
			d.registered = true
		}
	}
	r.amu.Lock()
	r.allocs[d] = struct{}{}
	r.amu.Unlock()
	return d, nil
}

// Free releases memory from Alloc. Host buffers and foreign device memory
// are left alone.
func (r *Reader) Free(b DeviceBuffer) error {
	d, ok := b.(*DeviceMem)
	if !ok || d.owner == nil {
		return nil
	}
	if d.owner != r {
		return errors.New("gds: Free: buffer belongs to another reader")
	}
	if err := r.acquire(); err != nil {
		return nil // Close freed it
	}
	defer r.mu.RUnlock()
	r.amu.Lock()
	_, live := r.allocs[d]
	delete(r.allocs, d)
	r.amu.Unlock()
	if !live {
		return errors.New("gds: Free: buffer already freed")
	}
	unbind, err := r.bind()
	if err != nil {
		return err
	}
	defer unbind()
	return r.free(d)
}

// free releases d; call with the context bound.
func (r *Reader) free(d *DeviceMem) error {
	var errs []error
	if d.registered {
		errs = append(errs, r.cf.deregisterBuf(d.ptr))
		d.registered = false
	}
	errs = append(errs, r.cuda.check("cuMemFree_v2", r.cuda.memFree(d.ptr)))
	d.ptr = 0
	return errors.Join(errs...)
}

// CopyToHost copies len(dst) bytes at offset off of src into dst.
func (r *Reader) CopyToHost(dst []byte, src DeviceBuffer, off int64) error {
	if off < 0 || off > src.Len() || int64(len(dst)) > src.Len()-off {
		return fmt.Errorf("gds: CopyToHost: %d bytes at offset %d outside a %d-byte buffer", len(dst), off, src.Len())
	}
	if h := src.HostBytes(); src.DevicePtr() == 0 {
		copy(dst, h[off:])
		return nil
	}
	if len(dst) == 0 {
		return nil
	}
	if err := r.acquire(); err != nil {
		return err
	}
	defer r.mu.RUnlock()
	if r.cuda == nil {
		return errors.New("gds: CopyToHost: device buffer on a reader without CUDA")
	}
	unbind, err := r.bind()
	if err != nil {
		return err
	}
	defer unbind()
	return r.cuda.check("cuMemcpyDtoH_v2", r.cuda.memcpyDtoH(unsafe.Pointer(&dst[0]), src.DevicePtr()+uintptr(off), uintptr(len(dst))))
}

// Close frees the reader's allocations, closes the cuFile driver and
// releases the CUDA context. It is safe to call more than once.
func (r *Reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	if r.cuda == nil {
		return nil
	}
	unbind, err := r.bind()
	if err != nil {
		return err
	}
	defer unbind()
	var errs []error
	r.amu.Lock()
	for d := range r.allocs {
		errs = append(errs, r.free(d))
	}
	r.allocs = nil
	r.amu.Unlock()
	if r.cf != nil {
		errs = append(errs, r.cf.close())
	}
	errs = append(errs, r.cuda.check("cuDevicePrimaryCtxRelease", r.cuda.primaryCtxRelease(r.dev)))
	return errors.Join(errs...)
}

// Result reports one extent read.
type Result struct {
	Path   Path  // the path that moved the bytes
	Bytes  int64 // bytes read
	Direct bool  // the cache file was opened with O_DIRECT
	// Corrupt: a first read of the sample's cache entry failed its
	// checksum or ended early, and these bytes come from a second read
	// (after re-materialising) or from the mount. Only the shard and
	// sample readers retry; ReadExtent and ReadBatch return the error.
	Corrupt bool
}

// ReadExtent reads ext into the start of dst.
//
// A cache file can be evicted between the producer's Locate and this read:
// the error then satisfies errors.Is(err, fs.ErrNotExist), and the caller
// should treat the sample as a cache miss (read it through the mount). A
// file shorter than the extent is io.ErrUnexpectedEOF. When ext carries a
// checksum, the bytes read are verified against it (see Checksum; on the
// GDS and compat paths, as they reach the device): a mismatch is a
// *ChecksumError (errors.Is(err, ErrChecksum)), and the destination then
// holds the wrong bytes, which the caller must not use.
func (r *Reader) ReadExtent(ctx context.Context, ext extents.Extent, dst DeviceBuffer) (Result, error) {
	return r.ReadExtentAt(ctx, ext, dst, 0)
}

// ReadExtentAt reads ext into dst at byte offset off, as ReadExtent.
func (r *Reader) ReadExtentAt(ctx context.Context, ext extents.Extent, dst DeviceBuffer, off int64) (Result, error) {
	if err := r.acquire(); err != nil {
		return Result{}, err
	}
	defer r.mu.RUnlock()
	fs, err := r.newFileSet(dst)
	if err != nil {
		return Result{}, err
	}
	defer fs.close()
	res, err := r.readOne(ctx, fs, ext, dst, off, false)
	if errors.Is(err, extents.ErrChecksum) {
		err = fmt.Errorf("gds: %s: %w", ext, err)
	}
	return res, err
}

// BatchResult reports a ReadBatch.
type BatchResult struct {
	Offsets []int64 // where extent i starts in the destination
	Size    int64   // bytes of the destination the batch spans
	Bytes   int64   // bytes read
	Results []Result
}

// Path returns the slowest path any extent took: PathGDS only when every
// extent came by GDS. An empty batch reports PathHost.
func (b BatchResult) Path() Path {
	if len(b.Results) == 0 {
		return PathHost
	}
	p := PathGDS
	for _, r := range b.Results {
		p = min(p, r.Path)
	}
	return p
}

// Count returns how many extents took path p.
func (b BatchResult) Count(p Path) int {
	n := 0
	for _, r := range b.Results {
		if r.Path == p {
			n++
		}
	}
	return n
}

// BatchLayout returns where ReadBatch would put each extent in its
// destination and the destination size it needs (rounded up to
// Options.BatchAlign, room for the last sample's padded read).
func (r *Reader) BatchLayout(exts []extents.Extent) (offsets []int64, size int64) {
	offsets, size = PackOffsets(exts, r.opts.BatchAlign)
	return offsets, roundUp(size, r.opts.BatchAlign)
}

// ReadBatch reads a batch of extents (typically the samples of one shard's
// batch) into one destination, extent i at BatchLayout's offsets[i], with
// up to Options.Parallelism reads in flight. Each cache file is opened and
// registered with cuFile once per batch. Extents that carry a checksum
// are verified as by ReadExtent. The first error stops the batch and is
// returned wrapped with the extent's index (errors as ReadExtent's); the
// destination's contents are then unspecified. OpenShard and
// Reader.ReadSamples handle misses (eviction, corruption) for a mounted
// shard.
//
// On the GDS path, with BatchAlign a multiple of 4 KiB, an extent at a
// 4 KiB-aligned file offset is read rounded up to whole 4 KiB blocks, into
// the gap before the next sample's offset: file offset, size and buffer
// offset are then all aligned and cuFile can DMA without a bounce buffer.
// deltafs's cache files are padded to 4 KiB, so the extra bytes exist; a
// file that ends sooner just yields a shorter read. Destination bytes
// between a sample's end and the next offset are unspecified.
func (r *Reader) ReadBatch(ctx context.Context, exts []extents.Extent, dst DeviceBuffer) (BatchResult, error) {
	if err := r.acquire(); err != nil {
		return BatchResult{}, err
	}
	defer r.mu.RUnlock()
	offsets, size := r.BatchLayout(exts)
	res := BatchResult{Offsets: offsets, Size: size, Results: make([]Result, len(exts))}
	if size > dst.Len() {
		return res, fmt.Errorf("gds: batch of %d extents needs %d bytes, destination has %d", len(exts), size, dst.Len())
	}
	fs, err := r.newFileSet(dst)
	if err != nil {
		return res, err
	}
	defer fs.close()

	idx := make([]int, len(exts))
	for i := range idx {
		idx[i] = i
	}
	if _, err := r.readAll(ctx, fs, exts, idx, dst, offsets, res.Results, nil); err != nil {
		return res, err
	}
	for _, rr := range res.Results {
		res.Bytes += rr.Bytes
	}
	return res, nil
}

// readAll reads exts[i] into dst at offsets[i] for each i in idx, with up
// to Options.Parallelism reads in flight, filling results[i]. An error for
// which keep returns true is recorded in errs[i] and the others go on; any
// other error stops them all and is returned wrapped with the extent's
// index. Call with r.mu held.
func (r *Reader) readAll(ctx context.Context, fs *fileSet, exts []extents.Extent, idx []int, dst DeviceBuffer, offsets []int64, results []Result, keep func(error) bool) (errs map[int]error, err error) {
	pad := r.opts.BatchAlign%extents.Alignment == 0
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	errs = map[int]error{}
	workers := min(r.opts.Parallelism, len(idx))
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j := int(next.Add(1) - 1)
				if j >= len(idx) || ctx.Err() != nil {
					return
				}
				i := idx[j]
				rr, err := r.readOne(ctx, fs, exts[i], dst, offsets[i], pad)
				results[i] = rr
				if err == nil {
					continue
				}
				mu.Lock()
				if keep != nil && keep(err) {
					errs[i] = err
					mu.Unlock()
					continue
				}
				if firstErr == nil {
					firstErr = fmt.Errorf("extent %d (%s): %w", i, exts[i], err)
				}
				mu.Unlock()
				cancel()
				return
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return errs, firstErr
	}
	// The caller's context: cancel runs only on an error.
	return errs, ctx.Err()
}

// fileSet holds the cache files one call has opened (and registered with
// cuFile), each opened once however many extents it holds.
type fileSet struct {
	r    *Reader
	path Path // the path this call aims for

	mu sync.Mutex
	m  map[string]*cacheFile // guarded by mu
}

type cacheFile struct {
	once   sync.Once
	err    error
	f      *os.File
	direct bool
	fh     uintptr // cuFile handle, when path is PathGDS
	path   Path    // how this file is read
}

func (r *Reader) newFileSet(dst DeviceBuffer) (*fileSet, error) {
	p := r.info.Path
	if dst.DevicePtr() == 0 {
		p = PathHost
	} else if r.cuda == nil {
		return nil, errors.New("gds: device buffer given to a reader on the host path")
	}
	return &fileSet{r: r, path: p, m: map[string]*cacheFile{}}, nil
}

func (s *fileSet) get(name string) (*cacheFile, error) {
	s.mu.Lock()
	c := s.m[name]
	if c == nil {
		c = &cacheFile{}
		s.m[name] = c
	}
	s.mu.Unlock()
	c.once.Do(func() { c.err = s.open(c, name) })
	return c, c.err
}

func (s *fileSet) open(c *cacheFile, name string) error {
	c.path = s.path
	if c.path != PathGDS {
		f, _, err := extents.OpenFile(name, false)
		c.f = f
		return err
	}
	f, direct, err := extents.OpenFile(name, !s.r.opts.NoDirect)
	if err != nil {
		return err
	}
	unbind, err := s.r.bind()
	if err != nil {
		f.Close()
		return err
	}
	if !direct && !s.r.opts.NoDirect {
		s.r.warnOnce("nodirect", "gds: the filesystem refuses O_DIRECT; cuFile reads its files without it", "file", name)
	}
	fh, err := s.r.cf.registerFD(int(f.Fd()), name)
	unbind()
	if err == nil {
		c.f, c.direct, c.fh = f, direct, fh
		return nil
	}
	f.Close()
	var ce *Error
	if s.r.opts.Mode == ModeGDS || !errors.As(err, &ce) || !ce.Code.fileUnsupported() {
		return err
	}
	// GDS cannot serve this file (its filesystem, its open flags): serve
	// it by the compat path, which the result reports.
	s.r.warnOnce("filefallback", "gds: cuFile cannot read a cache file; reading such files through host memory", "file", name, "err", err)
	c.path = PathCompat
	c.f, _, err = extents.OpenFile(name, false)
	return err
}

func (s *fileSet) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	var unbind func()
	for _, c := range s.m {
		if c.fh != 0 {
			if unbind == nil {
				var err error
				if unbind, err = s.r.bind(); err != nil {
					unbind = func() {}
				}
			}
			s.r.cf.handleDeregister(c.fh)
			c.fh = 0
		}
		if c.f != nil {
			c.f.Close()
		}
	}
	if unbind != nil {
		unbind()
	}
}

// readOne reads ext into dst at off. pad allows a GDS read rounded up to
// whole 4 KiB blocks when that stays inside dst (see ReadBatch).
func (r *Reader) readOne(ctx context.Context, fs *fileSet, ext extents.Extent, dst DeviceBuffer, off int64, pad bool) (Result, error) {
	res := Result{Path: fs.path}
	if err := ext.Validate(); err != nil {
		return res, err
	}
	if off < 0 || off > dst.Len() || ext.Length > dst.Len()-off {
		return res, fmt.Errorf("gds: extent %s does not fit at offset %d of a %d-byte destination", ext, off, dst.Len())
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if ext.Length == 0 {
		return res, ext.Verify(0)
	}
	c, err := fs.get(ext.Path)
	if err != nil {
		return res, err
	}
	res.Path, res.Direct = c.path, c.direct
	var sum uint32
	switch c.path {
	case PathHost:
		b := dst.HostBytes()[off : off+ext.Length]
		if err = readHost(ctx, c.f, ext, b); err == nil && ext.Sum.Known() {
			sum = crc32.ChecksumIEEE(b)
		}
	case PathCompat:
		sum, err = r.readCompat(ctx, c.f, ext, dst.DevicePtr()+uintptr(off))
	default:
		span := ext.Length
		if p := roundUp(ext.Length, extents.Alignment); pad && ext.Aligned() && off%extents.Alignment == 0 && p <= dst.Len()-off {
			span = p
		}
		err = r.readGDS(ctx, c, ext, span, dst.DevicePtr(), off)
		if err == nil && ext.Sum.Known() {
			// The bytes are checked where they landed: copied back from
			// the device (see the package doc, "Checksums").
			sum, err = r.deviceCRC(ctx, dst.DevicePtr()+uintptr(off), ext.Length)
		}
	}
	if err == nil {
		err = ext.Verify(sum)
	}
	if err == nil {
		res.Bytes = ext.Length
	}
	return res, err
}

func shortRead(ext extents.Extent, got int64) error {
	return fmt.Errorf("gds: %s: %w: the file ends %d bytes into the extent", ext, io.ErrUnexpectedEOF, got)
}

// preadFull fills b from f at off, or reports a short file.
func preadFull(f *os.File, b []byte, ext extents.Extent, done int64) error {
	n, err := f.ReadAt(b, ext.Offset+done)
	if err == io.EOF && n < len(b) {
		return shortRead(ext, done+int64(n))
	}
	if err != nil && err != io.EOF {
		return err
	}
	return nil
}

func readHost(ctx context.Context, f *os.File, ext extents.Extent, b []byte) error {
	for done := int64(0); done < ext.Length; {
		if err := ctx.Err(); err != nil {
			return err
		}
		k := min(ext.Length-done, readChunk)
		if err := preadFull(f, b[done:done+k], ext, done); err != nil {
			return err
		}
		done += k
	}
	return nil
}

// readCompat reads ext through a host staging buffer into the device at
// dev and returns the CRC-32 of the bytes it copied there.
func (r *Reader) readCompat(ctx context.Context, f *os.File, ext extents.Extent, dev uintptr) (uint32, error) {
	sp := stagePool.Get().(*[]byte)
	defer stagePool.Put(sp)
	stage := *sp
	var sum uint32
	for done := int64(0); done < ext.Length; {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		k := min(ext.Length-done, int64(len(stage)))
		if err := preadFull(f, stage[:k], ext, done); err != nil {
			return 0, err
		}
		unbind, err := r.bind()
		if err != nil {
			return 0, err
		}
		rc := r.cuda.memcpyHtoD(dev+uintptr(done), unsafe.Pointer(&stage[0]), uintptr(k))
		unbind()
		if err := r.cuda.check("cuMemcpyHtoD_v2", rc); err != nil {
			return 0, err
		}
		sum = crc32.Update(sum, crc32.IEEETable, stage[:k])
		done += k
	}
	return sum, nil
}

// deviceCRC copies n bytes of device memory at dev back to host memory,
// through a staging buffer, and returns their CRC-32. It is how the GDS
// path verifies what cuFile put on the device.
func (r *Reader) deviceCRC(ctx context.Context, dev uintptr, n int64) (uint32, error) {
	sp := stagePool.Get().(*[]byte)
	defer stagePool.Put(sp)
	stage := *sp
	var sum uint32
	for done := int64(0); done < n; {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		k := min(n-done, int64(len(stage)))
		unbind, err := r.bind()
		if err != nil {
			return 0, err
		}
		rc := r.cuda.memcpyDtoH(unsafe.Pointer(&stage[0]), dev+uintptr(done), uintptr(k))
		unbind()
		if err := r.cuda.check("cuMemcpyDtoH_v2", rc); err != nil {
			return 0, err
		}
		sum = crc32.Update(sum, crc32.IEEETable, stage[:k])
		done += k
	}
	return sum, nil
}

// readGDS reads with cuFileRead into the buffer at base, at buffer offset
// off: the base is what cuFileBufRegister registered, so cuFile finds the
// registration. It asks for span >= ext.Length bytes (see ReadBatch) and
// needs ext.Length of them.
func (r *Reader) readGDS(ctx context.Context, c *cacheFile, ext extents.Extent, span int64, base uintptr, off int64) error {
	unbind, err := r.bind()
	if err != nil {
		return err
	}
	defer unbind()
	for done := int64(0); done < ext.Length; {
		if err := ctx.Err(); err != nil {
			return err
		}
		k := min(span-done, readChunk)
		n, err := r.cf.readAt(c.fh, base, k, ext.Offset+done, off+done, ext.Path)
		if err != nil {
			return err
		}
		if n == 0 {
			return shortRead(ext, done)
		}
		done += n
	}
	runtime.KeepAlive(c.f)
	return nil
}
