package gds

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// systemPython is the interpreter with Debian's torch (see README).
const systemPython = "/usr/bin/python3"

// TestExampleLoader runs examples/gds/loader.py (without kvikio or a GPU:
// its POSIX path) on a manifest written by WriteManifest, with escaped
// sample names and relative cache paths, and checks every sample's
// SHA-256 against the cache files. The manifest's directory stands in for
// the mount's shard directory: it holds the sample files too, and after
// one cache file is removed and another truncated (evicted), the loader
// reads exactly the samples they held from there instead.
func TestExampleLoader(t *testing.T) {
	if out, err := exec.Command(systemPython, "-c", "import torch").CombinedOutput(); err != nil {
		t.Fatalf("%s with torch is needed for the example loader (Debian: python3-torch): %v\n%s", systemPython, err, out)
	}
	l := newCacheLayout(t, 3, 60)
	dir := filepath.Dir(l.exts[0].Path)
	var entries []ManifestEntry
	var want []string
	for i, e := range l.exts {
		name := []string{"7/%03d.png", "tab\there %03d.bin", `back\slash/ü %03d.jpg`}[i%3]
		name = strings.Replace(name, "%03d", string(rune('A'+i%26))+string(rune('a'+i/26)), 1)
		rel := e
		rel.Path = filepath.Base(e.Path) // relative to the manifest's directory
		entries = append(entries, ManifestEntry{Sample: name, Extent: rel})
		sum := sha256.Sum256(l.want[i])
		want = append(want, hex.EncodeToString(sum[:])+"\t"+escapeField(name))
	}
	var m bytes.Buffer
	if err := WriteManifest(&m, entries); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestName), m.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
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
	runLoader(t, dir, want, "; 0 through the mount (evicted)")

	// Evict: remove one cache file, cut another in half.
	gone, cut := l.exts[0].Path, ""
	for _, e := range l.exts {
		if e.Path != gone {
			cut = e.Path
			break
		}
	}
	half := int64(len(l.files[cut])) / 2
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(cut, half); err != nil {
		t.Fatal(err)
	}
	evicted := 0
	for _, e := range l.exts {
		if e.Path == gone || e.Path == cut && e.End() > half {
			evicted++
		}
	}
	if evicted == 0 || evicted == len(l.exts) {
		t.Fatalf("%d of %d samples evicted: the test needs some of each", evicted, len(l.exts))
	}
	runLoader(t, dir, want, fmt.Sprintf("; %d through the mount (evicted)", evicted))
}

// runLoader runs loader.py with --sha256 on a shard directory and checks
// its per-sample lines and that its summary ends with summaryEnd.
func runLoader(t *testing.T, dir string, want []string, summaryEnd string) {
	t.Helper()
	cmd := exec.Command(systemPython, "../examples/gds/loader.py", dir, "--sha256", "--batch", "7", "--device", "cpu")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("loader.py: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != len(want)+1 {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want)+1, out)
	}
	for i, w := range want {
		if lines[i] != w {
			t.Fatalf("sample %d: %q, want %q", i, lines[i], w)
		}
	}
	sum := lines[len(want)]
	if !strings.HasPrefix(sum, fmt.Sprintf("read %d samples", len(want))) || !strings.Contains(sum, "by posix into cpu") || !strings.HasSuffix(sum, summaryEnd) {
		t.Errorf("summary %q, want it to end with %q", sum, summaryEnd)
	}
}
