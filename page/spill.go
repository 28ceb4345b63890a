package page

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/deltafs/deltafs/internal/lru"
	"github.com/deltafs/deltafs/internal/packed"
)

// A spillStore keeps decoded pages too large for the memory cache in
// unlinked temporary files, so that a large sample is decoded once and each
// read of a range of it costs that range (three preads), not a decode of
// its whole page: a 300 MiB value read 1 MiB at a time was decoded 300
// times. The files hold the page's blob (package internal/packed) as it is; they have no
// name (removed as soon as created), so a crash leaves nothing behind, and
// they are bounded in total by an LRU on their bytes. Reads hold a
// reference, so that an eviction closes a file only once no read uses it.
type spillStore struct {
	dir string // where the files are made ("": os.TempDir())

	mu      sync.Mutex
	files   *lru.Cache[Key, *spillFile] // guarded by mu; cost: bytes
	writing map[Key]bool                // guarded by mu; spills in progress
}

// spillFile is one spilled page: a blob, or a page decoded as a stream
// (stream.go), whose values lie in the file where spans say.
type spillFile struct {
	f        *os.File
	n        int         // the page's values
	firstRow int64       // the page's first row in its row group
	spans    []spillSpan // a streamed page's values; nil: f holds a blob
	refs     int         // guarded by spillStore.mu; reads in progress
	evicted  bool        // guarded by spillStore.mu; close when refs drop to 0
}

func newSpillStore(dir string, maxBytes int64) *spillStore {
	return &spillStore{dir: dir, files: lru.New[Key, *spillFile](maxBytes, func(_ Key, s *spillFile) {
		s.evicted = true
		if s.refs == 0 {
			s.f.Close()
		}
	}), writing: map[Key]bool{}}
}

// acquire returns k's spilled page, held until release; nil when k is not
// spilled.
func (st *spillStore) acquire(k Key) *spillFile {
	if st == nil {
		return nil // no spilling
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	s, ok := st.files.Get(k)
	if !ok {
		return nil
	}
	s.refs++
	return s
}

func (st *spillStore) release(s *spillFile) {
	st.mu.Lock()
	defer st.mu.Unlock()
	s.refs--
	if s.evicted && s.refs == 0 {
		s.f.Close()
	}
}

// add spills blob under k, unless it is spilled or being spilled. It
// reports whether this call spilled it; a failure to write (a full disk)
// is only a page not kept: its reads decode it again.
func (st *spillStore) add(k Key, blob []byte) bool {
	st.mu.Lock()
	_, have := st.files.Get(k)
	if have || st.writing[k] {
		st.mu.Unlock()
		return false
	}
	st.writing[k] = true
	st.mu.Unlock()
	s, err := st.write(blob)
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.writing, k)
	if err != nil {
		return false
	}
	if !st.files.Add(k, s, int64(len(blob))) {
		s.f.Close() // larger than the whole budget
		return false
	}
	return true
}

// spillSpan is where one value of a streamed page lies in its file.
type spillSpan struct {
	off, n int64
	null   bool
}

// keep keeps s, a page decoded into its file, under k, at cost bytes. It
// reports whether it was kept: a page larger than the whole budget, or
// one spilled meanwhile, is closed.
func (st *spillStore) keep(k Key, s *spillFile, cost int64) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, have := st.files.Get(k); have || !st.files.Add(k, s, cost) {
		s.f.Close()
		return false
	}
	return true
}

// create makes a new unlinked file.
func (st *spillStore) create() (*os.File, error) {
	dir := st.dir
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, ".deltafs-spill-*")
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// write writes blob to a new unlinked file.
func (st *spillStore) write(blob []byte) (*spillFile, error) {
	f, err := st.create()
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(blob); err != nil {
		f.Close()
		return nil, err
	}
	return &spillFile{f: f, n: packed.Len(blob), firstRow: packed.FirstRow(blob)}, nil
}

// readValue reads bytes [off, off+len(p)) of value i into p: the count
// read, 0 at or past the value's end (or for a null).
func (s *spillFile) readValue(i int, p []byte, off int64) (int, error) {
	if i < 0 || i >= s.n {
		return 0, fmt.Errorf("value %d not in its page (%d values)", i, s.n)
	}
	if s.spans != nil {
		return s.readSpan(i, p, off)
	}
	var b [8]byte
	if _, err := s.f.ReadAt(b[:1], int64(packed.Header+i)); err != nil {
		return 0, err
	}
	if b[0] == 1 {
		return 0, nil // null
	}
	if _, err := s.f.ReadAt(b[:], int64(packed.Header+s.n+4*i)); err != nil {
		return 0, err
	}
	lo, hi := int64(binary.LittleEndian.Uint32(b[:4])), int64(binary.LittleEndian.Uint32(b[4:]))
	if lo > hi {
		return 0, fmt.Errorf("value %d: offsets %d > %d", i, lo, hi)
	}
	if off < 0 || off >= hi-lo {
		return 0, nil
	}
	p = p[:min(int64(len(p)), hi-lo-off)]
	n, err := s.f.ReadAt(p, int64(packed.Header+s.n+4*(s.n+1))+lo+off)
	if err == io.EOF && n == len(p) {
		err = nil
	}
	if err == nil && n < len(p) {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// readSpan is readValue for a streamed page.
func (s *spillFile) readSpan(i int, p []byte, off int64) (int, error) {
	v := s.spans[i]
	if v.null || off < 0 || off >= v.n {
		return 0, nil
	}
	p = p[:min(int64(len(p)), v.n-off)]
	n, err := s.f.ReadAt(p, v.off+off)
	if err == io.EOF && n == len(p) {
		err = nil
	}
	if err == nil && n < len(p) {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// head returns value i's size in bytes, and reads its first bytes (up to
// len(head)) into head.
func (s *spillFile) head(i int, head []byte) (size int64, n int, err error) {
	if i < 0 || i >= s.n {
		return 0, 0, fmt.Errorf("value %d not in its page (%d values)", i, s.n)
	}
	if s.spans != nil {
		size = s.spans[i].n
		if s.spans[i].null {
			size = 0
		}
	} else {
		var b [9]byte
		if _, err := s.f.ReadAt(b[:1], int64(packed.Header+i)); err != nil {
			return 0, 0, err
		}
		if _, err := s.f.ReadAt(b[1:], int64(packed.Header+s.n+4*i)); err != nil {
			return 0, 0, err
		}
		if b[0] != 1 {
			size = int64(binary.LittleEndian.Uint32(b[5:])) - int64(binary.LittleEndian.Uint32(b[1:5]))
		}
	}
	n, err = s.readValue(i, head, 0)
	return size, n, err
}
