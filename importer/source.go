package importer

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/writer"
)

// Source is a table-shaped input: a schema and its rows.
type Source interface {
	writer.Rows
	// Schema is the schema of the rows.
	Schema() *snapshot.StructType
	// IDColumn names the column the writer numbers, or "" when the source
	// supplies the ids itself.
	IDColumn() string
	// Close releases the source.
	Close() error
}

var (
	_ Source = (*Npy)(nil)
	_ Source = (*ImageFolder)(nil)
)

// Options bound what an import reads.
type Options struct {
	// MaxFileSize is the largest image file an ImageFolder import reads
	// (each is read whole into memory): a larger one fails the import,
	// before any row is written, with an error matching
	// storage.ErrTooLarge. DefaultMaxFileSize when 0.
	MaxFileSize int64
}

// DefaultMaxFileSize is Options.MaxFileSize's default: 1 GiB.
const DefaultMaxFileSize = 1 << 30

func (o Options) maxFileSize() int64 {
	if o.MaxFileSize <= 0 {
		return DefaultMaxFileSize
	}
	return o.MaxFileSize
}

// Open opens path as an ImageFolder tree (a directory) or a NumPy file
// (.npy, or .npy gzipped: detected by content, not name). ctx bounds the
// listing of a tree and, for an ImageFolder, every later read.
func Open(ctx context.Context, path string, opts Options) (Source, error) {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("source %s does not exist", path)
		}
		return nil, fmt.Errorf("source: %w", err)
	}
	if fi.IsDir() {
		return OpenImageFolder(ctx, path, opts)
	}
	if err := storage.CheckRegular(fi.Mode()); err != nil {
		// Never opened: a named pipe would block, a device never end.
		return nil, fmt.Errorf("source %s: %w (want an ImageFolder directory or a .npy / .npy.gz file)", path, err)
	}
	ok, err := isNpy(path)
	if err != nil {
		return nil, fmt.Errorf("source %w", err)
	}
	if !ok {
		return nil, fmt.Errorf("source %s: unknown kind (want an ImageFolder directory or a .npy / .npy.gz file)", path)
	}
	return OpenNpy(path)
}

// isNpy reports whether the file starts with the .npy magic, directly or
// after gzip decompression.
func isNpy(path string) (bool, error) {
	f, err := storage.OpenLocalFile(path)
	if err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	head, _ := r.Peek(len(npyMagic))
	if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return false, nil
		}
		head = make([]byte, len(npyMagic))
		n, _ := io.ReadFull(gz, head)
		head = head[:n]
	}
	return string(head) == npyMagic, nil
}

// Import writes every row of src as one new version of the table at st
// (created when missing). opts.IDColumn is set from the source.
func Import(ctx context.Context, st storage.Storage, src Source, opts writer.Options) (*writer.Result, error) {
	opts.IDColumn = src.IDColumn()
	return writer.Write(ctx, st, src.Schema(), src, opts)
}
