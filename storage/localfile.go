package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/deltafs/deltafs/internal/lru"
)

// Reading local files safely. A table directory (or an import's source
// tree) may hold anything a filesystem can: a named pipe whose open or read
// blocks until a writer comes (forever), a symbolic link to /dev/zero that
// never ends, a device whose open has side effects, a file rewritten while
// it is read. Every local read goes through openRegular and localFile.readAt:
//
//   - the path is stat'ed first (following symbolic links) and anything but
//     a regular file is refused before it is opened, so a device is not
//     opened (one swapped in after the stat is, and refused by the fstat);
//   - the open is O_NONBLOCK, so a file swapped for a named pipe between the
//     stat and the open still returns at once, and the open descriptor is
//     fstat'ed and judged again;
//   - a read never goes past the size the fstat gave, is cut into chunks
//     with the context checked between them, and a file that ends early or
//     changes size or modification time while read fails with ErrChanged
//     rather than returning a mix of two contents.

// readChunk is the most one pread asks for: a read of a large object checks
// its context at least this often.
const readChunk = 8 << 20

// NotRegularError says what kind of file was found where a regular file
// was needed: "not a regular file (named pipe)". It matches ErrNotRegular.
// Errors of this package wrap it behind the key or path; a layer that
// names the file itself reports it alone (errors.As).
type NotRegularError struct {
	Kind string // "named pipe", "socket", "character device", "block device", "directory"
}

func (e *NotRegularError) Error() string        { return ErrNotRegular.Error() + " (" + e.Kind + ")" }
func (e *NotRegularError) Is(target error) bool { return target == ErrNotRegular }

// CheckRegular returns nil for the mode of a regular file (as os.Stat
// gives it, after following symbolic links), else a *NotRegularError
// naming the kind of file.
func CheckRegular(mode fs.FileMode) error {
	if mode.IsRegular() {
		return nil
	}
	return &NotRegularError{Kind: fileKind(mode)}
}

// fileKind names the type of a file that is not regular, in the words of
// stat(1).
func fileKind(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeNamedPipe != 0:
		return "named pipe"
	case mode&fs.ModeSocket != 0:
		return "socket"
	case mode&fs.ModeCharDevice != 0:
		return "character device"
	case mode&fs.ModeDevice != 0:
		return "block device"
	case mode.IsDir():
		return "directory"
	case mode&fs.ModeSymlink != 0:
		return "symbolic link"
	}
	return "irregular file"
}

// localFile is an open regular file and what fstat said right after the
// open: reads are bounded by that size.
type localFile struct {
	f       *os.File
	size    int64
	modTime time.Time
}

// unwrapPath drops the *fs.PathError around an OS error: callers name the
// key or the path themselves, in their own words.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// statRegular stats path, following symbolic links, and refuses anything
// but a regular file. Errors do not name the path.
func statRegular(path string) (fs.FileInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, unwrapPath(err)
	}
	if err := CheckRegular(fi.Mode()); err != nil {
		return nil, err
	}
	return fi, nil
}

// openRegular opens path for reading without ever blocking, following
// symbolic links, and refuses anything but a regular file (see above).
// Errors do not name the path.
func openRegular(path string) (*localFile, error) {
	if _, err := statRegular(path); err != nil {
		return nil, err
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		if err == unix.ENXIO {
			// A socket took the file's place since the stat.
			return nil, &NotRegularError{Kind: "socket"}
		}
		return nil, err
	}
	f := os.NewFile(uintptr(fd), path)
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, unwrapPath(err)
	}
	if err := CheckRegular(fi.Mode()); err != nil {
		f.Close()
		return nil, err
	}
	return &localFile{f: f, size: fi.Size(), modTime: fi.ModTime()}, nil
}

func (lf *localFile) Close() error { return lf.f.Close() }

