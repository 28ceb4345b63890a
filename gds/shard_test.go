package gds

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/extents"
	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
)

// mountDigits imports n random 28x28 digits (the MNIST .npy layout) with
// `deltafs import` and mounts them as PNGs in two shards with a disk cache
// in cacheDir, plus flags.
func mountDigits(t *testing.T, n int, cacheDir string, flags ...string) *mounttest.Mount {
	t.Helper()
	bin := mounttest.Binary(t)
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	digits := make([]testkit.Digit, n)
	for i := range digits {
		pixels := make([]byte, 784)
		for j := range pixels {
			pixels[j] = byte(rng.IntN(256))
		}
		digits[i] = testkit.Digit{ID: int64(i), Label: int32(i % 10), Pixels: pixels}
	}
	src := filepath.Join(t.TempDir(), "digits.npy")
	if err := os.WriteFile(src, testkit.MNISTNPY(digits), 0o644); err != nil {
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
func checkBatch(t *testing.T, r *Reader, s *extents.Shard, names []string, dst DeviceBuffer, res ShardResult) {
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
// host-backed) device buffer by GDS through the shard's extent list, and
// compares with the sample files; then evicts every entry from the disk
// cache behind the mount's back and reads again: ReadSamples re-reads the
// extent list (re-materialising) and gets the same bytes.
func TestReadShardSamples(t *testing.T) {
	f := fakes(t)
	r := newReader(t, f.opts(ModeAuto))
	if r.Path() != PathGDS {
		t.Fatalf("path %v (%v)", r.Path(), r.Info().Reason)
	}
	cacheDir := t.TempDir()
	m := mountDigits(t, 200, cacheDir)
	for k := range 2 {
		s, err := extents.OpenShard(filepath.Join(m.Dir, "version", "0", "shard", fmt.Sprint(k)))
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
	if _, err := extents.OpenShard(filepath.Join(m.Dir, "version", "0")); err == nil || !strings.Contains(err.Error(), "not a deltafs shard directory") {
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
	s, err := extents.OpenShard(filepath.Join(m.Dir, "version", "0", "shard", "0"))
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
// and through the shard's extent list (without, and through --overlay's
// overlayfs), also after eviction.
func TestReadSample(t *testing.T) {
	f := fakes(t)
	r := newReader(t, f.opts(ModeAuto))
	// The default (overlays): the extent list is read through an
	// overlayfs, whose page cache must not serve a list materialised
	// before an eviction.
	for _, flags := range [][]string{{"--xattrs", "--overlay=false"}, {"--overlay=false"}, nil} {
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
				e, err := extents.SampleExtent(p)
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
	if _, err := extents.SampleExtent(outside); err == nil || !strings.Contains(err.Error(), "no extent") {
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
	s, err := extents.OpenShard(sd)
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
		want = append(want, hex.EncodeToString(sum[:])+"\t"+listEscaper.Replace(name))
	}
	runLoader(t, sd, want, "; 0 corrupt in the cache (read again); 0 through the mount")
	exts, _ := s.Extents(nil)
	for _, e := range exts {
		if err := os.Remove(e.Path); err != nil {
			t.Fatal(err)
		}
	}
	runLoader(t, sd, want, "; 0 corrupt in the cache (read again); 0 through the mount")
	for _, e := range exts {
		if _, err := os.Stat(e.Path); err != nil {
			t.Fatalf("the loader's extent list read did not re-materialise %s: %v", e, err)
		}
	}
}

// damage is one way a cache entry goes wrong behind a reader's back.
type damage struct {
	name string
	do   func(t *testing.T, ents []extents.Entry) []string
}

// damages are the ways a cache entry goes wrong behind a reader's back,
// after it took the extents: each damages some entries of ents and
// returns the samples whose cache bytes are now wrong.
var damages = []damage{
	{"flip", func(t *testing.T, ents []extents.Entry) []string {
		// One byte in the middle of a payload: only a checksum tells.
		e := ents[1]
		testkit.FlipByte(t, e.Path, e.Offset+e.Length/2)
		return []string{e.Sample}
	}},
	{"truncate", func(t *testing.T, ents []extents.Entry) []string {
		e := ents[2]
		if err := os.Truncate(e.Path, e.Offset+e.Length/2); err != nil {
			t.Fatal(err)
		}
		return []string{e.Sample}
	}},
	{"swap", func(t *testing.T, ents []extents.Entry) []string {
		// Two entries' files trade places: same layout, same length (the
		// digits are all 880-byte PNGs), another sample's bytes.
		a, b := ents[3], ents[4]
		if a.Length != b.Length {
			t.Fatalf("swap needs equal lengths: %d, %d", a.Length, b.Length)
		}
		for _, mv := range [][2]string{{a.Path, a.Path + ".swap"}, {b.Path, a.Path}, {a.Path + ".swap", b.Path}} {
			if err := os.Rename(mv[0], mv[1]); err != nil {
				t.Fatal(err)
			}
		}
		return []string{a.Sample, b.Sample}
	}},
}

// captureLog sends the default logger (where Reader warns) to a buffer
// for the rest of the test.
func captureLog(t *testing.T) *testkit.SyncBuffer {
	var b testkit.SyncBuffer
	saved := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&b, nil)))
	t.Cleanup(func() { slog.SetDefault(saved) })
	return &b
}

// sampleFiles reads every sample of s through the mount.
func sampleFiles(t *testing.T, s *extents.Shard) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, name := range s.Samples() {
		b, err := os.ReadFile(filepath.Join(s.Dir(), name))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = b
	}
	return out
}

// TestReadShardCorruptCache: on a real mount, the extent list's checksum of
// every sample is the CRC-32 of its file's bytes; then a cache entry is
// damaged (a flipped payload byte, a truncation, two entries' files
// swapped) after the shard's extent list was read. ReadSamples, by each path
// (GDS through the fake cuFile, compat, host), returns exactly the sample
// files' bytes, counts and logs the corrupt samples, and got them from the
// cache again (the extent list read re-materialised them), not the mount.
func TestReadShardCorruptCache(t *testing.T) {
	f := fakes(t)
	logs := captureLog(t)
	cacheDir := t.TempDir()
	m := mountDigits(t, 40, cacheDir)
	sd := filepath.Join(m.Dir, "version", "0", "shard", "0")
	s, err := extents.OpenShard(sd)
	if err != nil {
		t.Fatal(err)
	}
	files := sampleFiles(t, s)
	for _, e := range s.Entries() {
		if want := extents.ChecksumOf(files[e.Sample]); e.Sum != want {
			t.Fatalf("%s: extent list checksum %s, the sample file's CRC-32 is %s", e.Sample, e.Sum, want)
		}
	}
	for _, mode := range []Mode{ModeGDS, ModeCompat, ModeHost} {
		for _, d := range damages {
			t.Run(mode.String()+"/"+d.name, func(t *testing.T) {
				f = fakes(t)
				r := newReader(t, f.opts(mode))
				s, err := extents.OpenShard(sd) // re-materialises what the last case damaged
				if err != nil {
					t.Fatal(err)
				}
				bad := d.do(t, s.Entries())
				exts, _ := s.Extents(nil)
				_, size := r.BatchLayout(exts)
				dst := alloc(t, r, size)
				before := logs.String()
				res, err := r.ReadSamples(context.Background(), s, nil, dst)
				if err != nil {
					t.Fatal(err)
				}
				checkBatch(t, r, s, s.Samples(), dst, res)
				if res.Corrupt != len(bad) || res.FromMount != 0 {
					t.Fatalf("%d corrupt, %d from the mount; want %d corrupt (%v) read again from the cache", res.Corrupt, res.FromMount, len(bad), bad)
				}
				wantPath := map[Mode]Path{ModeGDS: PathGDS, ModeCompat: PathCompat, ModeHost: PathHost}[mode]
				for i, name := range s.Samples() {
					isBad := slices.Contains(bad, name)
					if res.Results[i].Corrupt != isBad || res.Results[i].Path != wantPath {
						t.Fatalf("%s: result %+v; damaged: %v", name, res.Results[i], isBad)
					}
				}
				warned := strings.TrimPrefix(logs.String(), before)
				if !strings.Contains(warned, "cache bytes failed verification") || !strings.Contains(warned, fmt.Sprintf("samples=%d", len(bad))) {
					t.Fatalf("no warning for the corrupt samples:\n%s", warned)
				}
				if mode == ModeGDS {
					// cuFile read the damaged entries too, before and after.
					reads := 0
					for _, c := range f.calls("read") {
						for _, e := range s.Entries() {
							if slices.Contains(bad, e.Sample) && c.fields["path"] == e.Path {
								reads++
							}
						}
					}
					if reads < 2*len(bad) || f.cudaStat("dtoh") == 0 {
						t.Fatalf("%d cuFile reads of the damaged entries, %d device-to-host copies", reads, f.cudaStat("dtoh"))
					}
				}
			})
		}
	}
}

// TestReadSampleCorruptCache: with --xattrs, every sample's xattr carries
// the CRC-32 of its file; ReadSampleExtent with an extent taken before its
// cache entry was damaged returns the sample file's bytes, by GDS after
// re-materialising, and reports the corruption.
func TestReadSampleCorruptCache(t *testing.T) {
	f := fakes(t)
	logs := captureLog(t)
	m := mountDigits(t, 40, t.TempDir(), "--xattrs")
	sd := filepath.Join(m.Dir, "version", "0", "shard", "1")
	for _, d := range damages {
		f = fakes(t)
		r := newReader(t, f.opts(ModeGDS))
		s, err := extents.OpenShard(sd)
		if err != nil {
			t.Fatal(err)
		}
		files := sampleFiles(t, s)
		var ents []extents.Entry
		for _, e := range s.Entries() {
			x, err := extents.SampleExtent(filepath.Join(sd, e.Sample))
			if err != nil {
				t.Fatal(err)
			}
			if x != e.Extent || x.Sum != extents.ChecksumOf(files[e.Sample]) {
				t.Fatalf("%s: xattr %s crc %s, extent list %s crc %s, file crc %s", e.Sample, x, x.Sum, e.Extent, e.Sum, extents.ChecksumOf(files[e.Sample]))
			}
			ents = append(ents, extents.Entry{Sample: e.Sample, Extent: x})
		}
		bad := d.do(t, ents)
		dst := alloc(t, r, 1<<20)
		for _, e := range ents {
			p := filepath.Join(sd, e.Sample)
			before := logs.String()
			res, err := r.ReadSampleExtent(context.Background(), p, e.Extent, dst)
			if err != nil {
				t.Fatalf("%s %s: %v", d.name, e.Sample, err)
			}
			got := make([]byte, e.Length)
			if err := r.CopyToHost(got, dst, 0); err != nil {
				t.Fatal(err)
			}
			isBad := slices.Contains(bad, e.Sample)
			if !bytes.Equal(got, files[e.Sample]) || res.Path != PathGDS || res.Corrupt != isBad {
				t.Fatalf("%s %s: bytes equal %v, result %+v, damaged %v", d.name, e.Sample, bytes.Equal(got, files[e.Sample]), res, isBad)
			}
			if warned := strings.TrimPrefix(logs.String(), before); isBad != strings.Contains(warned, "failed verification") {
				t.Fatalf("%s %s: damaged %v, log:\n%s", d.name, e.Sample, isBad, warned)
			}
		}
	}
}

// loaderDriver reads a shard's extent list with examples/gds/loader.py, says
// "ready", waits for a line on stdin, then reads every sample by the
// loader's ExtentReader and prints each one's SHA-256 and escaped name,
// and the corrupt and through-the-mount counts. With "kvikio" it runs the
// loader's kvikio branch against a stand-in for kvikio.CuFile that preads
// into the (CPU) tensor: there is no GPU here, but the branch's reads,
// copy back to host, checks and recovery run as written.
const loaderDriver = `
import hashlib, os, sys, types
sys.path.insert(0, sys.argv[1])
import loader, torch
shard, mode = sys.argv[2], sys.argv[3]

class Future:
    def __init__(self, n): self.n = n
    def get(self): return self.n

class CuFile:
    def __init__(self, path, flags="r"): self.fd = os.open(path, os.O_RDONLY)
    def pread(self, buf, size, file_offset=0):
        data = os.pread(self.fd, size, file_offset)
        if data:
            buf[:len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
        return Future(len(data))
    def close(self): os.close(self.fd)

exts = loader.read_extent_list(os.path.join(shard, loader.LIST_NAME))
print("ready", flush=True)
sys.stdin.readline()
reader = loader.ExtentReader("cpu", use_kvikio=False, shard_dir=shard)
if mode == "kvikio":
    loader.kvikio = types.SimpleNamespace(CuFile=CuFile)
    reader.path = "kvikio"
data, offsets = reader.read_batch(exts)
host = data.numpy().tobytes()
for e, o in zip(exts, offsets):
    print("%s\t%s" % (hashlib.sha256(host[o:o + e.length]).hexdigest(), loader.escape(e.sample)))
print("%s corrupt %d mount %d" % (reader.path, reader.corrupt, reader.fallbacks))
`

// TestExampleLoaderCorruptCache: examples/gds/loader.py reads a mounted
// shard's extent list, then a cache entry is damaged; the loader still
// delivers exactly the sample files' bytes, warns about the corrupt samples
// and counts them, and took them from the re-materialised cache. Both its
// plain path and its kvikio branch (against a stand-in for kvikio: see
// loaderDriver).
func TestExampleLoaderCorruptCache(t *testing.T) {
	if out, err := exec.Command(systemPython, "-c", "import torch").CombinedOutput(); err != nil {
		t.Fatalf("%s with torch is needed for the example loader (Debian: python3-torch): %v\n%s", systemPython, err, out)
	}
	m := mountDigits(t, 40, t.TempDir())
	sd := filepath.Join(m.Dir, "version", "0", "shard", "0")
	type run struct {
		mode string
		d    damage
	}
	var runs []run
	for _, mode := range []string{"posix", "kvikio"} {
		for _, d := range damages {
			runs = append(runs, run{mode, d})
		}
	}
	for _, run := range runs {
		d := run.d
		d.name = run.mode + "/" + d.name
		s, err := extents.OpenShard(sd)
		if err != nil {
			t.Fatal(err)
		}
		files := sampleFiles(t, s)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, systemPython, "-c", loaderDriver, "../examples/gds", sd, run.mode)
		cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		out := bufio.NewReader(stdout)
		if line, err := out.ReadString('\n'); line != "ready\n" {
			cancel()
			cmd.Wait()
			t.Fatalf("driver: %q %v\n%s", line, err, stderr.String())
		}
		bad := d.do(t, s.Entries())
		stdin.Write([]byte("go\n"))
		rest, _ := io.ReadAll(out)
		err = cmd.Wait()
		cancel()
		if err != nil {
			t.Fatalf("%s: loader: %v\n%s%s", d.name, err, rest, stderr.String())
		}
		lines := strings.Split(strings.TrimRight(string(rest), "\n"), "\n")
		if len(lines) != len(files)+1 {
			t.Fatalf("%s: %d lines for %d samples:\n%s", d.name, len(lines), len(files), rest)
		}
		for _, line := range lines[:len(files)] {
			sum, name, _ := strings.Cut(line, "\t")
			want := sha256.Sum256(files[name])
			if sum != hex.EncodeToString(want[:]) {
				t.Fatalf("%s: %s: loader's bytes differ from the sample file", d.name, name)
			}
		}
		if want := fmt.Sprintf("%s corrupt %d mount 0", run.mode, len(bad)); lines[len(files)] != want {
			t.Fatalf("%s: %q, want %q\n%s", d.name, lines[len(files)], want, stderr.String())
		}
		for _, name := range bad {
			if !strings.Contains(stderr.String(), name+": ") {
				t.Fatalf("%s: no warning names %s:\n%s", d.name, name, stderr.String())
			}
		}
	}
}
