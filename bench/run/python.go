package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Python's per-file cost on the 784 B workload (bench/scripts/py_open_read.py):
// open + read of every sample of shard 0, as CPython reads a sample —
// open(path, "rb").read(), whose default buffering asks isatty (an
// ioctl(TCGETS), one FUSE round trip per open) — and with buffering=0 (no
// isatty) beside it; by 1 thread and 8 processes (threads share the GIL,
// so 8 threads fall short of 8 processes where Python's own work
// dominates: see bench/RESULTS.md, "Go benchmarks"). On deltafs (cold: fresh mount, empty cache; kernel-warm: the
// same files again on that mount; cache-warm: a fresh mount over the warm
// disk cache), on the FUSE floor (a fresh mount, which serves from memory,
// is both its cold and its cache-warm; kernel-warm: again on that mount)
// and on tmpfs (the shard's copy). Every deltafs figure is set over tmpfs's
// and the floor's of the same run as a ratio series; the target table has
// the kernel-warm default-buffering one over tmpfs.
//
// And the IOCTL round trip alone: TCGETS, what isatty asks, on one open
// sample of deltafs, of the floor (which answers ENOTTY at once, as deltafs
// does) and of tmpfs, in interleaved batches; µs per call.

// pyReaders are the reader shapes: name, script flags.
var pyReaders = []struct{ name, flags string }{{"1t", "--threads 1"}, {"8p", "--threads 8 --processes"}}

// pyBufferings are open()'s buffering modes: name in the series, flag.
var pyBufferings = []struct{ name, flag string }{{"", "default"}, {", buffering=0", "0"}}

const (
	ioctlBatches = 5    // interleaved batches per server and run (the median is kept)
	ioctlCalls   = 4000 // TCGETS per batch
)

func pythonFigures() []figure {
	var fs []figure
	for _, r := range pyReaders {
		p := "mnist-784B/python/" + r.name + "/"
		fs = append(fs, figure{"Python open+read, kernel-warm, default buffering / tmpfs (784 B, " + r.name + ")", p + "deltafs kernel-warm", p + "tmpfs", "report", nil})
	}
	fs = append(fs,
		figure{"IOCTL (TCGETS) round trip, deltafs (µs)", "mnist-784B/ioctl/deltafs", "", "report", nil},
		figure{"IOCTL round trip, deltafs / FUSE floor", "mnist-784B/ioctl/deltafs", "mnist-784B/ioctl/FUSE floor", "report", nil},
		figure{"IOCTL round trip, deltafs / tmpfs", "mnist-784B/ioctl/deltafs", "mnist-784B/ioctl/tmpfs", "report", nil})
	return fs
}

