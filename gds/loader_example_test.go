package gds

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
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
// SHA-256 against the cache files.
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
	if !strings.HasPrefix(lines[len(want)], "read 60 samples") || !strings.Contains(lines[len(want)], "by posix into cpu") {
		t.Errorf("summary %q", lines[len(want)])
	}
}
