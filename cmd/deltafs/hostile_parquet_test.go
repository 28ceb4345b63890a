package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/pqcheck/pqtest"
	"github.com/deltafs/deltafs/internal/testkit"
)

// Data files whose footer, page index or pages claim what is not there:
// `deltafs cat` and a mount of the real binary fail the file (exit 1, or
// EIO for its shard or samples, with one line naming the table, version,
// file and claim), allocate nothing of what is claimed, and go on serving
// the rest. The binary runs with its writable memory limited
// (RLIMIT_DATA, which counts every heap mapping when it is made): an
// allocation of a claimed 2 GiB, 4 GiB or 2^30 structs fails the Go
// runtime with a fatal "out of memory", so an unchecked claim fails the
// test by killing the process.

// memLimit is the writable memory the binary may map: its own needs are
// far below (a few hundred MiB with thread stacks), every claim above.
const memLimit = 1 << 30

// limited returns a script running the deltafs binary under memLimit.
func limited(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "deltafs-limited")
	script := fmt.Sprintf("#!/bin/sh\nexec prlimit --data=%d -- %s \"$@\"\n", memLimit, mounttest.Binary(t))
	must(t, os.WriteFile(p, []byte(script), 0o755))
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Fatalf("prlimit (util-linux) is missing: %v", err)
	}
	return p
}

// hostileCase is one hostile claim in a data file: its bytes from a real
// data file of the table, and the claim the error must name.
type hostileCase struct {
	name  string
	bytes func(t *testing.T, real []byte) []byte
	claim string
	// pixels: the claim is in a page of the pixels column, which an
	// image mount reads only when a sample is read.
	pixels bool
}

// editPage changes the first data page of the pixels column.
func editPage(edit func(*pqtest.Page)) func(*testing.T, []byte) []byte {
	return func(t *testing.T, real []byte) []byte {
		f, err := pqtest.Parse(real)
		must(t, err)
		p := f.Page(0, "pixels", 0)
		edit(p)
		return f.Bytes()
	}
}

// editChunk changes the pixels column's chunk (its page index).
func editChunk(edit func(*pqtest.Chunk)) func(*testing.T, []byte) []byte {
	return func(t *testing.T, real []byte) []byte {
		f, err := pqtest.Parse(real)
		must(t, err)
		edit(f.Chunk0("pixels"))
		return f.Bytes()
	}
}

var hostileCases = []hostileCase{
	{"footer schema", func(*testing.T, []byte) []byte { return pqtest.FooterBomb("schema", 1<<30) },
		"Parquet footer: Schema: a list claims 1073741824 elements in ", false},
	{"footer row groups", func(*testing.T, []byte) []byte { return pqtest.FooterBomb("row_groups", 1<<30) },
		"Parquet footer: RowGroups: a list claims 1073741824 elements in ", false},
	{"footer columns", func(*testing.T, []byte) []byte { return pqtest.FooterBomb("columns", 1<<30) },
		"Parquet footer: Columns: a list claims 1073741824 elements in ", false},
	{"offset index", editChunk(func(c *pqtest.Chunk) { c.RawOffsetIndex = pqtest.ListBomb(1, pqtest.Struct, 1<<30, 32) }),
		"column pixels: offset index: PageLocations: a list claims 1073741824 elements in ", false},
	{"column index", editChunk(func(c *pqtest.Chunk) { c.ColumnIndex = pqtest.ColumnIndexBomb(1<<30, 32) }),
		"column pixels: column index: MinValues: a list claims 1073741824 elements in ", false},
	{"compressed size", editPage(func(p *pqtest.Page) { p.Header.CompressedPageSize = math.MaxInt32 }),
		"column pixels: a page claims 2147483647 bytes, ", true},
	{"uncompressed size", editPage(func(p *pqtest.Page) { p.Header.UncompressedPageSize = math.MaxInt32 }),
		" bytes claims 2147483647 uncompressed", true},
	{"snappy length", editPage(func(p *pqtest.Page) {
		levels := int(p.Header.DataPageHeaderV2.V.DefinitionLevelsByteLength + p.Header.DataPageHeaderV2.V.RepetitionLevelsByteLength)
		_, k := binary.Uvarint(p.Body[levels:])
		p.Body = append(append(bytes.Clone(p.Body[:levels]), binary.AppendUvarint(nil, math.MaxUint32)...), p.Body[levels+k:]...)
		p.Header.CompressedPageSize, p.Header.CRC = int32(len(p.Body)), 0
	}), "column pixels: a snappy page claims 4294967295 bytes", true},
	{"values", editPage(func(p *pqtest.Page) {
		p.Header.DataPageHeaderV2.V.NumValues = math.MaxInt32
		p.Header.DataPageHeaderV2.V.NumRows = math.MaxInt32
	}), "column pixels: a page claims 2147483647 values", true},
}

