package gds

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/internal/mounttest"
)

// mountDigits imports n random 28x28 digits (the MNIST .npy layout) with
// `deltafs import` and mounts them as PNGs in two shards with a disk cache
// in cacheDir, plus flags.
func mountDigits(t *testing.T, n int, cacheDir string, flags ...string) *mounttest.Mount {
	t.Helper()
	bin := mounttest.Binary(t)
	header := fmt.Sprintf("{'descr': [('id', '<i8'), ('label', '|u1'), ('pixels', '|u1', (784,))], 'fortran_order': False, 'shape': (%d,), }", n)
	for (10+len(header)+1)%64 != 0 {
		header += " "
	}
	b := []byte("\x93NUMPY\x01\x00")
	b = binary.LittleEndian.AppendUint16(b, uint16(len(header)+1))
	b = append(b, header+"\n"...)
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	for i := range n {
		b = binary.LittleEndian.AppendUint64(b, uint64(i))
		b = append(b, byte(i%10))
		for range 784 {
			b = append(b, byte(rng.IntN(256)))
		}
	}
	src := filepath.Join(t.TempDir(), "digits.npy")
	if err := os.WriteFile(src, b, 0o644); err != nil {
		t.Fatal(err)
	}
	table := filepath.Join(t.TempDir(), "digits")
	if out, err := mounttest.Run(bin, "import", src, table, "--rows-per-file", "60"); err != nil {
		t.Fatalf("deltafs import: %v\n%s", err, out)
	}
	return mounttest.Start(t, bin, table, append([]string{"--image", "28x28", "--shards", "2", "--cache-dir", cacheDir}, flags...)...)
}

// checkBatch compares every sample in dst (at res.Offsets) with its file
// under the mount.
func checkBatch(t *testing.T, r *Reader, s *Shard, names []string, dst DeviceBuffer, res ShardResult) {
	t.Helper()
	for i, name := range names {
		want, err := os.ReadFile(filepath.Join(s.Dir(), name))
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(want))
		if err := r.CopyToHost(got, dst, res.Offsets[i]); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes in the device buffer differ from the sample file", name, len(want))
		}
	}
}

// TestReadShardSamples reads every sample of a mounted shard into a (fake,
// host-backed) device buffer by GDS through the shard's manifest, and
// compares with the sample files; then evicts every entry from the disk
// cache behind the mount's back and reads again: ReadSamples re-reads the
// manifest (re-materialising) and gets the same bytes.
func TestReadShardSamples(t *testing.T) {
	f := fakes(t)
	r := newReader(t, f.opts(ModeAuto))
	if r.Path() != PathGDS {
		t.Fatalf("path %v (%v)", r.Path(), r.Info().Reason)
	}
	cacheDir := t.TempDir()
	m := mountDigits(t, 200, cacheDir)
	for k := range 2 {
		s, err := OpenShard(filepath.Join(m.Dir, "version", "0", "shard", fmt.Sprint(k)))
		if err != nil {
			t.Fatal(err)
		}
		names := s.Samples()
		if len(names) != 100 {
			t.Fatalf("shard %d: %d samples, want 100", k, len(names))
		}
		exts, err := s.Extents(nil)
		if err != nil {
			t.Fatal(err)
		}
		_, size := r.BatchLayout(exts)
		dst := alloc(t, r, size)
		res, err := r.ReadSamples(context.Background(), s, nil, dst)
		if err != nil {
			t.Fatal(err)
		}
		if res.Count(PathGDS) != len(names) || res.FromMount != 0 {
			t.Fatalf("%d of %d samples by GDS, %d from the mount", res.Count(PathGDS), len(names), res.FromMount)
		}
		checkBatch(t, r, s, names, dst, res)
		for _, c := range f.calls("register") {
			if !strings.HasPrefix(c.fields["path"], cacheDir+"/") {
				t.Fatalf("cuFile registered %s, not a cache file", c.fields["path"])
			}
		}

		// Evict: the extents the Shard holds now name missing files.
		for _, e := range exts {
			os.Remove(e.Path)
		}
		res, err = r.ReadSamples(context.Background(), s, nil, dst)
		if err != nil {
			t.Fatalf("after eviction: %v", err)
		}
		checkBatch(t, r, s, names, dst, res)
		if res.FromMount != 0 {
			t.Fatalf("%d samples from the mount after re-materialisation, want 0", res.FromMount)
		}

		// A subset, in another order.
		sub := []string{names[7], names[3], names[99]}
		if res, err = r.ReadSamples(context.Background(), s, sub, dst); err != nil {
			t.Fatal(err)
		}
		checkBatch(t, r, s, sub, dst, res)
		if _, err := r.ReadSamples(context.Background(), s, []string{"nope.png"}, dst); err == nil || !strings.Contains(err.Error(), `no sample "nope.png"`) {
			t.Fatalf("unknown sample: %v", err)
		}
	}
	if _, err := OpenShard(filepath.Join(m.Dir, "version", "0")); err == nil || !strings.Contains(err.Error(), "not a deltafs shard directory") {
		t.Fatalf("OpenShard on a version directory: %v", err)
	}
}

