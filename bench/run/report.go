package main

import (
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// figure is one line of the target table: a ratio of two series measured in
// the same run (median and spread over runs), or one series against a bound.
type figure struct {
	name   string
	num    string // series key
	den    string // series key; "" for an absolute figure
	target string
	ok     *bound // nil: no pass/fail, see the value
}

// bound is a target's limit: the median must be at least (or at most) x.
type bound struct {
	x      float64
	atMost bool
}

func atLeast(x float64) *bound { return &bound{x: x} }
func atMost(x float64) *bound  { return &bound{x: x, atMost: true} }

func (b *bound) met(v float64) bool {
	if b.atMost {
		return v <= b.x
	}
	return v >= b.x
}

// miss says by how much v misses the bound: absolute, and relative when
// the bound is not zero.
func (b *bound) miss(v float64) string {
	d := b.x - v
	if b.atMost {
		d = v - b.x
	}
	word := "short"
	if b.atMost {
		word = "over"
	}
	if b.x == 0 {
		return fmt.Sprintf("%s %s", num(d), word)
	}
	return fmt.Sprintf("%s %s (%.0f%%)", num(d), word, 100*d/b.x)
}

func figures() []figure {
	var fs []figure
	for _, w := range []string{"mnist-784B", "jpeg-100KB"} {
		for _, t := range []string{"1t", "8t"} {
			p := w + "/" + t + "/"
			fs = append(fs,
				figure{fmt.Sprintf("kernel-warm epoch / tmpfs (%s, %s)", w, t), p + "deltafs kernel-warm", p + "tmpfs", "≥ 0.9", atLeast(0.9)},
				figure{fmt.Sprintf("cache-warm epoch / tmpfs (%s, %s)", w, t), p + "deltafs cache-warm", p + "tmpfs", "≥ 0.5", atLeast(0.5)})
		}
	}
	for _, t := range []string{"1t", "8t"} {
		fs = append(fs, figure{"cold epoch / FUSE floor, files from `_samples.tsv` (784 B, " + t + ")", "mnist-784B/" + t + "/deltafs cold", "mnist-784B/" + t + "/FUSE floor cold", "≥ 0.8", atLeast(0.8)},
			figure{"cold epoch / FUSE floor, files from a listing (784 B, " + t + ")", "mnist-784B/" + t + "/deltafs cold, listed", "mnist-784B/" + t + "/FUSE floor cold, listed", "≥ 0.8", atLeast(0.8)})
	}
	for _, t := range []string{"1t", "8t"} {
		fs = append(fs, figure{"cold epoch / in-process decode (100 KB, " + t + ")", "jpeg-100KB/" + t + "/deltafs cold", "jpeg-100KB/in-process parquet-go decode", "≥ 0.7", atLeast(0.7)})
		fs = append(fs, figure{"cold epoch / FUSE floor, a fresh mount serving 100 KB files from memory (100 KB, " + t + ")", "jpeg-100KB/" + t + "/deltafs cold", "jpeg-100KB/" + t + "/FUSE floor cold", "report", nil})
		fs = append(fs, figure{"FUSE floor cold / in-process decode: the most a FUSE mount transfers (100 KB, " + t + ")", "jpeg-100KB/" + t + "/FUSE floor cold", "jpeg-100KB/in-process parquet-go decode", "report", nil})
	}
	fs = append(fs,
		figure{"ImageFolder epoch 1: mount / local disk", "mnist-784B/imagefolder/deltafs epoch 1", "mnist-784B/imagefolder/local disk epoch 1", "≥ 0.8", atLeast(0.8)},
		figure{"ImageFolder epoch 2: mount / local disk", "mnist-784B/imagefolder/deltafs epoch 2", "mnist-784B/imagefolder/local disk epoch 2", "≥ 0.95", atLeast(0.95)},
		figure{"ImageFolder remount over the warm disk cache, page cache dropped / local disk warm", "mnist-784B/imagefolder/deltafs remount, warm disk cache", "mnist-784B/imagefolder/local disk epoch 2", "≥ 0.8", atLeast(0.8)},
		figure{"data bytes read for one random sample, cold / (its file's largest data page + tail read)", "mnist-784B/random sample/data bytes read", "mnist-784B/random sample/bound: page + tail", "≤ 1", atMost(1)},
		figure{"data reads for one random sample, cold", "mnist-784B/random sample/data reads", "", "≤ 2 (tail, page)", atMost(2)},
		figure{"sample index build, shard 0 on a fresh mount (s)", "mnist-784B/index build, shard 0", "", "–", nil},
		figure{"data bytes read, epoch on a remount over a warm cache (784 B, 1t)", "mnist-784B/1t/data bytes read, cache-warm remount", "", "0", atMost(0)},
		figure{"data bytes read, epoch on a remount over a warm cache (100 KB, 1t)", "jpeg-100KB/1t/data bytes read, cache-warm remount", "", "0", atMost(0)},
		figure{"resident memory over --mem-cache, 1,000,000 samples (MB)", "million/resident memory over --mem-cache", "", "≤ 200", atMost(200)},
		figure{"sample index bytes per sample, 1,000,000 samples", "million/index bytes per sample", "", "< 64", atMost(63.99)},
	)
	fs = append(fs, scaleFigures()...)       // bench/run/scale.go
	fs = append(fs, s3Store.figures()...)    // bench/run/s3.go
	fs = append(fs, azureStore.figures()...) // bench/run/azure.go
	fs = append(fs, gcsStore.figures()...)   // bench/run/gcs.go
	fs = append(fs, layoutFigures()...)      // bench/run/layout.go
	fs = append(fs, tarFigures()...)         // bench/run/tar.go
	fs = append(fs, pythonFigures()...)      // bench/run/python.go
	fs = append(fs, whereFigures()...)       // bench/run/where.go
	fs = append(fs, largeSampleFigures()...) // bench/run/largesample.go
	fs = append(fs, imagefolderFigures()...) // bench/run/imagefolder.go
	return fs
}

// values of a figure, one per run.
func (b *bench) figureValues(f figure) []float64 {
	num := b.series[f.num]
	if num == nil {
		return nil
	}
	if f.den == "" {
		return num.values
	}
	den := b.series[f.den]
	if den == nil {
		return nil
	}
	var out []float64
	for i := range num.values {
		if i < len(den.values) && den.values[i] > 0 {
			out = append(out, num.values[i]/den.values[i])
		}
	}
	return out
}

type row struct {
	f            figure
	med, lo, hi  float64
	measured, ok bool
}

func (b *bench) write(results, chart string, took time.Duration) error {
	var rows []row
	for _, f := range figures() {
		v := b.figureValues(f)
		r := row{f: f, measured: len(v) > 0}
		if r.measured {
			r.med, r.lo, r.hi = stats(v)
			r.ok = f.ok == nil || f.ok.met(r.med)
		}
		rows = append(rows, r)
	}
	var s strings.Builder
	fmt.Fprintf(&s, "# deltafs benchmark results\n\n")
	fmt.Fprintf(&s, "Written by `make bench` on %s, in %s.\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), took.Round(time.Second))
	fmt.Fprintf(&s, "Machine: %s.\n\n", machine())
	if b.quick {
		fmt.Fprintf(&s, "**A quick run (`-quick`): small workloads to check the harness; the figures are not comparable with a full run.**\n\n")
	}
	fmt.Fprintf(&s, "Every figure is a median over %d runs, with the spread (min–max) beside it. Ratios pair a deltafs measurement with its baseline measured in the same run.\n\n", b.runs)
	fmt.Fprintf(&s, "## Targets\n\n| figure | median | spread | target | met |\n|---|---:|---:|---|---|\n")
	for _, r := range rows {
		if !r.measured {
			why := "not measured"
			w, _, _ := strings.Cut(r.f.num, "/")
			if a, ok := b.aborted[w]; ok {
				why = "aborted in " + a + " (see Notes)"
			}
			fmt.Fprintf(&s, "| %s | – | – | %s | %s |\n", r.f.name, r.f.target, why)
			continue
		}
		met := "yes"
		if r.f.ok == nil {
			met = "see value"
		} else if !r.ok {
			met = "**no**: " + r.f.ok.miss(r.med)
		}
		fmt.Fprintf(&s, "| %s | %s | %s–%s | %s | %s |\n", r.f.name, num(r.med), num(r.lo), num(r.hi), r.f.target, met)
	}
	fmt.Fprintf(&s, "\n![ratios to baseline](%s)\n\n## Throughput\n\n| measurement | unit | median | spread |\n|---|---|---:|---:|\n", filepath.Base(chart))
	for _, k := range b.order {
		se := b.series[k]
		med, lo, hi := stats(se.values)
		fmt.Fprintf(&s, "| %s | %s | %s | %s–%s |\n", k, se.unit, num(med), num(lo), num(hi))
	}
	if len(b.notes) > 0 {
		fmt.Fprintf(&s, "\n## Notes\n\n")
		for _, n := range b.notes {
			fmt.Fprintf(&s, "- %s\n", n)
		}
	}
	if err := os.WriteFile(results, []byte(s.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(chart, []byte(svgChart(rows)), 0o644)
}

func num(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 1000 || v <= -1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 10 || v <= -10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// svgChart draws the ratio figures as horizontal bars (median) with a
// whisker for the spread and a tick at the target.
func svgChart(rows []row) string {
	var ratios []row
	for _, r := range rows {
		if r.measured && r.f.den != "" {
			ratios = append(ratios, r)
		}
	}
	const left, width, barH, gap, top = 430, 360, 16, 8, 40
	maxV := 1.2
	for _, r := range ratios {
		maxV = max(maxV, r.hi*1.05)
	}
	x := func(v float64) float64 { return left + v/maxV*width }
	h := top + len(ratios)*(barH+gap) + 30
	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", left+width+60, h)
	fmt.Fprintf(&s, `<text x="10" y="20" font-size="14" font-weight="bold">deltafs / baseline, same run (median, min–max; | = target)</text>`+"\n")
	for i, r := range ratios {
		y := top + i*(barH+gap)
		color := "#2b8a3e"
		if !r.ok {
			color = "#c92a2a"
		}
		fmt.Fprintf(&s, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-8, y+12, html.EscapeString(r.f.name))
		fmt.Fprintf(&s, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", left, y, x(r.med)-left, barH, color)
		fmt.Fprintf(&s, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#000"/>`+"\n", x(r.lo), x(r.hi), y+barH/2, y+barH/2)
		var target float64
		if r.f.ok != nil {
			target = r.f.ok.x
		}
		fmt.Fprintf(&s, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#000" stroke-width="2"/>`+"\n", x(target), x(target), y-2, y+barH+2)
		fmt.Fprintf(&s, `<text x="%.1f" y="%d">%s</text>`+"\n", x(max(r.med, r.hi))+4, y+12, num(r.med))
	}
	fmt.Fprintf(&s, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#888" stroke-dasharray="3,3"/>`+"\n", x(1), x(1), top-6, h-24)
	fmt.Fprintf(&s, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">1.0</text>`+"\n", x(1), h-10)
	s.WriteString("</svg>\n")
	return s.String()
}
