package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// The imagefolder workload (issue 23): torchvision's unmodified ImageFolder
// through DataLoader(batch_size=256, shuffle=True) with 0 and 2 workers,
// against the same files on local disk in the same run, over two sets:
//
//   - the 60,000 MNIST training digits as 28x28 PNGs (Fashion-MNIST's
//     shape and sizes, 880 bytes each), per mount mode (the default, with
//     overlays and prefill; --overlay=false to show what the overlays give;
//     --prefill 0 to show what the prefill gives);
//   - 6,000 JPEGs of 224x224 noise, about 100 KB each
//     (bench/scripts/make_jpegs.py, imported as an ImageFolder tree), the
//     default mode only.
//
// Per mode: epoch 1 on a fresh mount over an empty disk cache with the page
// cache dropped, epoch 2 on the same mount, and one epoch on a remount over
// the now warm disk cache with the page cache dropped again. Local disk:
// epoch 1 after dropping the page cache, epoch 2 warm. Then the PNG table in
// gofakes3 behind Toxiproxy adding 20 ms (-s3-latency-ms) to every answer:
// epoch 1 on a fresh mount, against local disk cold. Then Python's
// open()+read() with default buffering (an isatty per open), kernel-warm,
// per mode, over the same files on tmpfs; and a Go reader of 8 threads,
// kernel-warm, per mode.

func init() { workloads = append(workloads, workload{"imagefolder", imagefolderWorkload}) }

// ifMode is a mount mode measured: its name in the series, extra flags.
type ifMode struct {
	name  string
	flags []string
}

// ifModes are the PNG set's modes; the JPEG set and S3 measure the first.
var ifModes = []ifMode{{"deltafs", nil}, {"deltafs --overlay=false", []string{"--overlay=false"}}, {"deltafs --prefill 0", []string{"--prefill", "0"}}}

var ifWorkers = []int{0, 2}

// ifSet is one set of images measured.
type ifSet struct {
	prefix string   // of its rows: imagefolder (PNGs), imagefolder-jpeg
	what   string   // in its figures' labels
	spec   []string // mount flags that lay the table out as ImageFolder
	modes  []ifMode
}

var (
	ifPNG  = ifSet{"imagefolder", "PNGs", []string{"--image", "28x28", "--class-column", "label"}, ifModes}
	ifJPEG = ifSet{"imagefolder-jpeg", "100 KB JPEGs", []string{"--class-column", "label"}, ifModes[:1]}
)

// ifS3 is the S3 row's mode name.
const ifS3 = "deltafs over S3 (20 ms)"

func imagefolderFigures() []figure {
	var fs []figure
	for _, set := range []ifSet{ifPNG, ifJPEG} {
		for _, w := range ifWorkers {
			p := fmt.Sprintf("%s/%dw/", set.prefix, w)
			for _, m := range set.modes {
				fs = append(fs,
					figure{fmt.Sprintf("ImageFolder epoch 1 cold, %s / local disk cold (%s, %d workers)", m.name, set.what, w), p + m.name + " epoch 1", p + "local disk epoch 1", "≥ 1.5", atLeast(1.5)},
					figure{fmt.Sprintf("ImageFolder epoch 2, %s / local disk warm (%s, %d workers)", m.name, set.what, w), p + m.name + " epoch 2", p + "local disk epoch 2", "≥ 0.95", atLeast(0.95)},
					figure{fmt.Sprintf("ImageFolder remount over the warm disk cache, page cache dropped, %s / local disk warm (%s, %d workers)", m.name, set.what, w), p + m.name + " remount", p + "local disk epoch 2", "≥ 0.8", atLeast(0.8)})
			}
			if set.prefix == ifPNG.prefix {
				fs = append(fs, figure{fmt.Sprintf("ImageFolder epoch 1 cold, %s / local disk cold (%s, %d workers)", ifS3, set.what, w), p + ifS3 + " epoch 1", p + "local disk epoch 1", "≥ 0.8", atLeast(0.8)})
			}
		}
		for _, m := range set.modes {
			fs = append(fs,
				figure{fmt.Sprintf("Python open+read, default buffering, kernel-warm, %s / tmpfs (%s, 1 thread)", m.name, set.what), set.prefix + "/python/" + m.name + " kernel-warm", set.prefix + "/python/tmpfs", "≥ 0.9", atLeast(0.9)},
				figure{fmt.Sprintf("Go reader, 8 threads, kernel-warm, %s / tmpfs (%s)", m.name, set.what), set.prefix + "/8t/" + m.name + " kernel-warm", set.prefix + "/8t/tmpfs", "report", nil})
		}
	}
	return fs
}

