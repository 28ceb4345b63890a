package gds

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/extents"
	"github.com/deltafs/deltafs/internal/testkit"
)

// systemPython is the interpreter with Debian's torch (see README).
const systemPython = "/usr/bin/python3"

// TestExampleLoader runs examples/gds/loader.py (without kvikio or a GPU:
// its POSIX path) on an extent list written by extents.WriteList, with escaped
// sample names and relative cache paths, and checks every sample's
// SHA-256 against the cache files. The extent list's directory stands in for
// the mount's shard directory: it holds the sample files too, and its
// extent list does not change when read again (nothing re-materialises). So
// after one cache file is removed (evicted), another truncated and a byte
// of a third flipped (corrupt), the loader reads exactly the samples they
// held from there instead, and warns about each corrupt one; a sample
// whose line has no checksum is read from there too. A sample file that
// disagrees with the checksum as well fails the loader: wrong bytes are
// never delivered.
func TestExampleLoader(t *testing.T) {
	if out, err := exec.Command(systemPython, "-c", "import torch").CombinedOutput(); err != nil {
		t.Fatalf("%s with torch is needed for the example loader (Debian: python3-torch): %v\n%s", systemPython, err, out)
	}
	l := newCacheLayout(t, 3, 60)
	dir := filepath.Dir(l.exts[0].Path)
	var entries []extents.Entry
	var want []string
	for i, e := range l.exts {
		name := []string{"7/%03d.png", "tab\there %03d.bin", `back\slash/ü %03d.jpg`}[i%3]
		name = strings.Replace(name, "%03d", string(rune('A'+i%26))+string(rune('a'+i/26)), 1)
		rel := e
		rel.Path = filepath.Base(e.Path) // relative to the extent list's directory
		entries = append(entries, extents.Entry{Sample: name, Extent: rel})
		sum := sha256.Sum256(l.want[i])
		want = append(want, hex.EncodeToString(sum[:])+"\t"+listEscaper.Replace(name))
	}
	writeList := func() {
		var m bytes.Buffer
		if err := extents.WriteList(&m, entries); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, extents.ListName), m.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeList()
	// The sample files, as the mount would show them.
	for i, e := range entries {
		p := filepath.Join(dir, e.Sample)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, l.want[i], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if errOut := runLoader(t, dir, want, "; 0 corrupt in the cache (read again); 0 through the mount"); errOut != "" {
		t.Fatalf("warnings on an intact cache:\n%s", errOut)
	}

	// Evict one cache file, cut another in half, flip a byte of one
	// sample in the third, and drop one checksum from the extent list.
	gone, cut, rot := l.exts[0].Path, "", ""
	for _, e := range l.exts {
		if e.Path != gone && cut == "" {
			cut = e.Path
		} else if e.Path != gone && e.Path != cut {
			rot = e.Path
		}
	}
	half := int64(len(l.files[cut])) / 2
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(cut, half); err != nil {
		t.Fatal(err)
	}
	evicted, corrupted, unknown, flipped := 0, map[string]bool{}, -1, false
	for i, e := range l.exts {
		switch {
		case e.Path == gone:
			evicted++
		case e.Path == cut && e.End() > half:
			corrupted[entries[i].Sample] = true
		case e.Path == rot && unknown < 0:
			unknown = i
			entries[i].Sum = extents.Checksum{}
		case e.Path == rot && !flipped && e.Length > 1:
			testkit.FlipByte(t, e.Path, e.Offset+e.Length/2)
			corrupted[entries[i].Sample] = true
			flipped = true
		}
	}
	writeList()
	if evicted == 0 || len(corrupted) < 2 || unknown < 0 || evicted+len(corrupted)+1 >= len(l.exts) {
		t.Fatalf("%d evicted, %d corrupt, unknown %d of %d: the test needs some of each and some intact", evicted, len(corrupted), unknown, len(l.exts))
	}
	errOut := runLoader(t, dir, want, fmt.Sprintf("; %d corrupt in the cache (read again); %d through the mount", len(corrupted), evicted+len(corrupted)+1))
	for name := range corrupted {
		if !strings.Contains(errOut, name+": ") {
			t.Errorf("no warning names corrupt sample %q:\n%s", name, errOut)
		}
	}
	if n := strings.Count(errOut, "reading it again"); n != len(corrupted) {
		t.Errorf("%d warnings for %d corrupt samples:\n%s", n, len(corrupted), errOut)
	}

	// A sample file that disagrees with the checksum too: an error.
	var bad string
	for name := range corrupted {
		bad = name
		break
	}
	if err := os.WriteFile(filepath.Join(dir, bad), bytes.Repeat([]byte{'x'}, int(entryOf(t, entries, bad).Length)), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := loaderCmd(dir).run(t)
	if err == nil || !strings.Contains(stderr, "read through the mount, has CRC-32") || !strings.Contains(stderr, "ValueError") {
		t.Fatalf("a sample file that fails its checksum: %v\n%s", err, stderr)
	}
	if strings.Contains(stdout, "read 60 samples") {
		t.Fatalf("the loader reported success:\n%s", stdout)
	}

	// An extent list of the format before checksums is refused.
	old := "sample\tpath\toffset\tlength\n7/Aa.png\tcache-0.blk\t0\t1\n"
	if err := os.WriteFile(filepath.Join(dir, extents.ListName), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := loaderCmd(dir).run(t); err == nil || !strings.Contains(stderr, "extent list without checksums") {
		t.Fatalf("old extent list: %v\n%s", err, stderr)
	}
}

// listEscaper escapes a field as the extent list does (and loader.py
// prints sample names).
var listEscaper = strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`)

func entryOf(t *testing.T, entries []extents.Entry, sample string) extents.Entry {
	t.Helper()
	for _, e := range entries {
		if e.Sample == sample {
			return e
		}
	}
	t.Fatalf("no entry %q", sample)
	return extents.Entry{}
}

// loaderRun is one run of loader.py.
type loaderRun struct{ args []string }

// loaderCmd runs loader.py with --sha256 on a shard directory, on the CPU.
func loaderCmd(dir string) loaderRun {
	return loaderRun{args: []string{"../examples/gds/loader.py", dir, "--sha256", "--batch", "7", "--device", "cpu"}}
}

// run runs it, bounded in time, and returns its stdout and stderr.
func (l loaderRun) run(t *testing.T) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, systemPython, l.args...)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// runLoader runs loader.py with --sha256 on a shard directory, checks its
// per-sample lines and that its summary ends with summaryEnd, and returns
// its stderr (the warnings).
func runLoader(t *testing.T, dir string, want []string, summaryEnd string) string {
	t.Helper()
	out, errOut, err := loaderCmd(dir).run(t)
	if err != nil {
		t.Fatalf("loader.py: %v\n%s%s", err, out, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != len(want)+1 {
		t.Fatalf("%d lines, want %d:\n%s%s", len(lines), len(want)+1, out, errOut)
	}
	for i, w := range want {
		if lines[i] != w {
			t.Fatalf("sample %d: %q, want %q\n%s", i, lines[i], w, errOut)
		}
	}
	sum := lines[len(want)]
	if !strings.HasPrefix(sum, fmt.Sprintf("read %d samples", len(want))) || !strings.Contains(sum, "by posix into cpu") || !strings.HasSuffix(sum, summaryEnd) {
		t.Errorf("summary %q, want it to end with %q\n%s", sum, summaryEnd, errOut)
	}
	return errOut
}
