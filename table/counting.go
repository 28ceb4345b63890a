package table

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/deltafs/deltafs/storage"
)

// Counts are what was read from a table's storage: every read, and apart
// those of data files (everything outside _delta_log/: Parquet files,
// deletion vectors), whoever read them (page fetches, index scans).
type Counts struct {
	Bytes         int64 // bytes read, log and data files
	Reads         int64 // ranged reads, log and data files
	DataFileBytes int64 // bytes read from data files
	DataFileReads int64 // ranged reads of data files
}

// countingStorage counts what is read through it (Counts), and the calls
// in progress (InFlight).
type countingStorage struct {
	storage.Storage
	bytes, reads         atomic.Int64
	dataBytes, dataReads atomic.Int64
	inFlight             atomic.Int64
}

// begin counts a call in progress until the returned function runs.
func (c *countingStorage) begin() (end func()) {
	c.inFlight.Add(1)
	return func() { c.inFlight.Add(-1) }
}

func (c *countingStorage) List(ctx context.Context, prefix, startAfter string) ([]storage.ObjectInfo, error) {
	defer c.begin()()
	return c.Storage.List(ctx, prefix, startAfter)
}

func (c *countingStorage) Stat(ctx context.Context, key string) (storage.ObjectInfo, error) {
	defer c.begin()()
	return c.Storage.Stat(ctx, key)
}

func (c *countingStorage) counts() Counts {
	return Counts{Bytes: c.bytes.Load(), Reads: c.reads.Load(), DataFileBytes: c.dataBytes.Load(), DataFileReads: c.dataReads.Load()}
}

func isLogKey(key string) bool {
	return strings.HasPrefix(key, "_delta_log/") || strings.Contains(key, "/_delta_log/")
}

func (c *countingStorage) count(key string, n int64) {
	c.bytes.Add(n)
	c.reads.Add(1)
	if !isLogKey(key) {
		c.dataBytes.Add(n)
		c.dataReads.Add(1)
	}
}

func (c *countingStorage) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	defer c.begin()()
	n, err := c.Storage.ReadAt(ctx, key, p, off)
	c.count(key, int64(n))
	return n, err
}

// ReadRanges forwards to the store's range reader (one coalescing request
// on S3), else reads each range; storage.ReadRanges finds it.
func (c *countingStorage) ReadRanges(ctx context.Context, key string, ranges []storage.Range) ([][]byte, error) {
	defer c.begin()()
	out, err := storage.ReadRanges(ctx, c.Storage, key, ranges)
	var n int64
	for _, b := range out {
		n += int64(len(b))
	}
	c.count(key, n)
	return out, err
}
