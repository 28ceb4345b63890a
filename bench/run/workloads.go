package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/deltafs/deltafs/bench/samplelist"
)

// Keys of MOUNTPOINT/.deltafs/stats read by the benchmarks.
const (
	statStorageBytes = "storage.bytes_read"           // all bytes read from the table's storage
	statDataBytes    = "storage.data_file_bytes_read" // of which from data files (all readers: pages, tails, index scans)
	statDataReads    = "storage.data_file_reads"      // ranged reads of data files
	statIndexBytes   = "index.bytes_per_sample"       // memory of the sample index
)

type workload struct {
	name string
	run  func(*bench) error
}

var workloads = []workload{
	{"mnist-784B", mnistWorkload},
	{"jpeg-100KB", largeWorkload},
	{"million", millionWorkload},
}

// table imports src into a table under out/tables once.
func (b *bench) table(name, src string, extra ...string) (string, error) {
	table := filepath.Join(b.out, "tables", name)
	if _, err := os.Stat(filepath.Join(table, "_delta_log")); err == nil {
		return table, nil
	}
	_, err := run(b.deltafs, append([]string{"import", src, table}, extra...)...)
	return table, err
}

// copyOf mounts table with flags and copies shard 0 to dst once.
func (b *bench) copyOf(table, dst string, flags ...string) error {
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	m, err := b.mount(table, flags...)
	if err != nil {
		return err
	}
	defer m.unmount()
	return copyTree(filepath.Join(m.dir, "latest", "shard", "0"), dst)
}

