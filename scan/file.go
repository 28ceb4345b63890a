package scan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/internal/pqcheck"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
)

// FileReader is one opened data file of a snapshot: its Parquet footer
// (schema, row groups, page index) read once. It reads rows, finds the
// leaf column of a field, and reads single pages through the offset index.
// Safe for concurrent use: every read binds its own context.
type FileReader struct {
	st      storage.Storage
	key     string // storage key
	path    string // as the log writes it, for errors
	version int64
	mode    string // column mapping mode
	file    *parquet.File
	pq      *pqcheck.File  // file's checked footer
	tz      *time.Location // for partition timestamps without a zone

	snap *snapshot.Snapshot // nil for a bare Parquet file (tests)
	add  *snapshot.AddFile
}

// openOptions are the parquet-go options for data files: no bloom
// filters (the footer and page index are read and checked before, see
// openParquet).
func openOptions() []parquet.FileOption {
	return []parquet.FileOption{parquet.SkipBloomFilters(true)}
}

// OpenFile opens data file f of snap, reading its Parquet footer. Errors
// are *FileError values; a vacuumed file's wraps storage.ErrNotExist.
func OpenFile(ctx context.Context, snap *snapshot.Snapshot, f *snapshot.AddFile) (*FileReader, error) {
	return openFile(ctx, snap, f, nil)
}

// tailFunc is Options.Tail: nil reads the tail from storage.
type tailFunc = func(ctx context.Context, key string, size int64) ([]byte, int64, error)

// openFile is OpenFile with the tail from tailOf when it is set.
func openFile(ctx context.Context, snap *snapshot.Snapshot, f *snapshot.AddFile, tailOf tailFunc) (*FileReader, error) {
	key, err := snap.FileKey(f.Path)
	if err != nil {
		return nil, fileErr(snap.Version, f.Path, err)
	}
	r, err := openParquet(ctx, snap.Table.Storage(), key, f.Size, snap.Version, f.Path, tailOf)
	if err != nil {
		return nil, err
	}
	r.snap, r.add, r.mode = snap, f, snap.ColumnMappingMode()
	return r, nil
}

// FileRowCount is the physical row count of data file f from its Parquet
// footer, for files whose statistics lack numRecords.
func FileRowCount(ctx context.Context, snap *snapshot.Snapshot, f *snapshot.AddFile) (int64, error) {
	r, err := OpenFile(ctx, snap, f)
	if err != nil {
		return 0, err
	}
	return r.NumRows(), nil
}

// FooterRows counts rows from Parquet footers in st, for
// snapshot.Log.History on tables whose adds lack numRecords.
func FooterRows(st storage.Storage) snapshot.FileRows {
	return func(ctx context.Context, key string, size int64) (int64, error) {
		r, err := openParquet(ctx, st, key, size, -1, key, nil)
		if err != nil {
			var fe *FileError
			if errors.As(err, &fe) {
				return 0, fe.Err // History names the version and file
			}
			return 0, err
		}
		return r.NumRows(), nil
	}
}

// openParquet opens a Parquet object; size <= 0 means unknown. Its tail
// comes from tailOf when set (Options.Tail), else from storage.
func openParquet(ctx context.Context, st storage.Storage, key string, size, version int64, path string, tailOf tailFunc) (r *FileReader, err error) {
	defer func() {
		if err != nil {
			err = fileErr(version, path, err)
		}
	}()
	if size <= 0 {
		info, err := st.Stat(ctx, key)
		if errors.Is(err, storage.ErrNotExist) {
			return nil, errMissing
		}
		if err != nil {
			return nil, err
		}
		size = info.Size
	}
	// The file keeps its reader for lazy reads after open (indexes it
	// did not load): those must not fail for the open's context being
	// done, so the reader's context loses its cancellation after open.
	or := &objectReader{st: st, key: key}
	or.ctx.Store(&ctx)
	rec := &ioRecorder{r: or}
	defer func() {
		detached := context.WithoutCancel(ctx)
		or.ctx.Store(&detached)
	}()
	// The footer and page index, read with one read of the file's end
	// (more only for large ones) and checked before parquet-go parses
	// them: it allocates what they claim. parquet-go then reads them from
	// memory (the magic bytes at the start from storage, unless the tail
	// holds them).
	var tail []byte
	var off int64
	var pq *pqcheck.File
	if tailOf != nil {
		// Checked again: whoever kept it, parquet-go parses only a
		// checked tail.
		if tail, off, err = tailOf(ctx, key, size); err == nil {
			pq, err = pqcheck.Tail(tail, off, size)
		} else if errors.Is(err, storage.ErrNotExist) && !storage.IsTableWide(err) {
			return nil, errMissing
		}
	} else {
		tail, off, pq, err = pqcheck.ReadTail(rec, size)
	}
	if err != nil {
		return nil, rec.cause(err)
	}
	staged := &pqcheck.Staged{Rest: rec}
	staged.Add(off, tail)
	pf, err := openRecovered(staged, size)
	if err != nil {
		return nil, rec.cause(err)
	}
	return &FileReader{st: st, key: key, path: path, version: version, mode: "none", file: pf, pq: pq, tz: time.UTC}, nil
}