func imagefolderWorkload(b *bench) error {
	src := "testdata/mnist/mnist-train.npy.gz"
	jpegs := 6000
	if b.quick {
		src, jpegs = "testdata/mnist/mnist-test.npy.gz", 600
	}
	png, err := b.table("mnist", src, "--rows-per-file", "10000")
	if err != nil {
		return err
	}
	jpegTree := filepath.Join(b.out, "src", "jpeg-"+strconv.Itoa(jpegs))
	if _, err := os.Stat(jpegTree); err != nil {
		if _, err := run(b.python, "bench/scripts/make_jpegs.py", jpegTree+".tmp", strconv.Itoa(jpegs)); err != nil {
			return err
		}
		if err := os.Rename(jpegTree+".tmp", jpegTree); err != nil {
			return err
		}
	}
	jpeg, err := b.table("imagefolder-jpeg-"+strconv.Itoa(jpegs), jpegTree, "--rows-per-file", "500")
	if err != nil {
		return err
	}
	s3, stop, err := b.s3Table("mnist", png)
	if err != nil {
		return err
	}
	defer stop()
	for r := 0; r < b.runs; r++ {
		if err := b.imagefolderSet(ifPNG, png, s3); err != nil {
			return err
		}
		if err := b.imagefolderSet(ifJPEG, jpeg, nil); err != nil {
			return err
		}
	}
	return nil
}

// imagefolderSet is one run of set over table: the ImageFolder epochs per
// worker count and mode, local disk's beside them, and, with s3 (the
// table's location and flags over S3), the cold epoch over S3; then the
// kernel-warm Python and Go readers per mode against tmpfs.
func (b *bench) imagefolderSet(set ifSet, table string, s3 []string) error {
	disk := filepath.Join(b.out, "disk", set.prefix)
	if err := b.copyOf(table, disk, set.spec...); err != nil {
		return err
	}
	tmpfs := filepath.Join(shmRoot, set.prefix)
	if err := b.copyOf(table, tmpfs, set.spec...); err != nil {
		return err
	}
	defer os.RemoveAll(tmpfs)
	for _, w := range ifWorkers {
		p := fmt.Sprintf("%s/%dw/", set.prefix, w)
		args := []string{"--workers", strconv.Itoa(w), "--batch", "256", "--shuffle"}
		for _, m := range set.modes {
			if err := b.imagefolderMount(p+m.name, table, append(append([]string{}, set.spec...), m.flags...), args); err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
		}
		if s3 != nil {
			if err := dropCaches(); err != nil {
				return err
			}
			m, done, err := b.mountCold(s3[0], append(append([]string{}, set.spec...), s3[1:]...)...)
			if err != nil {
				return err
			}
			rates, err := b.imagefolderArgs(filepath.Join(m.dir, "latest", "shard", "0"), 1, args...)
			done()
			if err != nil {
				return fmt.Errorf("%s: %w", ifS3, err)
			}
			b.add(p+ifS3+" epoch 1", "samples/s", rates[0])
		}
		if err := dropCaches(); err != nil {
			return err
		}
		rates, err := b.imagefolderArgs(disk, 2, args...)
		if err != nil {
			return err
		}
		b.add(p+"local disk epoch 1", "samples/s", rates[0])
		b.add(p+"local disk epoch 2", "samples/s", rates[1])
	}
	// Python open()+read() and a Go reader, kernel-warm.
	py, err := b.pyRead(tmpfs, "--threads 1", "default")
	if err != nil {
		return err
	}
	b.add(set.prefix+"/python/tmpfs", "files/s", py)
	files, _, err := b.readloop(8, tmpfs)
	if err != nil {
		return err
	}
	b.add(set.prefix+"/8t/tmpfs", "files/s", files)
	for _, m := range set.modes {
		mt, done, err := b.mountCold(table, append(append([]string{}, set.spec...), m.flags...)...)
		if err != nil {
			return err
		}
		root := filepath.Join(mt.dir, "latest", "shard", "0")
		if _, err = b.pyRead(root, "--threads 1", "default"); err == nil { // the cold pass
			py, err = b.pyRead(root, "--threads 1", "default")
		}
		if err == nil {
			files, _, err = b.readloop(8, root)
		}
		done()
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		b.add(set.prefix+"/python/"+m.name+" kernel-warm", "files/s", py)
		b.add(set.prefix+"/8t/"+m.name+" kernel-warm", "files/s", files)
	}
	return nil
}

// imagefolderMount records key+" epoch 1", " epoch 2" and " remount":
// two epochs on a fresh mount over an empty disk cache, the page cache
// dropped first, then one on a remount over that cache, the page cache
// dropped again.
func (b *bench) imagefolderMount(key, table string, flags, args []string) error {
	cache, err := os.MkdirTemp(b.out, "cache-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(cache)
	flags = append(flags, "--cache-dir", cache)
	for _, epochs := range []int{2, 1} {
		if err := dropCaches(); err != nil {
			return err
		}
		m, err := b.mount(table, flags...)
		if err != nil {
			return err
		}
		rates, err := b.imagefolderArgs(filepath.Join(m.dir, "latest", "shard", "0"), epochs, args...)
		m.unmount()
		if err != nil {
			return err
		}
		if epochs == 2 {
			b.add(key+" epoch 1", "samples/s", rates[0])
			b.add(key+" epoch 2", "samples/s", rates[1])
		} else {
			b.add(key+" remount", "samples/s", rates[0])
		}
	}
	return nil
}