// epochs measures the plain reader on one table for t threads: a cold epoch
// on a fresh mount with an empty cache, a kernel-warm second epoch on the
// same mount, and a cache-warm epoch on a fresh mount over the warm cache.
func (b *bench) epochs(w string, table string, threads int, unit string, flags ...string) error {
	cache, err := os.MkdirTemp(b.out, "cache-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(cache)
	flags = append(flags, "--cache-dir", cache)
	pick := func(files, mb float64) float64 {
		if unit == "MB/s" {
			return mb
		}
		return files
	}
	m, err := b.mount(table, flags...)
	if err != nil {
		return err
	}
	root := filepath.Join(m.dir, "latest", "shard", "0")
	files, mb, err := b.readloop(threads, root)
	if err != nil {
		m.unmount()
		return err
	}
	b.add(fmt.Sprintf("%s/%dt/deltafs cold", w, threads), unit, pick(files, mb))
	files, mb, err = b.readloop(threads, root)
	m.unmount()
	if err != nil {
		return err
	}
	b.add(fmt.Sprintf("%s/%dt/deltafs kernel-warm", w, threads), unit, pick(files, mb))

	m, err = b.mount(table, flags...)
	if err != nil {
		return err
	}
	defer m.unmount()
	files, mb, err = b.readloop(threads, filepath.Join(m.dir, "latest", "shard", "0"))
	if err != nil {
		return err
	}
	b.add(fmt.Sprintf("%s/%dt/deltafs cache-warm", w, threads), unit, pick(files, mb))
	if s, err := m.stats(); err == nil {
		b.add(fmt.Sprintf("%s/%dt/data bytes read, cache-warm remount", w, threads), "bytes", number(s, statDataBytes))
	}
	return nil
}

func mnistWorkload(b *bench) error {
	const w = "mnist-784B"
	src, digits := "testdata/mnist/mnist-train.npy.gz", 60000
	if b.quick {
		src, digits = "testdata/mnist/mnist-test.npy.gz", 10000
	}
	table, err := b.table("mnist", src, "--rows-per-file", "10000")
	if err != nil {
		return err
	}
	tmpfs := filepath.Join(shmRoot, "mnist-raw")
	if err := b.copyOf(table, tmpfs); err != nil {
		return err
	}
	disk := filepath.Join(b.out, "disk", "mnist-png")
	if err := b.copyOf(table, disk, "--image", "28x28", "--class-column", "label"); err != nil {
		return err
	}
	for r := 0; r < b.runs; r++ {
		for _, t := range []int{1, 8} {
			files, _, err := b.readloop(t, tmpfs)
			if err != nil {
				return err
			}
			b.add(fmt.Sprintf("%s/%dt/tmpfs", w, t), "files/s", files)
			f, err := b.mountFloor(digits, 784)
			if err != nil {
				return err
			}
			files, _, err = b.readloop(t, f.dir)
			f.unmount()
			if err != nil {
				return err
			}
			b.add(fmt.Sprintf("%s/%dt/FUSE floor cold", w, t), "files/s", files)
			// The same, the files found by listing their directory (the
			// listing's attributes spare the epoch its LOOKUPs): on the
			// floor, then on a fresh deltafs mount.
			if f, err = b.mountFloor(digits, 784); err != nil {
				return err
			}
			files, _, err = b.readloopArgs(t, []string{"-list"}, f.dir)
			f.unmount()
			if err != nil {
				return err
			}
			b.add(fmt.Sprintf("%s/%dt/FUSE floor cold, listed", w, t), "files/s", files)
			m, err := b.mount(table, "--cache-dir", "none")
			if err != nil {
				return err
			}
			files, _, err = b.readloopArgs(t, []string{"-list"}, filepath.Join(m.dir, "latest", "shard", "0"))
			m.unmount()
			if err != nil {
				return err
			}
			b.add(fmt.Sprintf("%s/%dt/deltafs cold, listed", w, t), "files/s", files)
			if err := b.epochs(w, table, t, "files/s"); err != nil {
				return err
			}
		}
		// torchvision ImageFolder, two DataLoader workers.
		m, err := b.mount(table, "--image", "28x28", "--class-column", "label", "--cache-dir", filepath.Join(b.out, "cache-if-"+strconv.Itoa(r)))
		if err != nil {
			return err
		}
		rates, err := b.imagefolder(filepath.Join(m.dir, "latest", "shard", "0"), 2)
		m.unmount()
		if err != nil {
			os.RemoveAll(filepath.Join(b.out, "cache-if-"+strconv.Itoa(r)))
			return err
		}
		b.add(w+"/imagefolder/deltafs epoch 1", "samples/s", rates[0])
		b.add(w+"/imagefolder/deltafs epoch 2", "samples/s", rates[1])
		// A remount over the warm disk cache, the page cache dropped: the
		// prefill's case (issue 23).
		if err := dropCaches(); err != nil {
			return err
		}
		m, err = b.mount(table, "--image", "28x28", "--class-column", "label", "--cache-dir", filepath.Join(b.out, "cache-if-"+strconv.Itoa(r)))
		if err != nil {
			return err
		}
		rates, err = b.imagefolder(filepath.Join(m.dir, "latest", "shard", "0"), 1)
		m.unmount()
		os.RemoveAll(filepath.Join(b.out, "cache-if-"+strconv.Itoa(r)))
		if err != nil {
			return err
		}
		b.add(w+"/imagefolder/deltafs remount, warm disk cache", "samples/s", rates[0])
		rates, err = b.imagefolder(disk, 2)
		if err != nil {
			return err
		}
		b.add(w+"/imagefolder/local disk epoch 1", "samples/s", rates[0])
		b.add(w+"/imagefolder/local disk epoch 2", "samples/s", rates[1])
		if err := b.randomSample(w, table, "pixels", "--image", "28x28", "--class-column", "label"); err != nil {
			return err
		}
		// The tar view (tar.go), Python's per-file cost and the IOCTL
		// round trip (python.go).
		if err := b.tarEpochs(w, table); err != nil {
			return err
		}
		if err := b.pythonLoops(w, table, tmpfs, digits); err != nil {
			return err
		}
		if err := b.ioctlRoundTrips(w, table, tmpfs, digits); err != nil {
			return err
		}
	}
	return nil
}

// randomSample times the build of shard 0's sample index on a fresh mount
// with an empty cache (listing _samples.tsv), then reads one random sample
// and records what it cost in data-file bytes and reads, beside its bound:
// the largest data page of its file plus the file's tail read (footer and
// page index, in one read of at least tailRead bytes). The mount serves
// the samples with flags: a spec whose sizes need no data (--image) keeps
// the data column out of the index, while in bytes mode listing a shard
// decodes its data pages (exact sizes), which a sample then finds cached.
func (b *bench) randomSample(w, table, column string, flags ...string) error {
	m, done, err := b.mountCold(table, flags...)
	if err != nil {
		return err
	}
	defer done()
	root := filepath.Join(m.dir, "latest", "shard", "0")
	start := time.Now()
	list, err := sampleList(root)
	if err != nil {
		return err
	}
	b.add(w+"/index build, shard 0", "s", time.Since(start).Seconds())
	// .deltafs/stats is fresh a kernel tick after the last access (see
	// package fs): pause a little around the read being measured.
	time.Sleep(20 * time.Millisecond)
	before, err := m.stats()
	if err != nil {
		return err
	}
	if _, err := os.ReadFile(filepath.Join(root, list[rand.IntN(len(list))])); err != nil {
		return err
	}
	time.Sleep(20 * time.Millisecond)
	after, err := m.stats()
	if err != nil {
		return err
	}
	bound, err := sampleBound(table, column)
	if err != nil {
		return err
	}
	b.add(w+"/random sample/data bytes read", "bytes", number(after, statDataBytes)-number(before, statDataBytes))
	b.add(w+"/random sample/data reads", "reads", number(after, statDataReads)-number(before, statDataReads))
	b.add(w+"/random sample/bound: page + tail", "bytes", float64(bound))
	return nil
}

func sampleList(root string) ([]string, error) {
	f, err := os.Open(filepath.Join(root, "_samples.tsv"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return samplelist.Parse(f)
}

func largeWorkload(b *bench) error {
	const w, size = "jpeg-100KB", 100_000
	n := 5000
	if b.quick {
		n = 300
	}
	src := filepath.Join(b.out, "src", "jpeg-100KB.npy")
	if err := writeNPY(src, n, size, func(i int, p []byte) {
		r := rand.New(rand.NewPCG(uint64(i), 7))
		for j := 0; j+8 <= len(p); j += 8 {
			binary.LittleEndian.PutUint64(p[j:], r.Uint64())
		}
	}); err != nil {
		return err
	}
	table, err := b.table("jpeg-100KB", src, "--rows-per-file", "500")
	if err != nil {
		return err
	}
	tmpfs := filepath.Join(shmRoot, "jpeg-100KB")
	if err := b.copyOf(table, tmpfs); err != nil {
		return err
	}
	for r := 0; r < b.runs; r++ {
		rate, err := decodeRate(table, "data")
		if err != nil {
			return err
		}
		b.add(w+"/in-process parquet-go decode", "MB/s", rate)
		for _, t := range []int{1, 8} {
			_, mb, err := b.readloop(t, tmpfs)
			if err != nil {
				return err
			}
			b.add(fmt.Sprintf("%s/%dt/tmpfs", w, t), "MB/s", mb)
			// The FUSE transfer rate alone: the floor serves the same
			// number of 100 KB files from memory, a fresh mount.
			f, err := b.mountFloor(n, size)
			if err != nil {
				return err
			}
			_, mb, err = b.readloop(t, f.dir)
			f.unmount()
			if err != nil {
				return err
			}
			b.add(fmt.Sprintf("%s/%dt/FUSE floor cold", w, t), "MB/s", mb)
			if err := b.epochs(w, table, t, "MB/s"); err != nil {
				return err
			}
		}
		if err := b.tarEpochs(w, table); err != nil {
			return err
		}
	}
	return nil
}

func millionWorkload(b *bench) error {
	const w = "million"
	n := 1_000_000
	if b.quick {
		n = 50_000
	}
	src := filepath.Join(b.out, "src", "million.npy")
	if err := writeNPY(src, n, 16, func(i int, p []byte) { binary.LittleEndian.PutUint64(p, uint64(i)) }); err != nil {
		return err
	}
	table, err := b.table("million", src, "--rows-per-file", strconv.Itoa(min(n, 100000)))
	if err != nil {
		return err
	}
	const memCache = 64 << 20
	for r := 0; r < b.runs; r++ {
		cache, err := os.MkdirTemp(b.out, "cache-")
		if err != nil {
			return err
		}
		m, err := b.mount(table, "--mem-cache", strconv.Itoa(memCache), "--cache-dir", cache)
		if err != nil {
			return err
		}
		root := filepath.Join(m.dir, "latest", "shard", "0")
		if _, _, err := b.readloop(8, root); err != nil {
			m.unmount()
			return err
		}
		rss, err := m.rssMB()
		s, _ := m.stats()
		m.unmount()
		os.RemoveAll(cache)
		if err != nil {
			return err
		}
		b.add(w+"/resident memory after an epoch", "MB", rss)
		b.add(w+"/resident memory over --mem-cache", "MB", rss-memCache/(1<<20))
		b.add(w+"/index bytes per sample", "bytes", number(s, statIndexBytes))
	}
	return nil
}

// writeNPY writes a NumPy structured array of n records (id <i8, label |u1,
// data |u1 (size,)) once, filled by fill.
func writeNPY(path string, n, size int, fill func(i int, data []byte)) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	header := fmt.Sprintf("{'descr': [('id', '<i8'), ('label', '|u1'), ('data', '|u1', (%d,))], 'fortran_order': False, 'shape': (%d,), }", size, n)
	pad := 64 - (10+len(header)+1)%64
	header += strings.Repeat(" ", pad%64) + "\n"
	w.WriteString("\x93NUMPY\x01\x00")
	binary.Write(w, binary.LittleEndian, uint16(len(header)))
	w.WriteString(header)
	rec := make([]byte, 9+size)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint64(rec[0:8], uint64(i))
		rec[8] = byte(i % 10)
		fill(i, rec[9:])
		if _, err := w.Write(rec); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}
