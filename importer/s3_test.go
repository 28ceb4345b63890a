package importer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/snapshot/snaptest"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/remote"
	"github.com/deltafs/deltafs/storage/s3store"
	"github.com/deltafs/deltafs/storage/s3store/s3test"
	"github.com/deltafs/deltafs/writer"
)

func openS3(t *testing.T, endpoint, location string) storage.Storage {
	t.Helper()
	st, err := s3store.New(context.Background(), location, s3store.Options{
		S3Options:   storage.S3Options{Endpoint: endpoint, PathStyle: true, Region: s3test.Region},
		Credentials: credentials.NewStaticCredentialsProvider(s3test.AccessKey, s3test.SecretKey, ""),
		Tuning:      remote.Tuning{MaxBackoff: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestImportS3: the real MNIST test set into an S3 table (in-process
// gofakes3), then appends from two writers racing through If-None-Match.
func TestImportS3(t *testing.T) {
	ctx := context.Background()
	endpoint := s3test.StartGofakes3(t)
	s3test.CreateBucket(t, endpoint, "tables")
	location := "s3://tables/mnist"

	src, err := Open(context.Background(), testkit.MNISTTest, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	res, err := Import(ctx, openS3(t, endpoint, location), src, writer.Options{RowsPerFile: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 0 || res.Rows != 10000 || res.Files != 2 {
		t.Fatalf("result %+v", res)
	}

	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := openS3(t, endpoint, location)
			for a := range 3 {
				p := filepath.Join(dir, fmt.Sprintf("w%d-%d.npy", w, a))
				// Records with ids 100000+: a structured id field is kept.
				var data bytes.Buffer
				for i := range 2 {
					id := int64(100000 + 100*w + 10*a + i)
					data.Write([]byte{byte(id), byte(id >> 8), byte(id >> 16), 0, 0, 0, 0, 0, 3})
					data.Write(make([]byte, 784))
				}
				writeNpy(t, p, "{'descr': [('id', '<i8'), ('label', '|u1'), ('pixels', '|u1', (784,))], 'fortran_order': False, 'shape': (2,), }", data.Bytes())
				s, err := Open(context.Background(), p, Options{})
				if err != nil {
					errs <- err
					return
				}
				if _, err := Import(ctx, st, s, writer.Options{}); err != nil {
					errs <- err
				}
				s.Close()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	st := openS3(t, endpoint, location)
	tbl := snaptest.Open(t, st)
	s := snaptest.Version(t, tbl, -1)
	if s.Version != 6 || s.NumRows() != 10012 {
		t.Fatalf("version %d, %d rows", s.Version, s.NumRows())
	}
	// The first test digit, read back through S3.
	want := testkit.MNIST(t, testkit.MNISTTest)[0]
	found := false
	for _, f := range s.Files {
		key, _ := s.FileKey(f.Path)
		pf, err := parquet.OpenFile(storage.ReaderAt(ctx, st, key), f.Size)
		if err != nil {
			t.Fatal(err)
		}
		r := parquet.NewGenericReader[testkit.Digit](pf)
		buf := make([]testkit.Digit, 1)
		if _, err := r.Read(buf); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		r.Close()
		if buf[0].ID == want.ID {
			found = buf[0].Label == want.Label && bytes.Equal(buf[0].Pixels, want.Pixels)
		}
	}
	if !found {
		t.Fatal("digit 60000 not read back intact")
	}
}
