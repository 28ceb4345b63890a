package gds

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/deltafs/deltafs/extents"
)

// BenchOptions configures Bench.
type BenchOptions struct {
	Batch  int  // extents per ReadBatch; default 64
	Repeat int  // passes over the extents; default 1
	Cold   bool // drop the files' page cache (POSIX_FADV_DONTNEED) before each pass
	Verify bool // compare every sample with a plain pread of the file (not timed)
}

// BenchResult is the outcome of Bench.
type BenchResult struct {
	Path     Path          // slowest path any batch took
	Samples  int64         // extents read, over all passes
	Bytes    int64         // bytes read, over all passes
	Elapsed  time.Duration // time spent in ReadBatch
	Verified int64         // samples compared with the file (Verify)
}

// GBps returns the throughput in GB/s (10^9 bytes per second).
func (b BenchResult) GBps() float64 {
	if b.Elapsed <= 0 {
		return 0
	}
	return float64(b.Bytes) / b.Elapsed.Seconds() / 1e9
}

// SamplesPerSec returns samples read per second.
func (b BenchResult) SamplesPerSec() float64 {
	if b.Elapsed <= 0 {
		return 0
	}
	return float64(b.Samples) / b.Elapsed.Seconds()
}

// Bench reads exts with r, in batches of o.Batch extents into one buffer
// from r.Alloc (device memory, or host memory on the host path), and
// times the ReadBatch calls. Run it once with a ModeAuto reader and once
// with a ModeHost reader to compare GDS with plain pread into host memory.
func Bench(ctx context.Context, r *Reader, exts []extents.Extent, o BenchOptions) (BenchResult, error) {
	if o.Batch <= 0 {
		o.Batch = 64
	}
	if o.Repeat <= 0 {
		o.Repeat = 1
	}
	res := BenchResult{Path: r.Path()}
	var maxSize int64
	for i := 0; i < len(exts); i += o.Batch {
		_, size := r.BatchLayout(exts[i:min(i+o.Batch, len(exts))])
		maxSize = max(maxSize, size)
	}
	buf, err := r.Alloc(maxSize)
	if err != nil {
		return res, err
	}
	defer r.Free(buf)
	var files []string
	seen := map[string]bool{}
	for _, e := range exts {
		if !seen[e.Path] {
			seen[e.Path] = true
			files = append(files, e.Path)
		}
	}
	for pass := 0; pass < o.Repeat; pass++ {
		if o.Cold {
			for _, f := range files {
				if err := dropPageCache(f); err != nil {
					return res, fmt.Errorf("dropping the page cache: %w", err)
				}
			}
		}
		for i := 0; i < len(exts); i += o.Batch {
			batch := exts[i:min(i+o.Batch, len(exts))]
			start := time.Now()
			br, err := r.ReadBatch(ctx, batch, buf)
			res.Elapsed += time.Since(start)
			if err != nil {
				return res, fmt.Errorf("batch of samples %d to %d: %w", i, i+len(batch)-1, err)
			}
			res.Path = min(res.Path, br.Path())
			res.Samples += int64(len(batch))
			res.Bytes += br.Bytes
			if o.Verify {
				if err := verifyBatch(r, batch, buf, br.Offsets); err != nil {
					return res, err
				}
				res.Verified += int64(len(batch))
			}
		}
	}
	return res, nil
}

// verifyBatch compares each extent in buf with the file's bytes.
func verifyBatch(r *Reader, exts []extents.Extent, buf DeviceBuffer, offsets []int64) error {
	files := map[string]*os.File{}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for i, e := range exts {
		f := files[e.Path]
		if f == nil {
			var err error
			if f, err = os.Open(e.Path); err != nil {
				return fmt.Errorf("verify: %w", err)
			}
			files[e.Path] = f
		}
		want := make([]byte, e.Length)
		if err := preadFull(f, want, e, 0); err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		got := make([]byte, e.Length)
		if err := r.CopyToHost(got, buf, offsets[i]); err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("verify: extent %s: bytes read by the %v path differ from the file", e, r.Path())
		}
	}
	return nil
}