// readAt reads len(p) bytes at off like io.ReaderAt, but never past the
// size the file had when opened (io.EOF there), checking ctx between
// chunks. A file that ends before that size, or whose size or modification
// time changed during the read, fails with ErrChanged. It stops between
// chunks when ctx is done or closed is closed. Errors do not name the file.
func (lf *localFile) readAt(ctx context.Context, closed <-chan struct{}, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("negative offset %d", off)
	}
	if off >= lf.size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	want := int(min(int64(len(p)), lf.size-off))
	n := 0
	for n < want {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		select {
		case <-closed:
			return n, errClosed
		default:
		}
		end := min(want, n+readChunk)
		m, err := lf.f.ReadAt(p[n:end], off+int64(n))
		n += m
		if errors.Is(err, io.EOF) {
			return n, fmt.Errorf("%w: it had %d bytes when opened and ended at %d while read", ErrChanged, lf.size, off+int64(n))
		}
		if err != nil {
			return n, unwrapPath(err)
		}
	}
	fi, err := lf.f.Stat()
	if err != nil {
		return n, unwrapPath(err)
	}
	if fi.Size() != lf.size || !fi.ModTime().Equal(lf.modTime) {
		return n, fmt.Errorf("%w: it was modified while read (size %d, now %d)", ErrChanged, lf.size, fi.Size())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink == 0 {
		// Deleted (vacuumed) since it was opened: an open descriptor still
		// reads it, but a file gone from the table is gone, as on an object
		// store, whether or not this process happened to hold it open.
		return n, errUnlinked
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// errUnlinked is the error of a read from a file deleted (or replaced by a
// rename) since it was opened. Local.ReadAt then opens the path again.
var errUnlinked = fmt.Errorf("deleted while open: %w", ErrNotExist)

// ErrTooLarge is the error of ReadLocalFile for a file over its bound.
var ErrTooLarge = errors.New("file too large")

// ReadLocalFile reads the whole local file at path, with the guarantees of
// a Local read: it never blocks on a named pipe, refuses anything but a
// regular file (after following symbolic links; ErrNotRegular), refuses a
// file of more than max bytes before reading it (ErrTooLarge), honours ctx,
// and fails with ErrChanged rather than return the bytes of a file that
// changed while read. Errors do not name the file: the caller does, in its
// terms (a path relative to what it reads).
func ReadLocalFile(ctx context.Context, path string, max int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lf, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer lf.Close()
	if lf.size > max {
		return nil, fmt.Errorf("%w: %d bytes, over the bound of %d", ErrTooLarge, lf.size, max)
	}
	buf := make([]byte, lf.size)
	if _, err := lf.readAt(ctx, nil, buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf, nil
}

// OpenLocalFile opens the local file at path for reading with the checks
// of ReadLocalFile: never blocking, refusing anything but a regular file.
// The caller reads it as it likes (a stream) and closes it. Errors do not
// name the file.
func OpenLocalFile(path string) (*os.File, error) {
	lf, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	return lf.f, nil
}

// StatLocalFile is os.Stat refusing anything but a regular file, as
// ReadLocalFile does, without opening it. Errors do not name the file.
func StatLocalFile(path string) (fs.FileInfo, error) {
	return statRegular(path)
}

// fdCache keeps the data files a Local reads open, so that a read costs a
// pread and an fstat instead of a stat, an open, two fstats and a close.
// The least recently used file is closed past fdCacheSize (once its
// readers are done). Log files (_delta_log/) are not kept: some change in
// place (_last_checkpoint), and each is read once. A kept file deleted
// since, or replaced by a rename, has no links left: the read that sees
// this (its closing fstat) drops it and opens the path again, so a
// vacuumed file fails and a replaced one is read anew (where the caller's
// FileRef.ID check catches the change), as when nothing is kept.
type fdCache struct {
	mu    sync.Mutex
	files *lru.Cache[string, *fdEntry] // guarded by mu; nil until the first open
}

const fdCacheSize = 128

type fdEntry struct {
	key     string
	lf      *localFile
	refs    int  // guarded by fdCache.mu; readers using lf
	dropped bool // guarded by fdCache.mu; out of the cache: close when refs reaches 0
}

// get returns key's open file, opening it with open on a miss; release it
// with put.
func (c *fdCache) get(key string, open func() (*localFile, error)) (*fdEntry, error) {
	c.mu.Lock()
	if e, ok := c.lookup(key); ok {
		c.mu.Unlock()
		return e, nil
	}
	c.mu.Unlock()
	lf, err := open()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.lookup(key); ok { // opened meanwhile by another reader
		lf.Close()
		return e, nil
	}
	if c.files == nil {
		c.files = lru.New(fdCacheSize, func(_ string, old *fdEntry) { old.release() })
	}
	e := &fdEntry{key: key, lf: lf, refs: 1}
	c.files.Add(key, e, 1)
	return e, nil
}

// lookup returns key's kept file, taking a reference. Called with c.mu held.
func (c *fdCache) lookup(key string) (*fdEntry, bool) {
	if c.files == nil {
		return nil, false
	}
	e, ok := c.files.Get(key)
	if ok {
		e.refs++
	}
	return e, ok
}

// release marks e out of the cache and closes it unless a reader still
// uses it (the last one closes it). Called with fdCache.mu held.
func (e *fdEntry) release() {
	e.dropped = true
	if e.refs == 0 {
		e.lf.Close()
	}
}

// put releases e; drop also removes it from the cache (after an error, so
// that the next read opens the file afresh).
func (c *fdCache) put(e *fdEntry, drop bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.refs--
	if drop && !e.dropped {
		c.files.Remove(e.key)
		e.dropped = true
	}
	if e.dropped && e.refs == 0 {
		e.lf.Close()
	}
}

// closeAll closes every kept file (readers still using one close it).
func (c *fdCache) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.files == nil {
		return
	}
	for _, e := range c.files.All() {
		e.release()
	}
	c.files = nil
}

// forget drops key's kept file (its path now names another file).
func (c *fdCache) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.files == nil {
		return
	}
	if e, ok := c.files.Remove(key); ok {
		e.release()
	}
}

// ReadConfig reads a small local file whole (a credentials profile, a
// configuration file) the way table files are read: anything but a
// regular file is refused without blocking (a named pipe, a device, a
// socket), and a file larger than max bytes is refused before it is read.
// Errors do not name the path.
func ReadConfig(path string, max int64) ([]byte, error) {
	lf, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer lf.Close()
	if lf.size > max {
		return nil, fmt.Errorf("larger than %d bytes (%d): not a configuration file", max, lf.size)
	}
	b := make([]byte, lf.size)
	n, err := lf.readAt(context.Background(), nil, b, 0)
	if err != nil && !(errors.Is(err, io.EOF) && n == len(b)) {
		return nil, err
	}
	return b, nil
}
