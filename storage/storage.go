// Package storage is the one door deltafs uses to reach a table's bytes: list
// a prefix, stat an object, read a byte range, and put an object (optionally
// only if it does not exist yet). Everything above it (log replay, the sample
// layer, the cache) speaks in keys relative to the table root, with '/' as the
// separator, whatever the backend.
//
// Backends: Local (a directory) here; storage/s3store (s3://),
// storage/azstore (abfss://, az://, wasbs://) and storage/gcsstore (gs://)
// register their schemes with Register, and Open picks one by the
// location's scheme.
//
// # Contract
//
//   - Keys are relative to the table root and never start with '/'.
//   - List returns the objects whose key starts with prefix and sorts strictly
//     after startAfter ("" for all), in ascending byte order of key. It does not
//     recurse into "directories" differently from S3: a key "a/b/c" is listed
//     under the prefix "a/".
//   - Errors wrap ErrNotExist when the object (or table root) is missing,
//     ErrExist when a conditional put lost, ErrChanged when an object's
//     identity changed after it was first read (or, locally, while it was
//     read), and ErrNotRegular when a local key is not a regular file.
//     Other errors are I/O faults. Every error names the key.
//   - A done context ends every method promptly with an error matching
//     the context's error.
//   - All methods are safe for concurrent use.
//
// # Local tables
//
// Local keeps a table in a directory. A directory may hold what an object
// store cannot: named pipes, sockets, devices, symbolic links. Local never
// blocks on them and never reads them:
//
//   - List lists every entry that is not a directory, whatever its kind, so
//     that nothing disappears silently from a listing (a named pipe where a
//     commit should be is a visible, failing commit, not a missing
//     version). A symbolic link is listed with its target's size and time;
//     directories are not objects (as on S3) and are walked, not listed;
//     symbolic links to directories are neither walked nor listed.
//   - Stat and ReadAt follow symbolic links and refuse anything but a
//     regular file with an error wrapping ErrNotRegular that names the key
//     and the kind: "_delta_log/00000000000000000001.json: not a regular
//     file (named pipe)". A symbolic link to /dev/zero is a character
//     device. A device is refused before it is opened; every open is
//     non-blocking, so a file swapped for a named pipe in between still
//     returns at once (and is refused by fstat).
//   - A read never goes past the size the file had when it was opened, and
//     a file that shrinks, or whose size or modification time changes,
//     while it is read fails with ErrChanged rather than mix two contents.
//   - Put writes a temporary file in the key's directory, then links it
//     into place (ifAbsent) or renames it over the key, so a reader never
//     sees a partial object. Files are created with mode 0666 and
//     directories with 0777, less the process umask, as any tool would.
//   - Close (a mount closes its storage as it unmounts) stops reads in
//     flight at their next chunk and fails every later call.
//
// ReadLocalFile and OpenLocalFile give other local reads (an import's
// source files) the same guarantees.
//
// # Object stores
//
// Backends for URLs register their scheme (Register), each configured by
// its part of Options. What they share lives here: coalesced ranged reads
// (ReadCoalesced: neighbouring ranges become one request), table-wide
// errors (IsTableWide), and the conformance suite
// every backend passes (storage/storagetest).
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
	// ErrNotRegular: a local key is a named pipe, socket, device or
	// directory (after following symbolic links), which Local never reads.
	ErrNotRegular = errors.New("not a regular file")
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

// CatalogLog is implemented by a Storage opened through its table's
// catalog (catalog/unity). CatalogLog reports whether it presents the
// log as the catalog has it (a catalog-managed table: the catalog's
// ratified commits under their _delta_log names, nothing past the
// catalog's latest version) and, when it does not, why (for the refusal
// of a catalog-managed log). Log replay accepts the catalogManaged reader
// feature only from a storage that presents the catalog's log.
type CatalogLog interface {
	CatalogLog() (presented bool, why string)
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
// when the object is shorter. A read error is returned as the store gave
// it (it names the key), even when every byte was counted.
func ReadRange(ctx context.Context, st Storage, key string, off, n int64) ([]byte, error) {
	buf := make([]byte, n)
	got, err := st.ReadAt(ctx, key, buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		// Also with every byte counted: a read of 0 bytes of a named
		// pipe is an error, not an empty object.
		return nil, err
	}
	if int64(got) == n {
		return buf, nil
	}
	return nil, fmt.Errorf("%s: read %d bytes at %d: %w", key, n, off, io.ErrUnexpectedEOF)
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
// object in fewer requests than ranges, coalescing neighbours (s3store,
// azstore: see ReadCoalesced).
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
