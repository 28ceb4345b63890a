package remote

import (
	"bytes"
	"context"
	"errors"
	"io"

	"github.com/deltafs/deltafs/storage"
)

// ErrInvalidRange marks a refused range (HTTP 416) of an unpinned read:
// the range starts at or after the end of the object.
var ErrInvalidRange = errors.New("range not satisfiable")

// Pinned is what ReadPinned asks of a store for one key.
type Pinned struct {
	Pins    *Pins[Pin]
	Key     string
	Mutable bool // the key is not pinned (Options.Mutable)
	// Get reads [off, off+len(dst)) into dst with one ranged GET, retried.
	// With p it must match the pin and fill dst; without, it returns the
	// identity in the response and the object may end before dst is full.
	// An unpinned range at or past the end fails wrapping ErrInvalidRange.
	Get func(ctx context.Context, off int64, dst []byte, p *Pin) (n int, seen Pin, err error)
	// Meta fetches the identity with a metadata request (HEAD, Get Blob
	// Properties) and MetaOp names that request.
	Meta   func(ctx context.Context) (Pin, error)
	MetaOp string
	GetOp  string
	// Changed is the store's ErrChanged for op, why in words.
	Changed func(op, why string) error
	// Refused is the error when a range at off is refused although the
	// object (as the metadata says) has size bytes.
	Refused func(off, size int64, err error) error
}

// setPin pins p (unless the key is mutable), or fails with Changed when
// another identity is pinned already.
func (r Pinned) setPin(op string, p Pin) error {
	if why := PinETag(r.Pins, r.Key, p, r.Mutable); why != "" {
		return r.Changed(op, why)
	}
	return nil
}

// Stat implements storage.Storage's Stat: a pinned key is answered from
// the pin without a request; otherwise the metadata request pins it.
func (r Pinned) Stat(ctx context.Context) (storage.ObjectInfo, error) {
	if p, ok := r.Pins.Get(r.Key); ok {
		return p.Info(r.Key), nil
	}
	p, err := r.Meta(ctx)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	if err := r.setPin(r.MetaOp, p); err != nil {
		return storage.ObjectInfo{}, err
	}
	return p.Info(r.Key), nil
}

// ReadPinned implements storage.Storage's ReadAt over a pinned identity.
// The first read of an unpinned key pins the identity in its response
// (or, when the range is refused, from a metadata request); later reads
// go through the pin, reading no more than it holds.
func ReadPinned(ctx context.Context, r Pinned, p []byte, off int64) (int, error) {
	for tries := 0; ; tries++ {
		if pn, ok := r.Pins.Get(r.Key); ok {
			if len(p) == 0 {
				return 0, nil
			}
			if off >= pn.Size {
				return 0, io.EOF
			}
			n := int(min(int64(len(p)), pn.Size-off))
			if _, _, err := r.Get(ctx, off, p[:n], &pn); err != nil {
				return 0, err
			}
			if n < len(p) {
				return n, io.EOF
			}
			return n, nil
		}
		if len(p) == 0 {
			_, err := r.Stat(ctx)
			return 0, err
		}
		n, seen, err := r.Get(ctx, off, p, nil)
		if errors.Is(err, ErrInvalidRange) {
			// off is at or past the end (or the object is empty): learn
			// the size, and pin it, from the metadata.
			p2, merr := r.Meta(ctx)
			if merr != nil {
				return 0, merr
			}
			if perr := r.setPin(r.MetaOp, p2); perr != nil {
				return 0, perr
			}
			if off >= p2.Size {
				return 0, io.EOF
			}
			if tries > 0 || r.Mutable {
				return 0, r.Refused(off, p2.Size, err)
			}
			continue // the object grew between the GET and the metadata: read through the pin
		}
		if err != nil {
			return 0, err
		}
		if perr := r.setPin(r.GetOp, seen); perr != nil {
			return 0, perr
		}
		if n < len(p) {
			return n, io.EOF
		}
		return n, nil
	}
}

// Holds reports whether the key holds exactly data, read without pinning
// (a conditional put that may have succeeded on an earlier attempt).
func (r Pinned) Holds(ctx context.Context, data []byte) (bool, error) {
	if len(data) == 0 {
		p, err := r.Meta(ctx)
		return err == nil && p.Size == 0, err
	}
	buf := make([]byte, len(data)+1)
	n, seen, err := r.Get(ctx, 0, buf, nil)
	if err != nil {
		return false, err
	}
	return n == len(data) && seen.Size == int64(len(data)) && bytes.Equal(buf[:n], data), nil
}

// ReadRanges implements storage.RangeReader's ReadRanges over the pin:
// neighbouring ranges are merged as c says (storage.ReadCoalesced) and
// the merged GETs run in parallel, each read like ReadPinned. An unpinned
// key read with more than one GET is pinned first (with the metadata
// request), so that every GET sends If-Match and bytes of two versions
// are never mixed. Ranges served by another range's GET are counted in
// st.Coalesced.
func (r Pinned) ReadRanges(ctx context.Context, loc string, ranges []storage.Range, c storage.Coalescing, st *Counters) ([][]byte, error) {
	out, coalesced, err := storage.ReadCoalesced(ctx, loc, r.Key, ranges, c,
		func(requests int) error {
			if _, ok := r.Pins.Get(r.Key); !ok && requests > 1 && !r.Mutable {
				_, err := r.Stat(ctx)
				return err
			}
			return nil
		},
		func(ctx context.Context, off int64, buf []byte) (int, error) { return ReadPinned(ctx, r, buf, off) })
	st.Coalesced.Add(int64(coalesced))
	return out, err
}