// hostileTable writes a table of one version with files of rows digits
// each, then replaces data file hostile (by index) with what c makes of
// it, fixing its size in the log. It returns the table and the paths.
func hostileTable(t *testing.T, files, rows int, c map[int]hostileCase) (*deltaTable, []string) {
	t.Helper()
	digits := testkit.MNIST(t, testkit.MNISTTest)[:files*rows]
	tbl := newDeltaTable(t, filepath.Join(t.TempDir(), "t"))
	_, paths := tbl.commit(time.UnixMilli(1_700_000_000_000), digitSchema, chunk(digits, rows))
	logPath := filepath.Join(tbl.dir, "_delta_log", fmt.Sprintf("%020d.json", 0))
	log, err := os.ReadFile(logPath)
	must(t, err)
	for i, hc := range c {
		p := filepath.Join(tbl.dir, paths[i])
		real, err := os.ReadFile(p)
		must(t, err)
		data := hc.bytes(t, real)
		must(t, os.WriteFile(p, data, 0o644))
		re := regexp.MustCompile(`("path":"` + regexp.QuoteMeta(paths[i]) + `","size":)\d+`)
		if !re.Match(log) {
			t.Fatalf("no add of %s in the log", paths[i])
		}
		log = re.ReplaceAll(log, []byte(fmt.Sprintf("${1}%d", len(data))))
	}
	must(t, os.WriteFile(logPath, log, 0o644))
	return tbl, paths
}

// TestCatHostileDataFiles: `deltafs cat` of a table with a hostile data
// file exits 1 within the time bound with one line naming the table, the
// version, the file and the claim, under the memory limit. The file
// rewritten with its true claims reads (the rewriting is sound).
func TestCatHostileDataFiles(t *testing.T) {
	bin := limited(t)
	run := func(t *testing.T, dir string) (stdout, stderr string, code int, took time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "cat", dir)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		start := time.Now()
		err := cmd.Run()
		took = time.Since(start)
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee) && ctx.Err() == nil:
			code = ee.ExitCode()
		default:
			t.Fatalf("deltafs cat: %v (%s)\n%s", err, took, e.String())
		}
		return o.String(), e.String(), code, took
	}

	// As rewritten, with nothing hostile: every row.
	tbl, _ := hostileTable(t, 2, 50, map[int]hostileCase{1: {bytes: editPage(func(*pqtest.Page) {})}})
	out, errOut, code, _ := run(t, tbl.dir)
	if code != 0 || strings.Count(out, "\n") != 100 {
		t.Fatalf("the rewritten file: exit %d, %d rows: %s", code, strings.Count(out, "\n"), errOut)
	}

	for _, hc := range hostileCases {
		t.Run(hc.name, func(t *testing.T) {
			tbl, paths := hostileTable(t, 2, 50, map[int]hostileCase{1: hc})
			_, errOut, code, took := run(t, tbl.dir)
			want := "deltafs: " + tbl.dir + " version 0: " + paths[1] + ": "
			if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, want) || !strings.Contains(errOut, hc.claim) {
				t.Fatalf("exit %d, stderr %q; want exit 1 and one line %q...%q", code, firstLines(errOut, 3), want, hc.claim)
			}
			if strings.Contains(errOut, "out of memory") || took > 30*time.Second {
				t.Fatalf("took %s: %s", took, errOut)
			}
		})
	}
}