// pyRead runs the Python loop over root and returns files/s.
func (b *bench) pyRead(root, readerFlags, buffering string) (float64, error) {
	args := append([]string{"bench/scripts/py_open_read.py", root}, strings.Fields(readerFlags)...)
	out, err := run(b.python, append(args, "--buffering", buffering)...)
	if err != nil {
		return 0, err
	}
	var r struct {
		Files     int     `json:"files"`
		FilesPerS float64 `json:"files_per_s"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		return 0, fmt.Errorf("py_open_read printed %q: %w", out, err)
	}
	if r.Files == 0 {
		return 0, errors.New("py_open_read found no files")
	}
	return r.FilesPerS, nil
}

// pythonLoops is one run of the Python loops: per reader shape, deltafs's
// three states, the floor's two and tmpfs, both bufferings.
func (b *bench) pythonLoops(w, table, tmpfs string, files int) error {
	for _, r := range pyReaders {
		p := fmt.Sprintf("%s/python/%s/", w, r.name)
		got := map[string]float64{}
		measure := func(key, root, buffering string) error {
			v, err := b.pyRead(root, r.flags, buffering)
			if err != nil {
				return err
			}
			got[key] = v
			b.add(p+key, "files/s", v)
			return nil
		}
		for _, buf := range pyBufferings {
			if err := measure("tmpfs"+buf.name, tmpfs, buf.flag); err != nil {
				return err
			}
		}
		// The floor: a fresh mount per buffering (cold), then again on it.
		for _, buf := range pyBufferings {
			f, err := b.mountFloor(files, 784)
			if err != nil {
				return err
			}
			err = measure("FUSE floor fresh mount"+buf.name, f.dir, buf.flag)
			if err == nil {
				err = measure("FUSE floor kernel-warm"+buf.name, f.dir, buf.flag)
			}
			f.unmount()
			if err != nil {
				return err
			}
		}
		// deltafs: per buffering, a fresh mount with an empty cache (cold,
		// then kernel-warm), then a fresh mount over that cache.
		for _, buf := range pyBufferings {
			cache, err := os.MkdirTemp(b.out, "cache-")
			if err != nil {
				return err
			}
			err = func() error {
				defer os.RemoveAll(cache)
				for _, state := range []string{"cold", "cache-warm"} {
					m, err := b.mount(table, "--cache-dir", cache)
					if err != nil {
						return err
					}
					root := filepath.Join(m.dir, "latest", "shard", "0")
					err = measure("deltafs "+state+buf.name, root, buf.flag)
					if err == nil && state == "cold" {
						err = measure("deltafs kernel-warm"+buf.name, root, buf.flag)
					}
					m.unmount()
					if err != nil {
						return err
					}
				}
				return nil
			}()
			if err != nil {
				return err
			}
		}
		for _, buf := range pyBufferings {
			for _, st := range []struct{ state, floor string }{{"cold", "fresh mount"}, {"cache-warm", "fresh mount"}, {"kernel-warm", "kernel-warm"}} {
				d := got["deltafs "+st.state+buf.name]
				b.add(p+"deltafs / tmpfs, "+st.state+buf.name, "ratio", d/got["tmpfs"+buf.name])
				b.add(p+"deltafs / FUSE floor, "+st.state+buf.name, "ratio", d/got["FUSE floor "+st.floor+buf.name])
			}
		}
	}
	return nil
}

// ioctlRoundTrips times TCGETS on one open sample of deltafs (table), of
// the floor and of the tmpfs copy, in interleaved batches, and records the
// median batch of each in µs per call.
func (b *bench) ioctlRoundTrips(w, table, tmpfs string, files int) error {
	m, err := b.mount(table, "--cache-dir", "none")
	if err != nil {
		return err
	}
	defer m.unmount()
	f, err := b.mountFloor(files, 784)
	if err != nil {
		return err
	}
	defer f.unmount()
	first, err := sampleList(tmpfs)
	if err != nil || len(first) == 0 {
		return fmt.Errorf("%s: no samples listed (%v)", tmpfs, err)
	}
	paths := []struct{ name, path string }{
		{"deltafs", filepath.Join(m.dir, "latest", "shard", "0", first[0])},
		{"FUSE floor", filepath.Join(f.dir, name0)},
		{"tmpfs", filepath.Join(tmpfs, first[0])},
	}
	calls := ioctlCalls
	if b.quick {
		calls = 1000
	}
	per := make([][]float64, len(paths))
	fds := make([]*os.File, len(paths))
	for i, p := range paths {
		if fds[i], err = os.Open(p.path); err != nil {
			return err
		}
		defer fds[i].Close()
	}
	for range ioctlBatches {
		for i, p := range paths {
			us, err := tcgets(fds[i], calls)
			if err != nil {
				return fmt.Errorf("%s: %w", p.path, err)
			}
			per[i] = append(per[i], us)
		}
	}
	for i, p := range paths {
		sort.Float64s(per[i])
		b.add(w+"/ioctl/"+p.name, "µs/call", per[i][len(per[i])/2])
	}
	return nil
}

// name0 is the floor's first file (bench/floor names them %08d.bin).
const name0 = "00000000.bin"

// tcgets asks isatty's question n times of f and returns µs per call; any
// answer but ENOTTY fails (no sample is a terminal, and the servers
// compared must answer alike).
func tcgets(f *os.File, n int) (float64, error) {
	fd := int(f.Fd())
	start := time.Now()
	for range n {
		if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); !errors.Is(err, unix.ENOTTY) {
			return 0, fmt.Errorf("ioctl(TCGETS) answered %v, want ENOTTY", err)
		}
	}
	return time.Since(start).Seconds() * 1e6 / float64(n), nil
}
