package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/oneline"
	"github.com/deltafs/deltafs/internal/testkit"
)

// lineBound is the longest line deltafs may print of one error or log
// value: oneline.Max and the cut's marker.
const lineBound = oneline.Max + 40

// Error lines stay one line of bounded length whatever the table holds: a
// column whose type nests 3,000 levels spells a 30 KB struct<...> in the
// cause, once printed whole. The line keeps its start (table, version)
// and its end (the cause's last words) and says how much was cut.
func TestErrorLinesBounded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "deep")
	if err := testkit.WriteBlobTable(dir, testkit.DeepSchema(3000), []testkit.BlobRow{{ID: 1, Data: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	bin := mounttest.Binary(t)
	for _, tc := range []struct {
		name string
		args []string
		want string // the line's start, after "deltafs: DIR version 0: "
	}{
		{"cat --where", []string{"cat", dir, "--where", "deep = 1"}, "--where: column deep is struct<a:struct<a:"},
		{"log --where", []string{"log", dir, "--where", "deep = 1"}, "--where: column deep is struct<a:struct<a:"},
		{"mount --data-column", []string{"mount", dir, t.TempDir(), "--cache-dir", "none", "--data-column", "deep"}, "data column deep is struct<a:struct<a:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runBin(t, bin, time.Minute, tc.args...)
			msg := requireErrorLine(t, stderr, code, dir+" version 0", -1, nil)
			checkBoundedLine(t, msg)
			if !strings.HasPrefix(msg, "deltafs: "+dir+" version 0: "+tc.want) || !strings.Contains(msg, " bytes cut) … ") || !strings.Contains(msg[len(msg)-oneline.Max/4:], ">>>>") {
				t.Fatalf("error line %q: want its start, its end and the cut's size", msg)
			}
		})
	}
}

// A log line's values are bounded too: a commit that turns the data
// column into a deeply nested struct leaves latest where it was, with a
// warning whose cause is bounded.
func TestLogLinesBounded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	if err := testkit.WriteBlobTable(dir, testkit.BlobSchema, []testkit.BlobRow{{ID: 1, Data: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	m := mounttest.Start(t, mounttest.Binary(t), dir, "--cache-dir", "none", "--refresh", "100ms", "--data-column", "data")
	schema := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"data","type":` + testkit.DeepType(3000) + `,"nullable":true,"metadata":{}}]}`
	s, _ := json.Marshal(schema)
	commit := fmt.Sprintf(`{"commitInfo":{"timestamp":1700000001000,"operation":"CHANGE COLUMN"}}
{"metaData":{"id":"b10b0000-0000-4000-8000-000000000001","format":{"provider":"parquet","options":{}},"schemaString":%s,"partitionColumns":[],"configuration":{},"createdTime":1700000000000}}
`, s)
	if err := os.WriteFile(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", 1)), []byte(commit), 0o644); err != nil {
		t.Fatal(err)
	}
	waitLog(t, m, 20*time.Second, "WARN", "version=1")
	for _, l := range strings.Split(strings.TrimSpace(m.Log()), "\n") {
		checkBoundedLine(t, l)
		if strings.Contains(l, "version=1") && !strings.Contains(l, " bytes cut) … ") {
			t.Fatalf("warning %q: want its cause cut", l)
		}
	}
}

// checkBoundedLine fails unless line (without its newline) is one line of
// printable UTF-8 no longer than a few bounded values.
func checkBoundedLine(t *testing.T, line string) {
	t.Helper()
	if len(line) > 4*lineBound || !utf8.ValidString(line) || strings.ContainsAny(line, "\n\r\x00\x1b") {
		t.Fatalf("line of %d bytes is not one bounded line: %.300q", len(line), line)
	}
}
