package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
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

// Materialize makes sure key's entry is on disk and returns where its
// payload lies, as Locate does. A disk hit costs one read of the entry's
// header block: its magic, header checksum and key, and the file's size, are
// checked, but not the payload's checksum (that would read every byte, and
// a caller of Materialize reads the payload itself; the checksum is still
// checked by every Get). A missing, truncated or foreign entry is a miss.
// On a miss the bytes are fetched (once for all concurrent callers of
// the key) and written to the disk tier only: the memory tier is neither
// consulted nor filled, because a caller of Materialize reads the bytes
// from the file, not from memory. An entry evicted later is written again
// by the next Materialize, at the same path and offset (see Where).
func (c *Cache) Materialize(ctx context.Context, key Key, fetch FetchFunc) (path string, off, n int64, err error) {
	if c.closed.Load() {
		return "", 0, 0, ErrClosed
	}
	if c.disk == nil {
		return "", 0, 0, ErrNotStored
	}
	r, err := key.ref()
	if err != nil {
		return "", 0, 0, err
	}
	if p, o, l, ok := c.disk.present(r); ok {
		c.ctr.diskHits.Add(1)
		return p, o, l, nil
	}
	c.ctr.diskMisses.Add(1)
	// "m" keeps these flights apart from Get's, which fill both tiers.
	_, _, err = c.flights.do(ctx, "m"+r.sum, func(fctx context.Context) ([]byte, error) {
		if _, _, _, ok := c.disk.present(r); ok {
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
		return "", 0, 0, err
	}
	if p, o, l, ok := c.disk.present(r); ok {
		return p, o, l, nil
	}
	c.log.Debug("cache: entry not kept on disk", "key", r.text)
	return "", 0, 0, ErrNotStored
}

// present checks r's entry without reading its payload (see Materialize)
// and returns where the payload lies. A broken entry is dropped as by get.
func (d *diskTier) present(r ref) (path string, off, n int64, ok bool) {
	p := d.path(r.name)
	h, size, err := readHeader(p, r.text)
	if err != nil {
		d.readFailed(r, p, err)
		return "", 0, 0, false
	}
	d.touch(r.name, p, size)
	return p, h.hdrLen, h.n, true
}

// readHeader reads and verifies the header of the entry file at path for
// keyText, and checks the file's size against it; errors as readEntry's.
func readHeader(path, keyText string) (header, int64, error) {
	f, err := openRead(path)
	if err != nil {
		return header{}, 0, err
	}
	defer f.close()
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
