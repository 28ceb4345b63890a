package page

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/storage"
)

type pqRow struct {
	ID   int64  `parquet:"id"`
	Data []byte `parquet:"data,optional"`
}

func TestPageFetcher(t *testing.T) {
	dir := t.TempDir()
	var rows []pqRow
	for i := range 2000 {
		d := bytes.Repeat([]byte{byte(i)}, 100+i%50)
		if i%97 == 0 {
			d = nil
		}
		rows = append(rows, pqRow{ID: int64(i), Data: d})
	}
	f, err := os.Create(filepath.Join(dir, "part-0.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[pqRow](f, parquet.Compression(&parquet.Snappy), parquet.MaxRowsPerRowGroup(700), parquet.PageBufferSize(8<<10))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st0, _ := f.Stat()
	f.Close()
	st, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := NewFetcher(st, Options{})
	ref := FileRef{Path: "part-0.parquet", Key: "part-0.parquet", Size: st0.Size()}
	ctx := context.Background()
	if n, err := p.NumRows(ctx, ref); err != nil || n != 2000 {
		t.Fatalf("NumRows = %d, %v", n, err)
	}
	for _, i := range []int{0, 1, 699, 700, 701, 1399, 1400, 1999, 5, 970, 97 * 3} {
		got, err := p.Value(ctx, ref, "data", int64(i))
		if err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		if !bytes.Equal(got, rows[i].Data) || (rows[i].Data == nil) != (got == nil) {
			t.Fatalf("row %d: %d bytes, want %d", i, len(got), len(rows[i].Data))
		}
	}
	before := p.Stats()
	for i := range 2000 {
		if got, err := p.Value(ctx, ref, "data", int64(i)); err != nil || !bytes.Equal(got, rows[i].Data) {
			t.Fatalf("row %d: %v", i, err)
		}
	}
	after := p.Stats()
	if after.FilesOpened != 1 {
		t.Errorf("opened the file %d times", after.FilesOpened)
	}
	// ~280 KB of data in 8 KiB pages: a full pass decodes each page about once.
	if pages := after.PagesDecoded - before.PagesDecoded; pages > 60 {
		t.Errorf("a full pass decoded %d pages", pages)
	}
	if _, err := p.Value(ctx, ref, "nope", 0); err == nil {
		t.Error("a missing column was read")
	}
	if _, err := p.Value(ctx, FileRef{Path: "gone", Key: "gone", Size: 10}, "data", 0); err == nil {
		t.Error("a missing file was read")
	}
	t.Logf("stats %+v", after)
}

// TestPageFetcherDamagedOffsetIndex: an offset index (no checksum) whose
// first row of a page is off places rows on the wrong page; the fetcher
// must then fail those rows, never serve a neighbour's value.
func TestPageFetcherDamagedOffsetIndex(t *testing.T) {
	dir := t.TempDir()
	var rows []pqRow
	for i := range 2000 {
		rows = append(rows, pqRow{ID: int64(i), Data: bytes.Repeat([]byte{byte(i)}, 100+i%50)})
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[pqRow](&buf, parquet.Compression(&parquet.Snappy), parquet.MaxRowsPerRowGroup(700), parquet.PageBufferSize(8<<10))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	pf, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	col := pf.Root().Column("data").Index()
	cm := pf.Metadata().RowGroups[0].Columns[col]
	region := b[cm.OffsetIndexOffset : cm.OffsetIndexOffset+int64(cm.OffsetIndexLength)]
	var proto thrift.CompactProtocol
	var oi format.OffsetIndex
	if err := thrift.Unmarshal(&proto, region, &oi); err != nil || len(oi.PageLocations) < 3 {
		t.Fatalf("offset index: %v (%d pages)", err, len(oi.PageLocations))
	}
	// Move page 2's first row by a few rows, keeping the encoding's length.
	done := false
	for d := int64(1); d < 8 && !done; d++ {
		oi.PageLocations[2].FirstRowIndex += d
		enc, err := thrift.Marshal(&proto, &oi)
		if err == nil && len(enc) == len(region) {
			copy(region, enc)
			done = true
		} else {
			oi.PageLocations[2].FirstRowIndex -= d
		}
	}
	if !done {
		t.Fatal("no damage of the same length")
	}
	if err := os.WriteFile(filepath.Join(dir, "f.parquet"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	st, _ := storage.NewLocal(dir)
	p := NewFetcher(st, Options{})
	ref := FileRef{Path: "f.parquet", Key: "f.parquet", Size: int64(len(b))}
	failed := 0
	for i := range 700 {
		got, err := p.Value(context.Background(), ref, "data", int64(i))
		if err != nil {
			failed++
			continue
		}
		if !bytes.Equal(got, rows[i].Data) {
			t.Fatalf("row %d: a value of another row (%d bytes of %d)", i, len(got), got[0])
		}
	}
	if failed == 0 {
		t.Fatal("no row failed: the damaged offset index went unnoticed")
	}
}
