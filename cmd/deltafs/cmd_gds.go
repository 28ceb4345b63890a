package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/deltafs/deltafs/extents"
	"github.com/deltafs/deltafs/gds"
)

// Exit status of `deltafs gds probe`, besides 1 (error) and 2 (usage).
const (
	exitGDSReady  = 0
	exitGDSCompat = 3
	exitGDSNoGPU  = 4
)

func init() { rootCmd.AddCommand(newGDSCmd()) }

// gdsNoArgs rejects positional arguments as bad usage (exit status 2).
func gdsNoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("%s: unexpected argument %q", cmd.CommandPath(), args[0])}
	}
	return nil
}

func newGDSCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "gds",
		Short: "GPUDirect Storage: readiness and throughput of reading cached samples into GPU memory",
		Long: `GPUDirect Storage (GDS) reads deltafs's disk-cache files straight into GPU memory
with NVIDIA cuFile, bypassing FUSE and host memory. A loader finds each sample's bytes
through its extent (the user.deltafs.extent xattr, or a shard's _extents.tsv).

Nothing here needs CUDA at build time: libcuda.so.1 and libcufile.so.0 are loaded at
run time (override with DELTAFS_CUDA_LIB and DELTAFS_CUFILE_LIB).`,
	}
	c.AddCommand(newGDSProbeCmd(), newGDSBenchCmd())
	return c
}

// gdsProbeOptions are the flags of `deltafs gds probe`.
type gdsProbeOptions struct {
	CacheDir string
	Device   int
	JSON     bool
	Root     string // hidden: prefix for /proc and /sys (tests)
}

func (o *gdsProbeOptions) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.CacheDir, "cache-dir", "", "check that this directory (deltafs's disk cache) is on a filesystem GDS supports")
	f.IntVar(&o.Device, "device", 0, "CUDA device ordinal to open the cuFile driver on")
	f.BoolVar(&o.JSON, "json", false, "print the report as one JSON object")
	f.StringVar(&o.Root, "sys-root", "/", "root under which /proc and /sys are read")
	f.MarkHidden("sys-root")
}

func newGDSProbeCmd() *cobra.Command {
	var opts gdsProbeOptions
	c := &cobra.Command{
		Use:   "probe [--cache-dir DIR]",
		Short: "Report GPUs, CUDA, cuFile, nvidia-fs and the cache filesystem, and whether GDS is usable",
		Long: `Report what GPUDirect Storage needs and whether this machine has it: GPUs (NVML, in
binaries built with cgo, and the CUDA driver), the NVIDIA driver and CUDA versions, the
CUDA and cuFile libraries found (with their files), the cuFile driver's properties, the
nvidia-fs kernel module, and the filesystem of --cache-dir. The last line is the verdict:

  verdict: ready                 cuFile reads go straight to GPU memory
  verdict: compatibility mode    a GPU, but reads go through host memory (reasons listed)
  verdict: no GPU                reads go to host memory

Exit status: 0 ready, 3 compatibility mode, 4 no GPU, 1 error (for example a
--cache-dir that does not exist), 2 bad usage.`,
		Args: gdsNoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			code, err := runGDSProbe(cmd.Context(), opts, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			if code != 0 {
				os.Exit(code)
			}
			return nil
		},
	}
	opts.AddFlags(c.Flags())
	return c
}

// runGDSProbe prints the probe report to w and returns the exit status for
// its verdict.
func runGDSProbe(ctx context.Context, opts gdsProbeOptions, w io.Writer) (int, error) {
	rep, err := gds.Probe(gds.ProbeOptions{CacheDir: opts.CacheDir, Device: opts.Device, Root: opts.Root})
	if err != nil {
		return 1, err
	}
	if opts.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(probeJSON(rep)); err != nil {
			return 1, err
		}
	} else {
		printProbe(w, rep)
	}
	switch rep.Verdict {
	case gds.VerdictReady:
		return exitGDSReady, nil
	case gds.VerdictCompat:
		return exitGDSCompat, nil
	}
	return exitGDSNoGPU, nil
}

