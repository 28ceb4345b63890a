package page

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/storage"
)

// Values larger than SpillAbove are decoded once, then read in part from
// their spill file: exact bytes at every offset, nulls and the end as 0
// bytes, and exact again after the spill budget evicted them (with reads
// in flight on other goroutines).
func TestValueAtSpills(t *testing.T) {
	const size = 3 << 20
	rng := rand.NewChaCha8([32]byte{2})
	big := func(n int) []byte { b := make([]byte, n); _, _ = rng.Read(b); return b }
	// Two data files, a page each: a's holds a large value, a null and a
	// small one, b's a large value.
	files := map[string][]testkit.BlobRow{
		"a": {{ID: 0, Data: big(size)}, {ID: 1, Data: nil}, {ID: 2, Data: []byte("small")}},
		"b": {{ID: 0, Data: big(size + 12345)}},
	}
	root := t.TempDir()
	st, err := storage.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	// A memory cache smaller than a page, and room for one spilled page:
	// reading the two large values in turn evicts one for the other.
	p := NewFetcher(st, Options{Cache: NewMemCache(1 << 20), SpillAbove: 1 << 20, SpillDir: t.TempDir(), SpillBytes: size + size/2})
	ctx := context.Background()
	refs := map[string]FileRef{}
	for name, rows := range files {
		if err := testkit.WriteBlobTable(filepath.Join(root, name), testkit.BlobSchema, rows); err != nil {
			t.Fatal(err)
		}
		key := name + "/part-00000.parquet"
		info, err := os.Stat(filepath.Join(root, key))
		if err != nil {
			t.Fatal(err)
		}
		if refs[name], err = p.Identify(ctx, FileRef{Path: key, Key: key, Size: info.Size()}); err != nil {
			t.Fatal(err)
		}
	}
	readAll := func(file string, row int64, chunk int) []byte {
		ref := refs[file]
		var out []byte
		buf := make([]byte, chunk)
		for off := int64(0); ; off += int64(chunk) {
			n, err := p.ValueAt(ctx, ref, "data", row, buf, off)
			if err != nil {
				t.Errorf("%s row %d at %d: %v", file, row, off, err)
				return nil
			}
			if n == 0 {
				return out
			}
			out = append(out, buf[:n]...)
		}
	}
	decodes := p.Stats().PagesDecoded
	if got := readAll("a", 0, 64<<10); !bytes.Equal(got, files["a"][0].Data) {
		t.Fatalf("row 0: %d bytes, want %d", len(got), size)
	}
	if d := p.Stats().PagesDecoded - decodes; d != 1 || p.Stats().PagesSpilled != 1 {
		t.Fatalf("48 reads of a 3 MiB value decoded %d pages, spilled %d: want 1 and 1", d, p.Stats().PagesSpilled)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3 {
				file := []string{"a", "b"}[(g+i)%2]
				if got := readAll(file, 0, 1<<20+7); !bytes.Equal(got, files[file][0].Data) {
					t.Errorf("%s row 0: %d bytes differ", file, len(got))
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for _, row := range []int64{1, 2} {
		if got := readAll("a", row, 1<<20); !bytes.Equal(got, files["a"][row].Data) {
			t.Fatalf("row %d: %q, want %q", row, got, files["a"][row].Data)
		}
	}
	if s := p.Stats(); s.PagesSpilled < 3 {
		t.Fatalf("%d pages spilled: the two pages did not evict each other", s.PagesSpilled)
	}
}
