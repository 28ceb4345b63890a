package attack

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltafs/deltafs/importer"
	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/page"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/writer"
)

// The attack suite: every table of testdata/delta, and a table written by
// deltafs import (whose data pages carry checksums), damaged in every way
// Apply knows, then read through deltafs's read stack (log replay, the
// sample layer, Parquet page reads: everything but FUSE, which the mount
// tests cover): every version, every shard, every sample. Whatever the
// damage: no panic, no hang past caseBound, error messages on one line.
// For a strict damage, every shard that lists holds exactly the undamaged
// table's names, and every sample read is byte-identical to the undamaged
// table's or an error.

// caseBound bounds reading one damaged table: a read that blocks (a named
// pipe) or spins fails the case.
const caseBound = 60 * time.Second

// shards each version is split into.
const shards = 2

// outcome is what reading a table gives: per version, per shard, the
// samples (name -> hash, or the read error), or the shard's error.
type outcome struct {
	versions map[int64]*versionOutcome
}

type versionOutcome struct {
	err    error
	shards [shards]*shardOutcome
}

type shardOutcome struct {
	err     error
	names   []string
	hashes  map[string][32]byte
	readErr map[string]error
}

// read reads every version, shard and sample of the table at dir.
func read(ctx context.Context, dir string, spec sample.Spec) (*outcome, error) {
	st, err := storage.NewLocal(dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	tbl, err := snapshot.Open(ctx, st)
	if err != nil {
		return nil, err
	}
	rows, err := sample.ScanRows(tbl)
	if err != nil {
		return nil, err
	}
	spec.Shards = shards
	s, err := sample.New(sample.Options{Table: tbl, Rows: rows, Fetcher: page.NewFetcher(st, page.Options{}), Spec: spec})
	if err != nil {
		return nil, err
	}
	vs, err := tbl.Versions(ctx)
	if err != nil {
		return nil, err
	}
	out := &outcome{versions: map[int64]*versionOutcome{}}
	for _, vi := range vs {
		vo := &versionOutcome{}
		out.versions[vi.Version] = vo
		v, err := s.Version(ctx, vi.Version)
		if err != nil {
			vo.err = err
			continue
		}
		for k := range shards {
			so := &shardOutcome{hashes: map[string][32]byte{}, readErr: map[string]error{}}
			vo.shards[k] = so
			sh, err := v.Shard(ctx, k)
			if err != nil {
				so.err = err
				continue
			}
			for pos := range sh.Len() {
				name := sh.Path(pos)
				so.names = append(so.names, name)
				b, err := sh.Content(ctx, pos)
				if err != nil {
					so.readErr[name] = err
					continue
				}
				so.hashes[name] = sha256.Sum256(b)
			}
		}
	}
	return out, ctx.Err()
}

// errs lists every error of an outcome (and the open error).
func (o *outcome) errs() []error {
	var out []error
	if o == nil {
		return nil
	}
	for _, vo := range o.versions {
		out = append(out, vo.err)
		for _, so := range vo.shards {
			if so == nil {
				continue
			}
			out = append(out, so.err)
			for _, e := range so.readErr {
				out = append(out, e)
			}
		}
	}
	return out
}

// checkMessages: every error is one line without internals.
func checkMessages(t *testing.T, what string, errs ...error) {
	t.Helper()
	for _, err := range errs {
		if err == nil {
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || strings.Contains(msg, "kind=") || strings.Contains(msg, "goroutine ") || msg == "" {
			t.Errorf("%s: error is not one plain line: %q", what, msg)
		}
	}
}

// compare checks a strict damage's outcome against the undamaged one.
// With exactShards, a shard that lists must list the undamaged shard's
// samples; without (a row count in the log is wrong: a contiguous layout
// places shards by those counts, so the shards after a wrong count are
// other ranges of the same rows), every sample a shard lists must be one
// of the version's, with its bytes, in no other shard, and when every
// shard lists, they hold the whole version.
func compare(t *testing.T, what string, ref, got *outcome, exactShards bool) {
	t.Helper()
	if got == nil {
		return // the table did not open: an error, which is fine
	}
	if !exactShards {
		compareVersions(t, what, ref, got)
		return
	}
	for v, gv := range got.versions {
		rv, ok := ref.versions[v]
		if gv.err != nil {
			continue
		}
		if !ok || rv.err != nil {
			t.Errorf("%s: version %d reads, but not in the undamaged table", what, v)
			continue
		}
		for k, gs := range gv.shards {
			rs := rv.shards[k]
			if gs.err != nil {
				continue
			}
			if rs.err != nil {
				t.Errorf("%s: version %d shard %d lists, but not in the undamaged table (%v)", what, v, k, rs.err)
				continue
			}
			if strings.Join(gs.names, "\n") != strings.Join(rs.names, "\n") {
				t.Errorf("%s: version %d shard %d lists %d samples, the undamaged table %d (or other names)", what, v, k, len(gs.names), len(rs.names))
				continue
			}
			for name, h := range gs.hashes {
				if rh, ok := rs.hashes[name]; !ok || rh != h {
					t.Errorf("%s: version %d shard %d sample %s: other bytes than the undamaged table's", what, v, k, name)
				}
			}
		}
	}
}

// compareVersions checks that the shards that list hold samples of the
// version, with their bytes, none more often than the version has it, and
// all of them when every shard lists. Samples are compared by id (the name
// without the ~N a shard gives rows sharing an id) and bytes, since rows
// sharing an id are named in shard order.
func compareVersions(t *testing.T, what string, ref, got *outcome) {
	t.Helper()
	type sampleKey struct {
		id string
		h  [32]byte
	}
	for v, gv := range got.versions {
		rv, ok := ref.versions[v]
		if gv.err != nil {
			continue
		}
		if !ok || rv.err != nil {
			t.Errorf("%s: version %d reads, but not in the undamaged table", what, v)
			continue
		}
		want := map[sampleKey]int{}
		total := 0
		for _, rs := range rv.shards {
			if rs == nil || rs.err != nil {
				continue
			}
			for n, h := range rs.hashes {
				want[sampleKey{dupStem.ReplaceAllString(n, ""), h}]++
				total++
			}
		}
		have := map[sampleKey]int{}
		every, listed := true, 0
		for k, gs := range gv.shards {
			if gs.err != nil {
				every = false
				continue
			}
			for n, h := range gs.hashes {
				key := sampleKey{dupStem.ReplaceAllString(n, ""), h}
				have[key]++
				listed++
				if have[key] > want[key] {
					t.Errorf("%s: version %d shard %d: sample %s is not one of the undamaged version's (or is there more often)", what, v, k, n)
				}
			}
			listed += len(gs.readErr)
		}
		if every && listed != total {
			t.Errorf("%s: version %d: every shard lists, %d samples in all, the undamaged version has %d", what, v, listed, total)
		}
	}
}

// dupStem matches the "~N" a shard appends to the names of rows sharing an
// id ('~' never appears in an escaped id).
var dupStem = regexp.MustCompile(`~[0-9]+`)

type target struct {
	name string
	dir  string
	spec sample.Spec
	opts Options
	ref  *outcome
}

var (
	targetsOnce sync.Once
	targetsList []*target
	targetsErr  error
	importedDir string // the table buildTargets imports, removed by TestMain
)

// targets are the tables attacked, with their undamaged outcomes.
func targets(t testing.TB) []*target {
	t.Helper()
	targetsOnce.Do(func() { targetsList, targetsErr = buildTargets() })
	if targetsErr != nil {
		t.Fatal(targetsErr)
	}
	return targetsList
}

func buildTargets() ([]*target, error) {
	ctx := context.Background()
	root := filepath.Join(testkit.ModuleRoot(), "testdata", "delta")
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []*target
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), "_") {
			continue
		}
		out = append(out, &target{name: e.Name(), dir: filepath.Join(root, e.Name())})
	}
	// A table written by deltafs import: page checksums, two versions of
	// several files each, then read as bytes and as images in classes.
	dir, err := os.MkdirTemp("", "deltafs-attack-mnist-")
	if err != nil {
		return nil, err
	}
	importedDir = dir
	st, err := storage.NewLocal(dir)
	if err != nil {
		return nil, err
	}
	for _, f := range []string{"demo-1-import.npy.gz", "demo-2-append.npy.gz"} {
		src, err := importer.Open(ctx, filepath.Join(testkit.ModuleRoot(), "testdata", "mnist", "demo", f), importer.Options{})
		if err != nil {
			return nil, err
		}
		_, err = importer.Import(ctx, st, src, writer.Options{RowsPerFile: 250})
		src.Close()
		if err != nil {
			return nil, err
		}
	}
	crc := Options{PageChecksums: true}
	out = append(out,
		&target{name: "mnist-bytes", dir: dir, opts: crc},
		&target{name: "mnist-images", dir: dir, opts: crc, spec: sample.Spec{Image: sample.Image{H: 28, W: 28, C: 1}, ClassColumn: "label"}})
	for _, tg := range out {
		// Refused tables (an unsupported protocol) have no outcome: their
		// damaged copies must not read either.
		tg.ref, _ = read(ctx, tg.dir, tg.spec)
	}
	return out, nil
}