func printProbe(w io.Writer, rep *gds.ProbeReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(k, format string, a ...any) { fmt.Fprintf(tw, "%s:\t%s\n", k, fmt.Sprintf(format, a...)) }

	if rep.NVML.Err != nil {
		line("NVML", "unavailable: %s", strings.TrimPrefix(rep.NVML.Err.Error(), "NVML unavailable: "))
	} else {
		line("NVML", "%d GPU(s)", len(rep.NVML.GPUs))
		line("NVIDIA driver", "%s (supports CUDA %s)", rep.NVML.DriverVersion, gds.FormatCUDAVersion(rep.NVML.CUDAVersion))
	}
	gpus := rep.NVML.GPUs
	if rep.NVML.Err != nil {
		gpus = rep.CUDA.Devices
	}
	for _, g := range gpus {
		desc := fmt.Sprintf("%s, %s, PCIe %s", g.Name, gib(g.MemoryTotal), g.PCIBusID)
		if g.UUID != "" {
			desc += ", " + g.UUID
		}
		if g.Err != nil {
			desc += fmt.Sprintf(" (%v)", g.Err)
		}
		line(fmt.Sprintf("GPU %d", g.Index), "%s", desc)
	}
	switch {
	case rep.CUDA.File == "" && rep.CUDA.Err != nil:
		line("CUDA driver", "not found: %v", rep.CUDA.Err)
	case rep.CUDA.Err != nil:
		line("CUDA driver", "%s: %v", rep.CUDA.File, rep.CUDA.Err)
	default:
		line("CUDA driver", "%s, CUDA %s, %d device(s)", rep.CUDA.File, gds.FormatCUDAVersion(rep.CUDA.Version), len(rep.CUDA.Devices))
	}
	cf := rep.CuFile
	switch {
	case cf.File == "" && cf.Err != nil:
		line("cuFile", "not found: %v", cf.Err)
	case cf.Err != nil:
		line("cuFile", "%s: %v", cf.File, cf.Err)
	default:
		v := ""
		if cf.Version > 0 {
			v = fmt.Sprintf(" (version %d.%d)", cf.Version/1000, cf.Version%1000/10)
		}
		line("cuFile", "%s%s", cf.File, v)
		switch {
		case cf.DriverErr != nil:
			line("cuFile driver", "failed to open: %v", cf.DriverErr)
		case cf.Driver != nil:
			d := cf.Driver
			mode := "GDS"
			if !d.GDSAvailable() {
				mode = "compatibility mode"
			}
			line("cuFile driver", "%s, nvidia-fs %s, storage [%s], compat mode allowed: %v, max direct I/O %d KiB",
				mode, d.NVFSVersion(), strings.Join(d.Storage(), ", "), d.CompatAllowed(), d.MaxDirectIOKiB)
		default:
			line("cuFile driver", "not opened (no GPU)")
		}
	}
	if rep.NVIDIAFS.Loaded {
		v := rep.NVIDIAFS.Version
		if v == "" {
			v = "version unknown"
		}
		line("nvidia-fs", "loaded (%s)", v)
	} else {
		line("nvidia-fs", "kernel module not loaded")
	}
	if fs := rep.CacheDir; fs != nil {
		desc := fmt.Sprintf("%s on %s: %s", fs.Dir, fs.Type, fs.Support)
		if fs.Note != "" {
			desc += " (" + fs.Note + ")"
		}
		line("cache dir", "%s", desc)
	}
	tw.Flush()
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for _, r := range rep.Reasons {
		fmt.Fprintf(w, "why: %s\n", r)
	}
	fmt.Fprintf(w, "verdict: %s\n", rep.Verdict)
}

func gib(b uint64) string {
	if b == 0 {
		return "memory unknown"
	}
	return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
}

