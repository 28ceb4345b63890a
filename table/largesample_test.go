package table

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/deltafs/deltafs/cache"
	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/sample"
)

// A sample larger than the memory cache (4 MiB: pages past 1 MiB spill)
// is decoded a bounded number of times
// however it is read in small reads: as its file, and as its member of
// the shard's tar view; the bytes are the value's.
func TestLargeSampleDecodedOnce(t *testing.T) {
	value := make([]byte, 20<<20)
	_, _ = rand.NewChaCha8([32]byte{3}).Read(value)
	dir := filepath.Join(t.TempDir(), "t")
	rows := []testkit.BlobRow{{ID: 1, Data: []byte("small")}, {ID: 2, Data: value}}
	if err := testkit.WriteBlobTable(dir, testkit.BlobSchema, rows); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tb, err := Open(ctx, Options{Location: dir, Spec: &sample.Spec{DataColumn: "data"}, Cache: cache.Options{MemBytes: 4 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	ver, err := tb.Samples.Version(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := ver.Shard(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	indexed := tb.Fetcher.Stats().PagesDecoded
	pos, ok := sh.Lookup("2.bin", -1)
	if !ok {
		t.Fatalf("no 2.bin in %q", sh.List())
	}
	var got []byte
	buf := make([]byte, 128<<10)
	for off := int64(0); ; off += int64(len(buf)) {
		n, err := sh.ReadAt(ctx, pos, buf, off)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		got = append(got, buf[:n]...)
	}
	if !bytes.Equal(got, value) {
		t.Fatalf("sample: %d bytes, not the value's %d", len(got), len(value))
	}
	var archive []byte
	for off := int64(0); off < sh.Tar().Size(); off += int64(len(buf)) {
		n, err := sh.Tar().ReadAt(ctx, buf, off)
		if err != nil {
			t.Fatal(err)
		}
		archive = append(archive, buf[:n]...)
	}
	tr := tar.NewReader(bytes.NewReader(archive))
	members := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		members[h.Name], _ = io.ReadAll(tr)
	}
	if !bytes.Equal(members["2.bin"], value) || string(members["1.bin"]) != "small" {
		t.Fatalf("tar members %d and %q", len(members["2.bin"]), members["1.bin"])
	}
	// 320 reads of 128 KiB (160 as the file, 160 of the tar): one decode
	// (the first read's, which spills the page), not one per read.
	if d := tb.Fetcher.Stats().PagesDecoded - indexed; d > 1 {
		t.Fatalf("%d pages decoded by the reads", d)
	}
}
