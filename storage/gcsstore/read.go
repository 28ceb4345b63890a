package gcsstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	gcs "cloud.google.com/go/storage"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/remote"
)

// pin is the identity of an object as first seen: its generation (GCS
// gives every write of an object a new one) and size.
type pin struct {
	gen  int64
	size int64
	mod  time.Time
}

func (p pin) info(key string) storage.ObjectInfo {
	return storage.ObjectInfo{Key: key, Size: p.size, ModTime: p.mod, ETag: strconv.FormatInt(p.gen, 10)}
}

// setPin records key's identity unless the key is mutable, and returns
// the pinned one (the first seen wins a race).
func (s *Store) setPin(key string, p pin) pin {
	if s.opts.Mutable(key) {
		return p
	}
	p, _ = s.pins.Keep(key, p)
	return p
}

// Stat implements storage.Storage with one object metadata request. The
// first Stat or read of a key pins its generation and size; a pinned key
// is answered from the pin without a request. ETag is the generation.
func (s *Store) Stat(ctx context.Context, key string) (storage.ObjectInfo, error) {
	p, err := s.identity(ctx, key)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	return p.info(key), nil
}

// identity is key's pin, or its current generation and size (then pinned).
func (s *Store) identity(ctx context.Context, key string) (pin, error) {
	if err := remote.CheckKey("gcs", key); err != nil {
		return pin{}, err
	}
	if p, ok := s.pins.Get(key); ok {
		return p, nil
	}
	octx, st, done := s.withOp(ctx, "stat", key)
	defer done()
	a, err := s.bucket.Object(s.fullKey(key)).Attrs(octx)
	if err != nil {
		return pin{}, s.classify(ctx, "stat", key, err, int(st.Attempts.Load()))
	}
	return s.setPin(key, pin{gen: a.Generation, size: a.Size, mod: a.Updated}), nil
}

// ReadAt implements storage.Storage with one ranged read of the pinned
// generation (its identity comes from Stat when not pinned yet). A
// generation that no longer exists, or an answer of another size, fails
// with an error wrapping storage.ErrChanged: bytes of two versions of an
// object are never mixed. The body must hold exactly the bytes asked for;
// a body cut short is reopened at the byte it stopped (Google's SDK),
// within the attempt budget, and is never returned as data.
func (s *Store) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%s/%s: negative offset %d", s.loc, key, off)
	}
	pn, err := s.identity(ctx, key)
	if err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if off >= pn.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), pn.size-off))
	if err := s.read(ctx, key, pn, off, p[:n]); err != nil {
		return 0, err
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (s *Store) read(ctx context.Context, key string, pn pin, off int64, dst []byte) error {
	octx, st, done := s.withOp(ctx, "read", key)
	defer done()
	obj := s.bucket.Object(s.fullKey(key)).Generation(pn.gen)
	r, err := obj.NewRangeReader(octx, off, int64(len(dst)))
	if err != nil {
		if errors.Is(err, gcs.ErrObjectNotExist) {
			return errChanged(s, key, fmt.Sprintf("generation %d no longer exists (the object was replaced or deleted)", pn.gen))
		}
		if httpCode(err) == 416 {
			return errChanged(s, key, fmt.Sprintf("range at %d of a %d-byte object refused", off, pn.size))
		}
		return s.classify(ctx, "read", key, err, int(st.Attempts.Load()))
	}
	defer r.Close()
	if r.Attrs.Size != pn.size || (r.Attrs.Generation > 0 && r.Attrs.Generation != pn.gen) {
		return errChanged(s, key, fmt.Sprintf("pinned generation %d of %d bytes, got generation %d of %d bytes", pn.gen, pn.size, r.Attrs.Generation, r.Attrs.Size))
	}
	if rem := r.Remain(); rem != int64(len(dst)) {
		return errChanged(s, key, fmt.Sprintf("asked for %d bytes at %d, the answer holds %d", len(dst), off, rem))
	}
	got, err := io.ReadFull(r, dst)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return s.classify(ctx, "read", key, &remote.BodyError{Want: int64(len(dst)), Got: int64(got), Err: err}, int(st.Attempts.Load()))
	}
	return nil
}

// ReadRanges reads several ranges of one object and returns their bytes in
// the order given, coalescing neighbours (storage.ReadCoalesced with
// Options.CoalesceGap and MaxCoalesce) into reads that run in parallel.
// Every range must lie within the object (else an error wrapping
// io.ErrUnexpectedEOF); the object's generation is pinned first.
func (s *Store) ReadRanges(ctx context.Context, key string, ranges []storage.Range) ([][]byte, error) {
	if err := remote.CheckKey("gcs", key); err != nil {
		return nil, err
	}
	out, coalesced, err := storage.ReadCoalesced(ctx, s.loc, key, ranges,
		storage.Coalescing{Gap: s.opts.CoalesceGap, Max: s.opts.MaxCoalesce},
		func(requests int) error {
			if requests == 0 {
				return nil
			}
			_, err := s.identity(ctx, key)
			return err
		},
		func(ctx context.Context, off int64, buf []byte) (int, error) { return s.ReadAt(ctx, key, buf, off) })
	s.st.Coalesced.Add(int64(coalesced))
	return out, err
}

var (
	_ storage.Storage     = (*Store)(nil)
	_ storage.RangeReader = (*Store)(nil)
	_ io.Closer           = (*Store)(nil)
)
