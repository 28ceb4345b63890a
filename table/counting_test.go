package table

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/deltafs/deltafs/storage"
)

// TestCountingStorage: every read of a data file counts as a data-file
// read, whoever reads it and whether by ReadAt or ReadRanges; log reads
// count only in the totals.
func TestCountingStorage(t *testing.T) {
	dir := t.TempDir()
	data := bytes.Repeat([]byte("0123456789"), 1000)
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "part-0.parquet"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "_delta_log", "00000000000000000000.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := &countingStorage{Storage: st}
	ctx := context.Background()
	buf := make([]byte, 100)
	if _, err := c.ReadAt(ctx, "part-0.parquet", buf, 5); err != nil || !bytes.Equal(buf, data[5:105]) {
		t.Fatalf("ReadAt: %v", err)
	}
	if _, err := c.ReadAt(ctx, "_delta_log/00000000000000000000.json", buf[:3], 0); err != nil {
		t.Fatal(err)
	}
	out, err := storage.ReadRanges(ctx, c, "part-0.parquet", []storage.Range{{Off: 0, Len: 10}, {Off: 9000, Len: 50}})
	if err != nil || !bytes.Equal(out[0], data[:10]) || !bytes.Equal(out[1], data[9000:9050]) {
		t.Fatalf("ReadRanges: %v", err)
	}
	n := c.counts()
	if got, want := n.DataFileBytes, int64(100+10+50); got != want {
		t.Errorf("data-file bytes %d, want %d", got, want)
	}
	if got, want := n.Bytes, int64(100+3+10+50); got != want {
		t.Errorf("all bytes %d, want %d", got, want)
	}
	if n.DataFileReads != 2 || n.Reads != 3 {
		t.Errorf("reads: %d data, %d in all; want 2 and 3", n.DataFileReads, n.Reads)
	}
	if _, err := storage.ReadRanges(ctx, c, "part-0.parquet", []storage.Range{{Off: 9990, Len: 50}}); err == nil {
		t.Error("a range past the end was read")
	}
}

// blockingStorage is a storage whose every call waits until release is
// closed, saying on entered that it began.
type blockingStorage struct {
	storage.Storage
	entered chan<- string
	release <-chan struct{}
}

func (b blockingStorage) wait(name string) { b.entered <- name; <-b.release }

func (b blockingStorage) List(context.Context, string, string) ([]storage.ObjectInfo, error) {
	b.wait("List")
	return nil, nil
}

func (b blockingStorage) Stat(context.Context, string) (storage.ObjectInfo, error) {
	b.wait("Stat")
	return storage.ObjectInfo{}, nil
}

func (b blockingStorage) ReadAt(context.Context, string, []byte, int64) (int, error) {
	b.wait("ReadAt")
	return 0, nil
}

// TestCountingStorageInFlight: InFlight counts every call in progress
// (List, Stat, ReadAt, ReadRanges: what a stopping mount waits for), and
// none once they returned.
func TestCountingStorageInFlight(t *testing.T) {
	entered := make(chan string, 4)
	release := make(chan struct{})
	c := &countingStorage{Storage: blockingStorage{entered: entered, release: release}}
	ctx := context.Background()
	done := make(chan struct{}, 4)
	for _, call := range []func(){
		func() { _, _ = c.List(ctx, "", "") },
		func() { _, _ = c.Stat(ctx, "k") },
		func() { _, _ = c.ReadAt(ctx, "k", make([]byte, 1), 0) },
		func() { _, _ = c.ReadRanges(ctx, "k", []storage.Range{{Off: 0, Len: 1}}) },
	} {
		go func() { call(); done <- struct{}{} }()
		<-entered
	}
	if n := c.inFlight.Load(); n != 4 {
		t.Fatalf("%d calls in flight, want 4", n)
	}
	close(release)
	for range 4 {
		<-done
	}
	if n := c.inFlight.Load(); n != 0 {
		t.Fatalf("%d calls in flight after they returned, want 0", n)
	}
}
