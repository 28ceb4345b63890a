package sample

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/deltafs/deltafs/internal/lru"
)

// A spillStore keeps decoded pages too large for the memory cache in
// unlinked temporary files, so that a large sample is decoded once and each
// read of a range of it costs that range (three preads), not a decode of
// its whole page: a 300 MiB value read 1 MiB at a time was decoded 300
// times. The files hold the page's blob (blob.go) as it is; they have no
// name (removed as soon as created), so a crash leaves nothing behind, and
// they are bounded in total by an LRU on their bytes. Reads hold a
// reference, so that an eviction closes a file only once no read uses it.
type spillStore struct {
	dir string // where the files are made ("": os.TempDir())

	mu      sync.Mutex
	files   *lru.Cache[CacheKey, *spillFile] // guarded by mu; cost: bytes
	writing map[CacheKey]bool                // guarded by mu; spills in progress
}

// spillFile is one spilled page.
type spillFile struct {
	f        *os.File
	n        int   // the blob's values
	firstRow int64 // the blob's first row in its row group
	refs     int   // guarded by spillStore.mu; reads in progress
	evicted  bool  // guarded by spillStore.mu; close when refs drop to 0
}

func newSpillStore(dir string, maxBytes int64) *spillStore {
	return &spillStore{dir: dir, files: lru.New[CacheKey, *spillFile](maxBytes, func(_ CacheKey, s *spillFile) {
		s.evicted = true
		if s.refs == 0 {
			s.f.Close()
		}
	}), writing: map[CacheKey]bool{}}
}

// acquire returns k's spilled page, held until release; nil when k is not
// spilled.
func (st *spillStore) acquire(k CacheKey) *spillFile {
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
func (st *spillStore) add(k CacheKey, blob []byte) bool {
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

// write writes blob to a new unlinked file.
func (st *spillStore) write(blob []byte) (*spillFile, error) {
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
	if _, err := f.Write(blob); err != nil {
		f.Close()
		return nil, err
	}
	return &spillFile{f: f, n: blobLen(blob), firstRow: blobFirstRow(blob)}, nil
}

// readValue reads bytes [off, off+len(p)) of value i into p: the count
// read, 0 at or past the value's end (or for a null).
func (s *spillFile) readValue(i int, p []byte, off int64) (int, error) {
	if i < 0 || i >= s.n {
		return 0, fmt.Errorf("value %d not in its page (%d values)", i, s.n)
	}
	var b [8]byte
	if _, err := s.f.ReadAt(b[:1], int64(blobHeader+i)); err != nil {
		return 0, err
	}
	if b[0] == 1 {
		return 0, nil // null
	}
	if _, err := s.f.ReadAt(b[:], int64(blobHeader+s.n+4*i)); err != nil {
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
	n, err := s.f.ReadAt(p, int64(blobHeader+s.n+4*(s.n+1))+lo+off)
	if err == io.EOF && n == len(p) {
		err = nil
	}
	if err == nil && n < len(p) {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}