func openRecovered(r io.ReaderAt, size int64) (pf *parquet.File, err error) {
	defer recoverParquet(&err)
	return parquet.OpenFile(r, size, openOptions()...)
}

// supportedCodecs are the compression codecs parquet-go decodes.
var supportedCodecs = map[format.CompressionCodec]bool{
	format.Uncompressed: true,
	format.Snappy:       true,
	format.Gzip:         true,
	format.Brotli:       true,
	format.Zstd:         true,
	format.Lz4Raw:       true,
}

// checkCodecs fails when a chunk of one of the leaf columns is compressed
// with a codec parquet-go cannot decode (LZO, Hadoop-framed LZ4).
func checkCodecs(pf *parquet.File, leaves []*parquet.Column) error {
	for _, rg := range pf.Metadata().RowGroups {
		for _, l := range leaves {
			if i := l.Index(); i < len(rg.Columns) {
				if c := rg.Columns[i].MetaData.Codec; !supportedCodecs[c] {
					return fmt.Errorf("column %s: unsupported compression codec %s", colPath(l), c)
				}
			}
		}
	}
	return nil
}

// objectReader is an io.ReaderAt over one storage object whose context
// can change.
type objectReader struct {
	st  storage.Storage
	key string
	ctx atomic.Pointer[context.Context]
}

func (o *objectReader) ReadAt(p []byte, off int64) (int, error) {
	return o.st.ReadAt(*o.ctx.Load(), o.key, p, off)
}

// NumRows is the physical row count of the file (its footer's).
func (r *FileReader) NumRows() int64 { return r.file.NumRows() }

// Parquet is the opened Parquet file, for page-level access.
func (r *FileReader) Parquet() *parquet.File { return r.file }

// err wraps an error as a *FileError naming this file.
func (r *FileReader) err(err error) error { return fileErr(r.version, r.path, err) }

// column finds the top-level column of a logical field; nil when the file
// does not have it.
func (r *FileReader) column(field *snapshot.StructField) *parquet.Column {
	res := resolver{mode: r.mode}
	return res.child(r.file.Root(), field)
}

// ColumnLeaf returns the Parquet leaf column holding field, a top-level
// primitive field of the table: its Index() is the column chunk index in
// every row group. It returns nil (and no error) when the file does not
// have the column: a column added after the file was written reads as
// null. Partition columns and nested fields are errors.
func (r *FileReader) ColumnLeaf(field snapshot.StructField) (*parquet.Column, error) {
	if r.isPartition(field.Name) {
		return nil, r.err(fmt.Errorf("column %q is a partition column: its values are in the log", field.Name))
	}
	col := r.column(&field)
	if col == nil {
		return nil, nil
	}
	if _, ok := field.Type.(*snapshot.PrimitiveType); !ok || !col.Leaf() || col.Repeated() {
		return nil, r.err(fmt.Errorf("column %q is not a primitive column", field.Name))
	}
	return col, nil
}

func (r *FileReader) isPartition(name string) bool {
	if r.snap == nil {
		return false
	}
	for _, p := range r.snap.Metadata.PartitionColumns {
		if p == name {
			return true
		}
	}
	return false
}