// TestReadShardTooSmallCache: with a disk budget too small for any entry,
// no sample can be materialised; ReadSamples and ReadSample read every
// sample from its file in the mount instead (through host memory, the
// compat path), with the same bytes.
func TestReadShardTooSmallCache(t *testing.T) {
	f := fakes(t)
	r := newReader(t, f.opts(ModeAuto))
	m := mountDigits(t, 40, t.TempDir(), "--cache-size", "4KiB", "--xattrs")
	s, err := OpenShard(filepath.Join(m.Dir, "version", "0", "shard", "0"))
	if err != nil {
		t.Fatal(err)
	}
	names := s.Samples()
	exts, _ := s.Extents(nil)
	_, size := r.BatchLayout(exts)
	dst := alloc(t, r, size)
	res, err := r.ReadSamples(context.Background(), s, nil, dst)
	if err != nil {
		t.Fatal(err)
	}
	if res.FromMount != len(names) || res.Count(PathCompat) != len(names) || len(names) != 20 {
		t.Fatalf("%d of %d samples from the mount, %d by compat", res.FromMount, len(names), res.Count(PathCompat))
	}
	checkBatch(t, r, s, names, dst, res)
	p := filepath.Join(s.Dir(), names[3])
	want, _ := os.ReadFile(p)
	one, err := r.ReadSample(context.Background(), p, dst)
	got := make([]byte, len(want))
	if err == nil {
		err = r.CopyToHost(got, dst, 0)
	}
	if err != nil || one.Path != PathCompat || !bytes.Equal(got, want) {
		t.Fatalf("ReadSample: %v, path %v, bytes equal %v", err, one.Path, bytes.Equal(got, want))
	}
}

// TestReadSample reads single samples by path, through the xattr (--xattrs)
// and through the shard manifest (without), also after eviction.
func TestReadSample(t *testing.T) {
	f := fakes(t)
	r := newReader(t, f.opts(ModeAuto))
	for _, flags := range [][]string{{"--xattrs"}, nil} {
		cacheDir := t.TempDir()
		m := mountDigits(t, 40, cacheDir, flags...)
		sd := filepath.Join(m.Dir, "version", "0", "shard", "1")
		ents, err := os.ReadDir(sd)
		if err != nil {
			t.Fatal(err)
		}
		dst := alloc(t, r, 1<<20)
		n := 0
		for _, de := range ents {
			if !strings.HasSuffix(de.Name(), ".png") {
				continue
			}
			p := filepath.Join(sd, de.Name())
			want, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			for pass := range 2 {
				e, err := SampleExtent(p)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(e.Path, cacheDir+"/") || !e.Aligned() || e.Length != int64(len(want)) {
					t.Fatalf("%s: extent %s", p, e)
				}
				res, err := r.ReadSample(context.Background(), p, dst)
				if err != nil {
					t.Fatalf("%v %s (pass %d): %v", flags, p, pass, err)
				}
				got := make([]byte, len(want))
				if err := r.CopyToHost(got, dst, 0); err != nil {
					t.Fatal(err)
				}
				if res.Path != PathGDS || !bytes.Equal(got, want) {
					t.Fatalf("%v %s: path %v, bytes differ: %v", flags, p, res.Path, !bytes.Equal(got, want))
				}
				os.Remove(e.Path) // evicted: the next pass re-materialises it
			}
			n++
		}
		if n != 20 {
			t.Fatalf("%d samples in shard 1, want 20", n)
		}
	}
	outside := filepath.Join(t.TempDir(), "x.png")
	if err := os.WriteFile(outside, []byte("png"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := SampleExtent(outside); err == nil || !strings.Contains(err.Error(), "no extent") {
		t.Fatalf("a file outside a mount: %v", err)
	}
}

// TestExampleLoaderOnMount runs examples/gds/loader.py on a real mounted
// shard: every sample's SHA-256 matches its file in the mount. After every
// entry is evicted, the loader's read of _extents.tsv materialises the
// shard again, so it still reads everything from the cache.
func TestExampleLoaderOnMount(t *testing.T) {
	if out, err := exec.Command(systemPython, "-c", "import torch").CombinedOutput(); err != nil {
		t.Fatalf("%s with torch is needed for the example loader (Debian: python3-torch): %v\n%s", systemPython, err, out)
	}
	cacheDir := t.TempDir()
	m := mountDigits(t, 120, cacheDir)
	sd := filepath.Join(m.Dir, "version", "0", "shard", "0")
	s, err := OpenShard(sd)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, name := range s.Samples() {
		b, err := os.ReadFile(filepath.Join(sd, name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		want = append(want, hex.EncodeToString(sum[:])+"\t"+escapeField(name))
	}
	runLoader(t, sd, want, "; 0 through the mount (evicted)")
	exts, _ := s.Extents(nil)
	for _, e := range exts {
		if err := os.Remove(e.Path); err != nil {
			t.Fatal(err)
		}
	}
	runLoader(t, sd, want, "; 0 through the mount (evicted)")
	for _, e := range exts {
		if _, err := os.Stat(e.Path); err != nil {
			t.Fatalf("the loader's manifest read did not re-materialise %s: %v", e, err)
		}
	}
}
