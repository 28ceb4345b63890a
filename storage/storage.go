// Package storage is the one door deltafs uses to reach a table's bytes: list
// a prefix, stat an object, read a byte range, and put an object (optionally
// only if it does not exist yet). Everything above it (log replay, the sample
// layer, the cache) speaks in keys relative to the table root, with '/' as the
// separator, whatever the backend.
//
// # Contract
//
//   - Keys are relative to the table root and never start with '/'.
//   - List returns the objects whose key starts with prefix and sorts strictly
//     after startAfter ("" for all), in ascending byte order of key. It does not
//     recurse into "directories" differently from S3: a key "a/b/c" is listed
//     under the prefix "a/".
//   - Errors wrap ErrNotExist when the object (or table root) is missing,
//     ErrExist when a conditional put lost, and ErrChanged when an object's
//     identity changed after it was first read. Other errors are I/O faults.
//   - All methods are safe for concurrent use.
package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Sentinel errors. Backends wrap them, so test with errors.Is.
var (
	ErrNotExist = errors.New("object does not exist")
	ErrExist    = errors.New("object already exists")
	ErrChanged  = errors.New("object changed since it was first read")
)

// ObjectInfo describes one stored object.
type ObjectInfo struct {
	Key     string    // relative to the table root
	Size    int64     // bytes
	ModTime time.Time // last modification time
	ETag    string    // backend identity tag; "" where the backend has none
}

// Storage reaches the objects of one table.
type Storage interface {
	// List returns the objects under prefix whose key sorts after startAfter,
	// in ascending key order.
	List(ctx context.Context, prefix, startAfter string) ([]ObjectInfo, error)
	// Stat describes one object.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// ReadAt reads len(p) bytes at offset off. It returns io.EOF (with the
	// count read) when the object ends before p is full, like io.ReaderAt.
	ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error)
	// Put stores data under key. With ifAbsent it fails with ErrExist when
	// the key already exists, atomically with respect to other writers.
	Put(ctx context.Context, key string, data []byte, ifAbsent bool) error
	// Location is the table's location as the user gave it (path or URL),
	// for messages. It never contains credentials.
	Location() string
}

// IsTableWide reports whether err is about the table as a whole rather
// than one object: its bucket is missing, its credentials are refused.
// Backends mark such errors with a TableWide() bool method. A missing
// table-wide resource must not read as a missing object (an empty log).
func IsTableWide(err error) bool {
	var tw interface{ TableWide() bool }
	return errors.As(err, &tw) && tw.TableWide()
}

// ReadAll reads a whole object.
func ReadAll(ctx context.Context, st Storage, key string) ([]byte, error) {
	info, err := st.Stat(ctx, key)
	if err != nil {
		return nil, err
	}
	return ReadRange(ctx, st, key, 0, info.Size)
}

// ReadRange reads exactly n bytes at off, failing with io.ErrUnexpectedEOF
// when the object is shorter.
func ReadRange(ctx context.Context, st Storage, key string, off, n int64) ([]byte, error) {
	buf := make([]byte, n)
	got, err := st.ReadAt(ctx, key, buf, off)
	if int64(got) == n {
		return buf, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return nil, fmt.Errorf("%s: read %d bytes at %d: %w", key, n, off, err)
}

// ReaderAt adapts one object to io.ReaderAt (for parquet-go), binding ctx.
func ReaderAt(ctx context.Context, st Storage, key string) io.ReaderAt {
	return readerAt{ctx: ctx, st: st, key: key}
}

type readerAt struct {
	ctx context.Context
	st  Storage
	key string
}

func (r readerAt) ReadAt(p []byte, off int64) (int, error) {
	return r.st.ReadAt(r.ctx, r.key, p, off)
}

// Range is a byte range of an object: Len bytes at Off.
type Range struct {
	Off, Len int64
}

// RangeReader is implemented by stores that read several ranges of one
// object in fewer requests than ranges, coalescing neighbours (s3store).
// ReadRanges returns the bytes of each range, in the order given.
type RangeReader interface {
	ReadRanges(ctx context.Context, key string, ranges []Range) ([][]byte, error)
}

// ReadRanges reads ranges of key through st's RangeReader when it has one,
// else one ReadAt per range.
func ReadRanges(ctx context.Context, st Storage, key string, ranges []Range) ([][]byte, error) {
	if rr, ok := st.(RangeReader); ok {
		return rr.ReadRanges(ctx, key, ranges)
	}
	out := make([][]byte, len(ranges))
	for i, r := range ranges {
		b, err := ReadRange(ctx, st, key, r.Off, r.Len)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}
