package cache

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
	"sync"

	"github.com/cespare/xxhash/v2"

	"github.com/deltafs/deltafs/extents"
)

// ErrNotStored is returned by Materialize when the entry could not be kept
// on disk: the cache has no disk tier, the entry is larger than the disk
// budget, or the filesystem is too full to take it.
var ErrNotStored = errors.New("cache: entry not kept on disk (no disk tier, larger than the budget, or no free space)")

// Where returns where key's payload would lie on disk, without any I/O: the
// entry file's absolute path and the 4 KiB-aligned payload offset. Both
// depend only on the key, so an entry evicted and written again lies at the
// same place. ok is false without a disk tier.
func (c *Cache) Where(key Key) (path string, off int64, ok bool, err error) {
	if c.disk == nil {
		return "", 0, false, nil
	}
	r, err := key.ref()
	if err != nil {
		return "", 0, false, err
	}
	return c.disk.path(r.name), headerLen(len(r.text)), true, nil
}

// Materialize makes sure key's entry is on disk, whole and correct, and
// returns where its payload lies: the entry file (absolute), the payload's
// offset (a multiple of extents.Alignment, see Where), its length and the
// CRC-32 (extents.Checksum) of the payload as read back from the file,
// whose xxhash64 was verified in the same pass: the checksum of the bytes
// actually in the entry, for readers that have no xxhash (package gds,
// examples/gds/loader.py). Every call reads the entry
// once, completely: magic, header checksum, key, the file's size and the
// payload's checksum are verified, and the CRC-32 is computed from the same
// bytes. A missing, truncated, corrupt or foreign entry (another key's
// file) is a miss: a broken one is dropped as by Get, so that it is
// rewritten rather than advertised. On a miss the bytes are fetched (once
// for all concurrent callers of the key), written to the disk tier only
// (the memory tier is neither consulted nor filled, because a caller of
// Materialize reads the bytes from the file), and read back and verified
// as on a hit. An entry evicted later is written again by the next
// Materialize, at the same path and offset (see Where).
//
// The full read is the price of handing out a checksum that describes the
// bytes on disk: materialising a shard that is already cached reads its
// entries once (from the page cache when they are hot).
func (c *Cache) Materialize(ctx context.Context, key Key, fetch FetchFunc) (extents.Extent, error) {
	if c.closed.Load() {
		return extents.Extent{}, ErrClosed
	}
	if c.disk == nil {
		return extents.Extent{}, ErrNotStored
	}
	r, err := key.ref()
	if err != nil {
		return extents.Extent{}, err
	}
	if e, ok := c.disk.verified(r); ok {
		c.ctr.diskHits.Add(1)
		return e, nil
	}
	c.ctr.diskMisses.Add(1)
	// "m" keeps these flights apart from Get's, which fill both tiers.
	_, _, err = c.flights.Do(ctx, "m"+r.sum, func(fctx context.Context) ([]byte, error) {
		if _, ok := c.disk.verified(r); ok {
			return nil, nil
		}
		v, err := c.fetch(fctx, r, fetch)
		if err != nil {
			return nil, err
		}
		c.disk.store(r, v)
		return nil, nil
	})
	if err != nil {
		return extents.Extent{}, err
	}
	if e, ok := c.disk.verified(r); ok {
		return e, nil
	}
	c.log.Debug("cache: entry not kept on disk", "key", r.text)
	return extents.Extent{}, ErrNotStored
}

// verified reads and verifies r's whole entry (see Materialize) and
// returns where its payload lies, with the payload's CRC-32. A broken
// entry is dropped as by get.
func (d *diskTier) verified(r ref) (extents.Extent, bool) {
	p := d.path(r.name)
	h, size, sum, err := verifyEntry(p, r.text)
	if err != nil {
		d.readFailed(r, p, err)
		return extents.Extent{}, false
	}
	d.touch(r.name, p, size)
	return extents.Extent{Path: p, Offset: h.hdrLen, Length: h.n, Sum: extents.NewChecksum(sum)}, true
}

// verifyChunk is how much of a payload verifyEntry reads at a time.
const verifyChunk = 1 << 20

var verifyPool = sync.Pool{New: func() any { b := make([]byte, verifyChunk); return &b }}

// verifyEntry verifies the entry file at path for keyText completely, as
// readEntry does, without holding its payload in memory: the payload is
// read in chunks, each added to its xxhash64 (checked against the header)
// and its CRC-32 (returned). Errors as readEntry's.
func verifyEntry(path, keyText string) (h header, size int64, crc uint32, err error) {
	f, err := openRead(path)
	if err != nil {
		return header{}, 0, 0, err
	}
	defer f.close()
	if h, size, err = readHeader(f, keyText); err != nil {
		return header{}, size, 0, err
	}
	bp := verifyPool.Get().(*[]byte)
	defer verifyPool.Put(bp)
	xh := xxhash.New()
	for done := int64(0); done < h.n; {
		b := (*bp)[:min(h.n-done, verifyChunk)]
		if err := f.readAt(b, h.hdrLen+done); err != nil {
			if errors.Is(err, io.EOF) {
				return header{}, size, 0, corrupt("truncated payload")
			}
			return header{}, size, 0, err
		}
		xh.Write(b)
		crc = crc32.Update(crc, crc32.IEEETable, b)
		done += int64(len(b))
	}
	if got := xh.Sum64(); got != h.sum {
		return header{}, size, 0, corrupt("payload checksum %016x, header says %016x", got, h.sum)
	}
	return h, size, crc, nil
}

// readHeader reads and verifies the header of the open entry file f for
// keyText, and checks the file's size against it; errors as readEntry's.
func readHeader(f rfile, keyText string) (header, int64, error) {
	size, err := f.size()
	if err != nil {
		return header{}, 0, err
	}
	hl := headerLen(len(keyText))
	if size < hl {
		return header{}, size, corrupt("%d bytes, shorter than its %d-byte header", size, hl)
	}
	buf := make([]byte, hl)
	if err := f.readAt(buf, 0); err != nil {
		if errors.Is(err, io.EOF) {
			return header{}, size, corrupt("truncated while reading")
		}
		return header{}, size, err
	}
	h, err := parseHeader(buf)
	if err == errLongHeader {
		// Another key's longer header: not ours.
		return header{}, size, fmt.Errorf("%w (longer header)", errKeyMismatch)
	}
	if err != nil {
		return header{}, size, err
	}
	if string(h.keyText) != keyText {
		return header{}, size, fmt.Errorf("%w: %s", errKeyMismatch, strconv.Quote(string(h.keyText)))
	}
	if want := h.hdrLen + roundUp(h.n, blockSize); size != want {
		return header{}, size, corrupt("file is %d bytes, header says %d", size, want)
	}
	return h, size, nil
}
