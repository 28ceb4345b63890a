package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
)

// tarMembers maps the members of an extracted tar view (GNU tar -xf into
// dir) to their bytes' hash.
func tarMembers(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	entries, err := os.ReadDir(dir)
	must(t, err)
	for _, e := range entries {
		if !e.Type().IsRegular() {
			t.Fatalf("tar -xf made %s (%v), want regular files only", e.Name(), e.Type())
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		must(t, err)
		out[e.Name()] = sha256.Sum256(b)
	}
	return out
}

// pythonTarMembers lists the members of a tar file as Python's tarfile
// reads it (streaming, as a WebDataset loader does): "name sha256" lines.
func pythonTarMembers(t *testing.T, path string) map[string][32]byte {
	t.Helper()
	script := `
import hashlib, sys, tarfile
with tarfile.open(sys.argv[1], mode="r|") as tf:
    for m in tf:
        print(m.name, hashlib.sha256(tf.extractfile(m).read()).hexdigest())
`
	out, err := exec.Command("/usr/bin/python3", "-c", script, path).Output()
	if err != nil {
		t.Fatalf("python tarfile: %v", err)
	}
	got := map[string][32]byte{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, sum, _ := strings.Cut(line, " ")
		b, err := hex.DecodeString(sum)
		if err != nil || len(b) != 32 {
			t.Fatalf("python line %q: %v", line, err)
		}
		got[name] = [32]byte(b)
	}
	return got
}

// TestMountTarView: each shard's tar view (version/N/shard/K.tar), taken
// apart by GNU tar and by Python's tarfile, holds exactly the per-file
// view's samples, byte for byte, and their classes as <key>.cls; reads at
// random offsets give the same bytes as the whole file; its size at stat
// is its length. Bytes, JSON rows, and images in class folders, two shards.
func TestMountTarView(t *testing.T) {
	bin := mounttest.Binary(t)
	digits := testkit.MNIST(t, testkit.MNISTTest)[:300]
	tbl := newDeltaTable(t, filepath.Join(t.TempDir(), "t"))
	tbl.commit(time.UnixMilli(1_700_000_000_000), digitSchema, chunk(digits, 100))
	for _, mode := range []struct {
		name  string
		flags []string
	}{
		{"bytes", nil},
		{"json", []string{"--data-column", "-"}},
		{"images", []string{"--image", "28x28", "--class-column", "label"}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			m := mounttest.Start(t, bin, tbl.dir, append([]string{"--cache-dir", t.TempDir(), "--shards", "2"}, mode.flags...)...)
			shards := filepath.Join(m.Dir, "version", "0", "shard")
			entries, err := os.ReadDir(shards)
			must(t, err)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if fmt.Sprint(names) != "[0 0.tar 1 1.tar]" {
				t.Fatalf("shard/ lists %v", names)
			}
			total := 0
			for k := range 2 {
				tarPath := filepath.Join(shards, fmt.Sprintf("%d.tar", k))
				out := t.TempDir()
				if b, err := exec.Command("tar", "-xf", tarPath, "-C", out).CombinedOutput(); err != nil {
					t.Fatalf("tar -xf %s: %v\n%s", tarPath, err, b)
				}
				got := tarMembers(t, out)
				want := map[string][32]byte{}
				for p, h := range hashShard(t, filepath.Join(shards, fmt.Sprint(k))) {
					key, ext, _ := strings.Cut(filepath.Base(p), ".")
					want[key+"."+ext] = h
					if dir := filepath.Dir(p); dir != "." {
						want[key+".cls"] = sha256.Sum256([]byte(dir))
					}
				}
				total += len(want)
				if len(got) != len(want) {
					t.Fatalf("shard %d: %d members, want %d", k, len(got), len(want))
				}
				for name, h := range want {
					if got[name] != h {
						t.Fatalf("shard %d: member %s differs from the per-file view", k, name)
					}
				}
				py := pythonTarMembers(t, tarPath)
				if len(py) != len(want) {
					t.Fatalf("shard %d: Python's tarfile reads %d members, want %d", k, len(py), len(want))
				}
				for name, h := range want {
					if py[name] != h {
						t.Fatalf("shard %d: Python reads member %s differently", k, name)
					}
				}
				// Random ranges equal the whole file's bytes.
				whole, err := os.ReadFile(tarPath)
				must(t, err)
				fi, err := os.Stat(tarPath)
				must(t, err)
				if fi.Size() != int64(len(whole)) || fi.Mode().Perm() != 0o444 {
					t.Fatalf("shard %d: stat says %d bytes (%v), reading gives %d", k, fi.Size(), fi.Mode(), len(whole))
				}
				f, err := os.Open(tarPath)
				must(t, err)
				rng := rand.New(rand.NewPCG(uint64(k), 7))
				for range 200 {
					off := rng.Int64N(int64(len(whole)))
					buf := make([]byte, 1+rng.IntN(200_000))
					n, err := f.ReadAt(buf, off)
					if err != nil && err != io.EOF {
						t.Fatal(err)
					}
					if !bytes.Equal(buf[:n], whole[off:min(int(off)+len(buf), len(whole))]) {
						t.Fatalf("shard %d: %d bytes at %d differ from the whole file", k, len(buf), off)
					}
				}
				f.Close()
			}
			perSample := 1
			if mode.name == "images" {
				perSample = 2
			}
			if total != 300*perSample {
				t.Fatalf("%d members over both shards, want %d", total, 300*perSample)
			}
		})
	}
}

// TestMountTarViewFailsClosed: a tar view whose shard cannot be indexed
// fails at stat and read (EIO), and one with a damaged page fails the
// reads that cover it (GNU tar exits non-zero), while the tar views of
// the other shards read whole.
func TestMountTarViewFailsClosed(t *testing.T) {
	bin := mounttest.Binary(t)
	digits := testkit.MNIST(t, testkit.MNISTTest)[:300]
	for _, dmg := range dataFileDamages {
		if dmg.name == "count" {
			continue // a log claim: covered by the shard tests, same index path
		}
		t.Run(dmg.name, func(t *testing.T) {
			tbl := newDeltaTable(t, filepath.Join(t.TempDir(), "t"))
			_, paths := tbl.commit(time.UnixMilli(1_700_000_000_000), digitSchema, chunk(digits, 100))
			sort.Strings(paths)
			dmg.apply(t, tbl.dir, paths[2])
			m := mounttest.Start(t, bin, tbl.dir, "--cache-dir", "none", "--image", "28x28", "--class-column", "label",
				"--shards", "3", "--shard-layout", "contiguous")
			shards := filepath.Join(m.Dir, "version", "0", "shard")
			bad := -1
			for k := range 3 {
				tarPath := filepath.Join(shards, fmt.Sprintf("%d.tar", k))
				out := t.TempDir()
				b, err := exec.Command("tar", "-xf", tarPath, "-C", out).CombinedOutput()
				if err == nil {
					if n := len(tarMembers(t, out)); n != 200 {
						t.Fatalf("shard %d: %d members, want 200", k, n)
					}
					continue
				}
				if bad >= 0 {
					t.Fatalf("shards %d and %d fail: one data file is damaged\n%s", bad, k, b)
				}
				bad = k
				if _, err := os.ReadFile(tarPath); !errors.Is(err, syscall.EIO) {
					t.Fatalf("reading shard %d's tar: %v, want EIO", k, err)
				}
			}
			if bad < 0 {
				t.Fatal("every tar view read whole with a damaged data file")
			}
			waitLog(t, m, 5*time.Second, "ERROR", paths[2], dmg.cause)
		})
	}
}