// probeJSON is the --json form of a probe report: errors as strings.
func probeJSON(rep *gds.ProbeReport) any {
	type gpu struct {
		Index       int    `json:"index"`
		Name        string `json:"name"`
		UUID        string `json:"uuid,omitempty"`
		PCIBusID    string `json:"pci_bus_id"`
		MemoryTotal uint64 `json:"memory_total"`
		Error       string `json:"error,omitempty"`
	}
	gpus := func(gs []gds.GPU) []gpu {
		out := []gpu{}
		for _, g := range gs {
			out = append(out, gpu{g.Index, g.Name, g.UUID, g.PCIBusID, g.MemoryTotal, errString(g.Err)})
		}
		return out
	}
	type driver struct {
		NVFSVersion   string   `json:"nvfs_version"`
		GDSAvailable  bool     `json:"gds_available"`
		CompatAllowed bool     `json:"compat_allowed"`
		Storage       []string `json:"storage"`
	}
	var drv *driver
	if d := rep.CuFile.Driver; d != nil {
		drv = &driver{d.NVFSVersion(), d.GDSAvailable(), d.CompatAllowed(), d.Storage()}
	}
	out := map[string]any{
		"verdict":   rep.Verdict.String(),
		"reasons":   nonNil(rep.Reasons),
		"notes":     nonNil(rep.Notes),
		"gpus":      rep.GPUCount(),
		"nvml":      map[string]any{"error": errString(rep.NVML.Err), "driver_version": rep.NVML.DriverVersion, "cuda_version": rep.NVML.CUDAVersion, "gpus": gpus(rep.NVML.GPUs)},
		"cuda":      map[string]any{"lib": rep.CUDA.Lib, "file": rep.CUDA.File, "error": errString(rep.CUDA.Err), "version": rep.CUDA.Version, "devices": gpus(rep.CUDA.Devices)},
		"cufile":    map[string]any{"lib": rep.CuFile.Lib, "file": rep.CuFile.File, "error": errString(rep.CuFile.Err), "version": rep.CuFile.Version, "driver": drv, "driver_error": errString(rep.CuFile.DriverErr)},
		"nvidia_fs": map[string]any{"loaded": rep.NVIDIAFS.Loaded, "version": rep.NVIDIAFS.Version},
	}
	if fs := rep.CacheDir; fs != nil {
		out["cache_dir"] = map[string]any{"dir": fs.Dir, "type": fs.Type, "magic": fmt.Sprintf("0x%x", fs.Magic), "support": fs.Support.String(), "note": fs.Note}
	}
	return out
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// gdsBenchOptions are the flags of `deltafs gds bench`.
type gdsBenchOptions struct {
	Manifest    string
	Dir         string
	Mode        string
	Device      int
	Batch       int
	Parallelism int
	Repeat      int
	Limit       int
	Cold        bool
	Verify      bool
	NoBaseline  bool
}

func (o *gdsBenchOptions) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Manifest, "manifest", "", "read the extents of this extent list (a shard's _extents.tsv)")
	f.StringVar(&o.Dir, "dir", "", "read every regular file under this directory, each as one sample")
	f.StringVar(&o.Mode, "mode", "auto", "reader path: auto, gds (fail without GDS), compat or host")
	f.IntVar(&o.Device, "device", 0, "CUDA device ordinal")
	f.IntVar(&o.Batch, "batch", 64, "samples per batch (one device buffer, samples at 4 KiB-aligned offsets)")
	f.IntVar(&o.Parallelism, "parallel", 4, "concurrent reads per batch")
	f.IntVar(&o.Repeat, "repeat", 1, "passes over the samples")
	f.IntVar(&o.Limit, "limit", 0, "read only the first N samples (0: all)")
	f.BoolVar(&o.Cold, "cold", false, "drop the files' page cache before each pass (POSIX_FADV_DONTNEED), so both runs read the disk")
	f.BoolVar(&o.Verify, "verify", false, "compare every sample read with the file's bytes (not timed)")
	f.BoolVar(&o.NoBaseline, "no-baseline", false, "skip the plain pread-into-host-memory run")
}

func newGDSBenchCmd() *cobra.Command {
	var opts gdsBenchOptions
	c := &cobra.Command{
		Use:   "bench (--manifest FILE | --dir DIR)",
		Short: "Read samples into GPU memory and compare with plain pread into host memory",
		Long: `Read samples by deltafs's GDS reader (GPU memory by cuFile where possible; see
'deltafs gds probe') in batches, then the same samples by plain pread into host memory,
and report GB/s and samples/s for both. The samples are the extents of a shard's
_extents.tsv (--manifest), or every regular file under --dir.

Samples of an extent list are verified against their CRC-32 on every path, inside the
timed reads (on the gds path by copying each sample back from the GPU); a mismatch
(a damaged cache file) fails the run with the extent it is in.

Exit status: 0 on success, 1 on any error, 2 on bad usage.`,
		Args: gdsNoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGDSBench(cmd.Context(), opts, cmd.OutOrStdout())
		},
	}
	opts.AddFlags(c.Flags())
	return c
}

