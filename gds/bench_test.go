package gds

import (
	"context"
	"testing"
)

func TestBench(t *testing.T) {
	f := fakes(t)
	l := newCacheLayout(t, 3, 100)
	var bytes int64
	for _, e := range l.exts {
		bytes += e.Length
	}
	for _, mode := range []Mode{ModeAuto, ModeCompat, ModeHost} {
		r := newReader(t, f.opts(mode))
		res, err := Bench(context.Background(), r, l.exts, BenchOptions{Batch: 16, Repeat: 2, Cold: true, Verify: true})
		if err != nil {
			t.Fatalf("%v: %v", mode, err)
		}
		if res.Path != r.Path() || res.Samples != 200 || res.Bytes != 2*bytes || res.Verified != 200 || res.Elapsed <= 0 {
			t.Errorf("%v: %+v", mode, res)
		}
		if res.GBps() <= 0 || res.SamplesPerSec() <= 0 {
			t.Errorf("%v: rates %v %v", mode, res.GBps(), res.SamplesPerSec())
		}
	}
	if f.cudaStat("alloc") != f.cudaStat("free") {
		t.Errorf("Bench leaked device memory: %d allocs, %d frees", f.cudaStat("alloc"), f.cudaStat("free"))
	}
}
