package table

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/cache"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/writer"
)

// The sample flags meet: every pair of --id-column, --data-column,
// --class-column, --where, --image and --shards, each with the values that
// make columns serve several roles, either serves exactly the rows and
// bytes the flags ask for or is refused by Open (before a mount, before a
// warm) with one line saying why and what to use instead.

// pairRow is a row of the pair table, shaped as `deltafs import` writes an
// ImageFolder tree (id, label, path, content), with content 2x2 raw
// pixels so that --image 2x2 applies too.
type pairRow struct {
	id      int64
	label   string
	path    string
	content []byte
}

const pairRows = 7

func pairTableRows() []pairRow {
	var rows []pairRow
	for i := range pairRows {
		label := []string{"cat", "dog"}[i%2]
		rows = append(rows, pairRow{id: int64(i), label: label, path: fmt.Sprintf("%s/r%d.png", label, i),
			content: []byte{byte(i), byte(3 * i), 0xAA, byte(255 - i)}})
	}
	return rows
}

func writePairTable(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	st, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := func(name, typ string) snapshot.StructField {
		return snapshot.StructField{Name: name, Type: &snapshot.PrimitiveType{Name: typ}}
	}
	schema := &snapshot.StructType{Fields: []snapshot.StructField{f("id", "long"), f("label", "string"), f("path", "string"), f("content", "binary")}}
	var rows []writer.Row
	for _, r := range pairTableRows() {
		rows = append(rows, writer.Row{r.id, r.label, r.path, r.content})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := writer.Write(ctx, st, schema, writer.SliceRows(rows), writer.Options{RowsPerFile: 3}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// pairFlag is one sample flag and the values tried for it ("" first: the
// default).
type pairFlag struct {
	name string
	vals []string
	set  func(s *sample.Spec, v string) error
}

var pairFlags = []pairFlag{
	{"--id-column", []string{"", "id", "label", "path", "content"}, func(s *sample.Spec, v string) error { s.IDColumn = v; return nil }},
	{"--data-column", []string{"", "content", "path", "label", sample.NoData}, func(s *sample.Spec, v string) error { s.DataColumn = v; return nil }},
	{"--class-column", []string{"", "label", "path", "id", "content"}, func(s *sample.Spec, v string) error { s.ClassColumn = v; return nil }},
	{"--where", []string{"", "label = 'cat'", "id >= 3", "path = 'dog/r1.png'"}, func(s *sample.Spec, v string) error { s.Where = whereExpr(v); return nil }},
	{"--image", []string{"", "2x2"}, func(s *sample.Spec, v string) error {
		if v == "" {
			return nil
		}
		img, err := sample.ParseImage(v)
		s.Image = img
		return err
	}},
	{"--shards", []string{"", "2", "3", "9"}, func(s *sample.Spec, v string) error {
		if v != "" {
			_, err := fmt.Sscan(v, &s.Shards)
			return err
		}
		return nil
	}},
}

// pairCase is one combination of flag values (name -> value).
type pairCase map[string]string

func (c pairCase) String() string {
	var parts []string
	for _, f := range pairFlags {
		if v, ok := c[f.name]; ok && v != "" {
			parts = append(parts, fmt.Sprintf("%s=%q", f.name, v))
		}
	}
	if parts == nil {
		return "defaults"
	}
	return strings.Join(parts, " ")
}

// refusal is the one line a combination that cannot be served gets from
// Open, or "" when it is served. Only these are refused: a class column
// that is the data column or binary (each sample's bytes would name its
// folder), an id column that is binary (bytes as file names), and a data
// column that cannot hold samples (a number) or is not raw pixels.
func (c pairCase) refusal() string {
	data := c["--data-column"]
	if data == "" {
		data = "content"
	}
	switch {
	case c["--id-column"] == "content":
		return "--id-column content"
	case c["--class-column"] == "content":
		return "--class-column content"
	case c["--image"] != "" && data != "content":
		return "--image"
	case c["--class-column"] != "" && c["--class-column"] == data:
		return "--class-column " + data
	}
	return ""
}

// want is what each selected row serves: its class folder ("" without),
// its id ("" when derived) and its bytes (JSON rows and PNG images are
// checked by checkBytes).
type pairSample struct {
	class, id string
	row       pairRow
}

func (c pairCase) selected(r pairRow) bool {
	switch c["--where"] {
	case "label = 'cat'":
		return r.label == "cat"
	case "id >= 3":
		return r.id >= 3
	case "path = 'dog/r1.png'":
		return r.path == "dog/r1.png"
	}
	return true
}

func (r pairRow) value(col string) string {
	switch col {
	case "id":
		return fmt.Sprint(r.id)
	case "label":
		return r.label
	case "path":
		return r.path
	}
	return ""
}

// escapeID is a value as a file or folder name: '/' escaped as sample
// names and class folders have it.
func escapeID(s string) string { return strings.ReplaceAll(s, "/", "%2F") }

// decoded is what a served sample says in the terms of a row: an image's
// pixels, a JSON row's id, label and path, else the bytes as they are.
func (c pairCase) decoded(t *testing.T, got []byte) string {
	t.Helper()
	switch {
	case c["--image"] != "":
		img, err := png.Decode(bytes.NewReader(got))
		if err != nil {
			t.Fatalf("%s: not a PNG: %v", c, err)
		}
		b := img.Bounds()
		var pix []byte
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				g, _, _, _ := img.At(x, y).RGBA()
				pix = append(pix, byte(g>>8))
			}
		}
		return string(pix)
	case c["--data-column"] == sample.NoData:
		var m map[string]any
		if err := json.Unmarshal(got, &m); err != nil {
			t.Fatalf("%s: JSON %s: %v", c, got, err)
		}
		return fmt.Sprintf("%v|%v|%v", m["id"], m["label"], m["path"])
	}
	return string(got)
}

// wantDecoded is decoded's answer for row r.
func (c pairCase) wantDecoded(r pairRow) string {
	switch data := c["--data-column"]; {
	case c["--image"] != "":
		return string(r.content)
	case data == sample.NoData:
		return fmt.Sprintf("%d|%s|%s", r.id, r.label, r.path)
	case data == "path" || data == "label":
		return r.value(data)
	}
	return string(r.content)
}

func TestSampleFlagPairs(t *testing.T) {
	dir := writePairTable(t)
	rows := pairTableRows()
	var cases []pairCase
	for i := range pairFlags {
		for j := i + 1; j < len(pairFlags); j++ {
			for _, a := range pairFlags[i].vals {
				for _, b := range pairFlags[j].vals {
					cases = append(cases, pairCase{pairFlags[i].name: a, pairFlags[j].name: b})
				}
			}
		}
	}
	served, refused := 0, 0
	for _, c := range cases {
		var spec sample.Spec
		for _, f := range pairFlags {
			if err := f.set(&spec, c[f.name]); err != nil {
				t.Fatalf("%s: %v", c, err)
			}
		}
		if err := spec.Validate(); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		tb, err := Open(ctx, Options{Location: dir, Spec: &spec, Cache: cache.Options{MemBytes: 8 << 20}})
		if want := c.refusal(); want != "" {
			cancel()
			if err == nil {
				tb.Close()
				t.Fatalf("%s: served; want a refusal naming %s", c, want)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || !strings.Contains(msg, want) || !strings.Contains(msg, "use ") {
				t.Fatalf("%s: refusal %q: want one line naming %s and saying what to use instead", c, msg, want)
			}
			refused++
			continue
		}
		if err != nil {
			cancel()
			t.Fatalf("%s: %v", c, err)
		}
		checkPairServed(t, ctx, tb, c, rows)
		tb.Close()
		cancel()
		served++
	}
	t.Logf("%d combinations: %d served, %d refused", len(cases), served, refused)
}

// checkPairServed reads every sample of every shard of tb and checks
// them against the rows c selects: each once, in its class folder, under
// its id, with its bytes; the shards as many as asked.
func checkPairServed(t *testing.T, ctx context.Context, tb *Table, c pairCase, rows []pairRow) {
	t.Helper()
	ver, err := tb.Samples.Version(ctx, tb.Latest.Version)
	if err != nil {
		t.Fatalf("%s: %v", c, err)
	}
	if want := max(tb.Samples.Shards(), 1); ver.Shards() != want {
		t.Fatalf("%s: %d shards, want %d", c, ver.Shards(), want)
	}
	var got []string
	for k := range ver.Shards() {
		sh, err := ver.Shard(ctx, k)
		if err != nil {
			t.Fatalf("%s: shard %d: %v", c, k, err)
		}
		for pos := range sh.Len() {
			b, err := sh.Content(ctx, pos)
			if err != nil {
				t.Fatalf("%s: shard %d sample %s: %v", c, k, sh.Path(pos), err)
			}
			if int64(len(b)) != sh.Size(pos) {
				t.Fatalf("%s: %s: %d bytes, size says %d", c, sh.Path(pos), len(b), sh.Size(pos))
			}
			class, id := "", ""
			if sh.HasClasses() {
				class = sh.Classes()[sh.ClassOf(pos)]
			}
			if c["--id-column"] != "" {
				id = sh.ID(pos)
			}
			got = append(got, fmt.Sprintf("%s|%s|%q", class, id, c.decoded(t, b)))
		}
	}
	var want []string
	for _, r := range rows {
		if !c.selected(r) {
			continue
		}
		class, id := "", ""
		if col := c["--class-column"]; col != "" {
			class = escapeID(r.value(col))
		}
		if col := c["--id-column"]; col != "" {
			id = escapeID(r.value(col))
		}
		want = append(want, fmt.Sprintf("%s|%s|%q", class, id, c.wantDecoded(r)))
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: served\n%q\nwant\n%q", c, got, want)
	}
}
