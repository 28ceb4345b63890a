package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// The imagefolder workload (issue 23): torchvision's unmodified ImageFolder
// over the 60,000 MNIST training digits as 28x28 PNGs (Fashion-MNIST's
// shape and sizes), DataLoader(batch_size=256, shuffle=True) with 0 and 2
// workers, against the same files on local disk in the same run. Per
// mount mode (the default, with overlays and prefill; --overlay=false to
// show what the overlays give; --prefill 0 to show what the prefill gives): epoch 1 on a fresh mount over an empty disk cache with
// the page cache dropped, epoch 2 on the same mount, and one epoch on a
// remount over the now warm disk cache with the page cache dropped again.
// Local disk: epoch 1 after dropping the page cache, epoch 2 warm. Then
// Python's open()+read() with default buffering (an isatty per open),
// kernel-warm, per mode, over the same PNGs on tmpfs; and a Go reader of 8
// threads, kernel-warm, per mode.

func init() { workloads = append(workloads, workload{"imagefolder", imagefolderWorkload}) }

// ifModes are the mount modes measured: name in the series, extra flags.
var ifModes = []struct {
	name  string
	flags []string
}{{"deltafs", nil}, {"deltafs --overlay=false", []string{"--overlay=false"}}, {"deltafs --prefill 0", []string{"--prefill", "0"}}}

var ifWorkers = []int{0, 2}

func imagefolderFigures() []figure {
	var fs []figure
	for _, w := range ifWorkers {
		p := fmt.Sprintf("imagefolder/%dw/", w)
		for _, m := range ifModes {
			fs = append(fs,
				figure{fmt.Sprintf("ImageFolder epoch 1 cold, %s / local disk cold (%d workers)", m.name, w), p + m.name + " epoch 1", p + "local disk epoch 1", "≥ 1.5", atLeast(1.5)},
				figure{fmt.Sprintf("ImageFolder epoch 2, %s / local disk warm (%d workers)", m.name, w), p + m.name + " epoch 2", p + "local disk epoch 2", "≥ 0.95", atLeast(0.95)},
				figure{fmt.Sprintf("ImageFolder remount over the warm disk cache, page cache dropped, %s / local disk warm (%d workers)", m.name, w), p + m.name + " remount", p + "local disk epoch 2", "≥ 0.8", atLeast(0.8)})
		}
	}
	for _, m := range ifModes {
		fs = append(fs,
			figure{"Python open+read, default buffering, kernel-warm, " + m.name + " / tmpfs (PNGs, 1 thread)", "imagefolder/python/" + m.name + " kernel-warm", "imagefolder/python/tmpfs", "≥ 0.9", atLeast(0.9)},
			figure{"Go reader, 8 threads, kernel-warm, " + m.name + " / tmpfs (PNGs)", "imagefolder/8t/" + m.name + " kernel-warm", "imagefolder/8t/tmpfs", "report", nil})
	}
	return fs
}

func imagefolderWorkload(b *bench) error {
	src := "testdata/mnist/mnist-train.npy.gz"
	if b.quick {
		src = "testdata/mnist/mnist-test.npy.gz"
	}
	table, err := b.table("mnist", src, "--rows-per-file", "10000")
	if err != nil {
		return err
	}
	spec := []string{"--image", "28x28", "--class-column", "label"}
	disk := filepath.Join(b.out, "disk", "mnist-png")
	if err := b.copyOf(table, disk, spec...); err != nil {
		return err
	}
	tmpfs := filepath.Join(shmRoot, "mnist-png")
	if err := b.copyOf(table, tmpfs, spec...); err != nil {
		return err
	}
	defer os.RemoveAll(tmpfs)
	for r := 0; r < b.runs; r++ {
		for _, w := range ifWorkers {
			p := fmt.Sprintf("imagefolder/%dw/", w)
			args := []string{"--workers", strconv.Itoa(w), "--batch", "256", "--shuffle"}
			for _, m := range ifModes {
				if err := b.imagefolderMount(p+m.name, table, append(append([]string{}, spec...), m.flags...), args); err != nil {
					return fmt.Errorf("%s: %w", m.name, err)
				}
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
		b.add("imagefolder/python/tmpfs", "files/s", py)
		files, _, err := b.readloop(8, tmpfs)
		if err != nil {
			return err
		}
		b.add("imagefolder/8t/tmpfs", "files/s", files)
		for _, m := range ifModes {
			mt, done, err := b.mountCold(table, append(append([]string{}, spec...), m.flags...)...)
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
			b.add("imagefolder/python/"+m.name+" kernel-warm", "files/s", py)
			b.add("imagefolder/8t/"+m.name+" kernel-warm", "files/s", files)
		}
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
