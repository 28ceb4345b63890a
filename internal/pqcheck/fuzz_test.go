package pqcheck

import (
	"bytes"
	"os"
	"runtime"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
)

// FuzzDataFile feeds damaged data files to the checks and, where they
// pass, to parquet-go as deltafs reads them (the tail staged, each chunk
// staged). The checks must never panic, and what passes them must not make
// parquet-go allocate what a claim says: the run fails past 1 GiB (an
// unchecked claim of 2^31 would take the process down instead). parquet-go
// panics and errors on damaged input are fine (callers recover them).
// Seeds: small real files of each writer, and files of each codec and
// page version.
func FuzzDataFile(f *testing.F) {
	n := 0
	for _, p := range realFiles(f) {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if len(data) < 16<<10 && n < 40 {
			f.Add(data, uint32(0), byte(0))
			n++
		}
	}
	for _, c := range []struct {
		codec compress.Codec
		v     int
	}{{&parquet.Snappy, 1}, {&parquet.Snappy, 2}, {&parquet.Zstd, 2}, {&parquet.Gzip, 1}, {&parquet.Lz4Raw, 2}} {
		data := dataFile(f, c.codec, c.v, 40)
		f.Add(data, uint32(len(data)/2), byte(0x40))
		f.Add(data, uint32(len(data)-20), byte(0xff))
	}
	f.Fuzz(func(t *testing.T, data []byte, at uint32, flip byte) {
		if len(data) > 0 {
			data = bytes.Clone(data)
			data[int(at)%len(data)] ^= flip
		}
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		fuzzRead(data)
		runtime.ReadMemStats(&m1)
		if a := m1.TotalAlloc - m0.TotalAlloc; a > 1<<30 {
			t.Fatalf("reading a %d-byte file allocated %d MiB", len(data), a>>20)
		}
	})
}

// fuzzRead reads data as deltafs does, ignoring errors and parquet-go's
// panics, but not the checks' panics.
func fuzzRead(data []byte) {
	r := bytes.NewReader(data)
	tail, off, f, err := ReadTail(r, int64(len(data)))
	if err != nil {
		return
	}
	s := &Staged{}
	s.Add(off, tail)
	pf := func() (pf *parquet.File) {
		defer func() { _ = recover() }()
		pf, _ = parquet.OpenFile(s, int64(len(data)), parquet.SkipMagicBytes(true), parquet.SkipBloomFilters(true))
		return pf
	}()
	if pf == nil {
		return
	}
	for i, rg := range pf.RowGroups() {
		for j, cc := range rg.ColumnChunks() {
			st, err := f.StageChunk(r, i, j)
			if err != nil {
				continue
			}
			func() {
				defer func() { _ = recover() }()
				pages := cc.(*parquet.FileColumnChunk).PagesFrom(st)
				defer pages.Close()
				buf := make([]parquet.Value, 256)
				for {
					pg, err := pages.ReadPage()
					if err != nil {
						return
					}
					vr := pg.Values()
					for {
						if n, err := vr.ReadValues(buf); n == 0 || err != nil {
							break
						}
					}
					parquet.Release(pg)
				}
			}()
		}
	}
}