func runGDSBench(ctx context.Context, opts gdsBenchOptions, w io.Writer) error {
	if (opts.Manifest == "") == (opts.Dir == "") {
		return usageError{errors.New("gds bench: give exactly one of --manifest FILE and --dir DIR")}
	}
	mode, err := gds.ParseMode(opts.Mode)
	if err != nil {
		return usageError{fmt.Errorf("--mode: %w", err)}
	}
	if opts.Batch <= 0 || opts.Parallelism <= 0 || opts.Repeat <= 0 || opts.Limit < 0 {
		return usageError{errors.New("gds bench: --batch, --parallel and --repeat must be positive, --limit not negative")}
	}
	var exts []extents.Extent
	if opts.Manifest != "" {
		entries, err := extents.ReadListFile(opts.Manifest)
		if err != nil {
			return err
		}
		exts = extents.Extents(entries)
	} else if exts, err = dirExtents(opts.Dir); err != nil {
		return err
	}
	if opts.Limit > 0 && opts.Limit < len(exts) {
		exts = exts[:opts.Limit]
	}
	if len(exts) == 0 {
		return errors.New("gds bench: no samples to read")
	}
	files := map[string]bool{}
	var total int64
	aligned := 0
	for _, e := range exts {
		files[e.Path] = true
		total += e.Length
		if e.Aligned() {
			aligned++
		}
	}
	fmt.Fprintf(w, "samples: %d, %.1f MB in %d file(s); %d at 4 KiB-aligned offsets\n", len(exts), float64(total)/1e6, len(files), aligned)

	bo := gds.BenchOptions{Batch: opts.Batch, Cold: opts.Cold, Verify: opts.Verify}
	r, err := gds.NewReader(gds.Options{Mode: mode, Device: opts.Device, Parallelism: opts.Parallelism})
	if err != nil {
		return err
	}
	defer r.Close()
	info := r.Info()
	desc := info.Path.String() + " path"
	if info.Path != gds.PathHost {
		desc += fmt.Sprintf(" on GPU %d (%s)", opts.Device, info.Device.Name)
	}
	if info.Reason != nil {
		desc += "; not GDS because: " + info.Reason.Error()
	}
	fmt.Fprintf(w, "reader: %s\n", desc)

	runs := []struct {
		name string
		r    *gds.Reader
		res  gds.BenchResult
	}{{name: "deltafs gds reader", r: r}}
	if !opts.NoBaseline {
		h, err := gds.NewReader(gds.Options{Mode: gds.ModeHost, Parallelism: opts.Parallelism})
		if err != nil {
			return err
		}
		defer h.Close()
		runs = append(runs, struct {
			name string
			r    *gds.Reader
			res  gds.BenchResult
		}{name: "pread into host memory", r: h})
	}
	if !opts.Cold {
		// One untimed pass each: warms the page cache, the heap and the
		// buffers, so neither run pays for it.
		for _, run := range runs {
			if _, err := gds.Bench(ctx, run.r, exts, gds.BenchOptions{Batch: opts.Batch}); err != nil {
				return err
			}
		}
	}
	// The runs take turns, pass by pass, so drift affects both alike.
	pass := bo
	pass.Repeat = 1
	for i := 0; i < opts.Repeat; i++ {
		for j := range runs {
			res, err := gds.Bench(ctx, runs[j].r, exts, pass)
			if err != nil {
				return err
			}
			acc := &runs[j].res
			if i == 0 {
				acc.Path = res.Path
			}
			acc.Path = min(acc.Path, res.Path)
			acc.Samples += res.Samples
			acc.Bytes += res.Bytes
			acc.Elapsed += res.Elapsed
			acc.Verified += res.Verified
		}
	}
	type row struct {
		name string
		res  gds.BenchResult
	}
	var rows []row
	for j, run := range runs {
		name := run.name
		if j == 0 {
			name = fmt.Sprintf("%s (%s)", name, run.res.Path)
		}
		rows = append(rows, row{name, run.res})
	}
	fmt.Fprintf(w, "%-30s %8s %10s %9s %7s %10s\n", "run", "samples", "MB", "seconds", "GB/s", "samples/s")
	for _, r := range rows {
		fmt.Fprintf(w, "%-30s %8d %10.1f %9.3f %7.2f %10.0f\n", r.name, r.res.Samples, float64(r.res.Bytes)/1e6,
			r.res.Elapsed.Seconds(), r.res.GBps(), r.res.SamplesPerSec())
	}
	if opts.Verify {
		fmt.Fprintf(w, "verified: every sample read matches its file\n")
	}
	if opts.Cold {
		fmt.Fprintf(w, "page cache: dropped before each pass (reads come from the disk)\n")
	} else {
		fmt.Fprintf(w, "page cache: warmed by an untimed pass (--cold reads from the disk; GDS's O_DIRECT reads bypass it either way)\n")
	}
	return nil
}

// dirExtents returns one extent per regular file under dir, sorted by path.
func dirExtents(dir string) ([]extents.Extent, error) {
	var exts []extents.Extent
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return err
		}
		exts = append(exts, extents.Extent{Path: abs, Offset: 0, Length: fi.Size()})
		return nil
	})
	sort.Slice(exts, func(i, j int) bool { return exts[i].Path < exts[j].Path })
	return exts, err
}