// TestMountHostileDataFiles: a mount of the real binary, in bytes mode and
// in image mode, of a table whose files 1..9 each hold one hostile claim
// (one shard each): the shard of the file fails with EIO — or, in image
// mode, for a claim in a pixels page, which the index does not read, the
// file's samples do — with an error line naming the table, version, file
// and claim. The process stays alive under the memory limit and serves
// the clean shards byte for byte.
func TestMountHostileDataFiles(t *testing.T) {
	bin := limited(t)
	const rows = 30
	cases := map[int]hostileCase{}
	for i, hc := range hostileCases {
		cases[i+1] = hc
	}
	files := len(hostileCases) + 2 // a clean file first (the --image check reads it) and last
	digits := testkit.MNIST(t, testkit.MNISTTest)[:files*rows]
	for _, mode := range []struct {
		name  string
		flags []string
	}{
		{"bytes", nil},
		{"image", []string{"--image", "28x28"}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			tbl, paths := hostileTable(t, files, rows, cases)
			flags := append([]string{"--cache-dir", "none", "--shards", fmt.Sprint(files), "--shard-layout", "contiguous"}, mode.flags...)
			m := mounttest.Start(t, bin, tbl.dir, flags...)
			shard := func(k int) string { return filepath.Join(m.Dir, "version", "0", "shard", fmt.Sprint(k)) }
			for k := 1; k <= len(hostileCases); k++ {
				hc := cases[k]
				_, err := os.ReadDir(shard(k))
				switch {
				case errors.Is(err, syscall.EIO):
				case err == nil && mode.name == "image" && hc.pixels:
					// The index read no pixels: every sample read fails.
					names := samplesUnder(t, shard(k))
					if len(names) != rows {
						t.Fatalf("%s: %d samples listed, want %d", hc.name, len(names), rows)
					}
					for _, n := range names {
						if _, err := os.ReadFile(filepath.Join(shard(k), n)); !errors.Is(err, syscall.EIO) {
							t.Fatalf("%s: reading %s: %v, want EIO", hc.name, n, err)
						}
					}
				default:
					t.Fatalf("%s: listing its shard: %v, want EIO", hc.name, err)
				}
				waitLog(t, m, 10*time.Second, "ERROR", tbl.dir+" version 0: data file "+paths[k], hc.claim)
				select {
				case <-m.Exited():
					t.Fatalf("%s: the mount exited:\n%s", hc.name, m.Log())
				default:
				}
			}
			if strings.Contains(m.Log(), "out of memory") || strings.Contains(m.Log(), "panic") {
				t.Fatalf("the mount log:\n%s", m.Log())
			}
			// The clean shards serve, byte for byte in bytes mode.
			for _, k := range []int{0, files - 1} {
				names := samplesUnder(t, shard(k))
				if len(names) != rows {
					t.Fatalf("clean shard %d: %d samples, want %d", k, len(names), rows)
				}
				for _, d := range digits[k*rows : (k+1)*rows] {
					name := fmt.Sprintf("%d.bin", d.ID)
					if mode.name == "image" {
						name = fmt.Sprintf("%d.png", d.ID)
					}
					b, err := os.ReadFile(filepath.Join(shard(k), name))
					if err != nil {
						t.Fatalf("clean shard %d: %s: %v", k, name, err)
					}
					if mode.name == "bytes" && !bytes.Equal(b, d.Pixels) {
						t.Fatalf("clean shard %d: %s holds other bytes", k, name)
					}
				}
			}
		})
	}
}

// firstLines is the first n lines of s (a crash's stack is long).
func firstLines(s string, n int) string {
	lines := strings.SplitAfterN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "")
}