// attackOnce damages a copy of tg with kind k (seeded) and checks the
// outcome. It returns false when the kind does not apply to the table.
func attackOnce(t *testing.T, tg *target, k Kind, seed uint64) bool {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "t")
	if err := CopyTable(tg.dir, dir); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(k)))
	d, ok, err := Apply(dir, k, rng, tg.opts)
	if err != nil {
		t.Fatalf("%s: damaging: %v", tg.name, err)
	}
	if !ok {
		return false
	}
	what := fmt.Sprintf("%s seed %d: %s", tg.name, seed, d)
	ctx, cancel := context.WithTimeout(context.Background(), caseBound)
	defer cancel()
	type res struct {
		o   *outcome
		err error
		pan any
	}
	done := make(chan res, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- res{pan: p}
			}
		}()
		o, err := read(ctx, dir, tg.spec)
		done <- res{o: o, err: err}
	}()
	var r res
	select {
	case r = <-done:
	case <-time.After(caseBound + 10*time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("%s: reading did not end in %v:\n%s", what, caseBound, buf[:runtime.Stack(buf, true)])
	}
	if r.pan != nil {
		t.Fatalf("%s: panic: %v", what, r.pan)
	}
	if errors.Is(r.err, context.DeadlineExceeded) || ctx.Err() != nil {
		t.Fatalf("%s: reading hit its %v bound", what, caseBound)
	}
	checkMessages(t, what, append(r.o.errs(), r.err)...)
	if d.Strict {
		if tg.ref == nil && r.o != nil && len(r.o.versions) > 0 {
			for _, vo := range r.o.versions {
				if vo.err == nil {
					t.Errorf("%s: a version reads, the undamaged table is refused", what)
					break
				}
			}
		} else if tg.ref != nil {
			compare(t, what, tg.ref, r.o, d.Kind != HostileStats)
		}
	}
	return true
}

// TestAttack: every target, every kind, a few seeds (DELTAFS_ATTACK_SEEDS,
// default 3; `make fuzz` runs FuzzAttack for longer).
func TestAttack(t *testing.T) {
	seeds := 3
	if s, err := strconv.Atoi(os.Getenv("DELTAFS_ATTACK_SEEDS")); err == nil && s > 0 {
		seeds = s
	}
	applied := map[Kind]int{}
	strictCases := 0
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			for _, k := range Kinds() {
				for seed := range uint64(seeds) {
					if attackOnce(t, tg, k, seed) {
						applied[k]++
					}
				}
			}
		})
	}
	for _, k := range Kinds() {
		if applied[k] == 0 {
			t.Errorf("damage %s never applied: the suite does not exercise it", k)
		}
	}
	_ = strictCases
	var kinds []string
	for k, n := range applied {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	t.Logf("damaged tables read: %s", strings.Join(kinds, " "))
}

// FuzzAttack: any target, any kind, any seed.
func FuzzAttack(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint64(0))
	f.Fuzz(func(t *testing.T, ti, ki uint8, seed uint64) {
		tgs := targets(t)
		attackOnce(t, tgs[int(ti)%len(tgs)], Kind(int(ki)%int(numKinds)), seed)
	})
}
