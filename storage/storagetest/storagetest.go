// Package storagetest is a conformance suite for storage.Storage backends:
// every backend (storage.Local, the S3 store on each test server, the GCS
// store on fake-gcs-server) must pass Run. It checks the contract documented in package storage: listing order,
// prefixes and startAfter; Stat; ReadAt with io.ReaderAt's EOF semantics;
// put and put-if-absent (also under a race); not-exist errors; keys with
// characters that need escaping.
//
// RunFaults (faults.go) is the object stores' fault suite: a backend
// behind Toxiproxy and fault middleware (latency, resets, bodies cut or
// stalled, answers that never come, a server restart, throttling and
// server errors) returns the true bytes once a fault clears, or fails in
// bounded time with one line when it stays. RunRedirect (origin.go)
// checks that no credential follows a redirect to another origin.
// OpenRemote, Ctx and
// UniqueName are the helpers the backends' tests share.
//
// It also holds Mem (mem.go), a backend in memory that passes Run, for the
// tests of packages that read or write tables through storage.Storage
// (snapshot, writer): objects set with chosen modification times, reads
// and listings counted, Put faults injected.
package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/deltafs/deltafs/storage"
)

// Open returns an empty, writable table for one subtest. The suite calls it
// once per subtest; the backend's cleanup belongs to t.
type Open func(t *testing.T) storage.Storage

// Run runs the suite as subtests of t.
func Run(t *testing.T, open Open) {
	tests := []struct {
		name string
		fn   func(t *testing.T, st storage.Storage)
	}{
		{"Location", testLocation},
		{"PutStat", testPutStat},
		{"NotExist", testNotExist},
		{"ListOrder", testListOrder},
		{"ListPrefix", testListPrefix},
		{"ListStartAfter", testListStartAfter},
		{"ListMissingPrefix", testListMissingPrefix},
		{"ListMany", testListMany},
		{"ReadAt", testReadAt},
		{"ReadAtEmptyObject", testReadAtEmpty},
		{"ReadHelpers", testReadHelpers},
		{"ConcurrentReads", testConcurrentReads},
		{"Overwrite", testOverwrite},
		{"PutIfAbsent", testPutIfAbsent},
		{"PutIfAbsentRace", testPutIfAbsentRace},
		{"EscapedKeys", testEscapedKeys},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := open(t)
			tc.fn(t, st)
		})
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func put(t *testing.T, st storage.Storage, key string, data []byte) {
	t.Helper()
	if err := st.Put(ctxT(t), key, data, false); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

func randBytes(seed int64, n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

func keys(infos []storage.ObjectInfo) []string {
	out := make([]string, len(infos))
	for i, oi := range infos {
		out[i] = oi.Key
	}
	return out
}

func list(t *testing.T, st storage.Storage, prefix, after string) []string {
	t.Helper()
	infos, err := st.List(ctxT(t), prefix, after)
	if err != nil {
		t.Fatalf("List(%q, %q): %v", prefix, after, err)
	}
	return keys(infos)
}

func testLocation(t *testing.T, st storage.Storage) {
	if st.Location() == "" {
		t.Fatal("Location() is empty")
	}
}

func testPutStat(t *testing.T, st storage.Storage) {
	ctx := ctxT(t)
	data := randBytes(1, 4321)
	before := time.Now().Add(-time.Hour)
	put(t, st, "part-00000.parquet", data)
	oi, err := st.Stat(ctx, "part-00000.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if oi.Key != "part-00000.parquet" || oi.Size != int64(len(data)) {
		t.Fatalf("Stat = %+v, want key part-00000.parquet, size %d", oi, len(data))
	}
	if oi.ModTime.Before(before) || oi.ModTime.After(time.Now().Add(time.Hour)) {
		t.Errorf("Stat ModTime %v is not about now", oi.ModTime)
	}
	infos, err := st.List(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].Key != oi.Key || infos[0].Size != oi.Size {
		t.Fatalf("List = %+v, want the one object %+v", infos, oi)
	}
	if oi.ETag != "" && infos[0].ETag != "" && oi.ETag != infos[0].ETag {
		t.Errorf("Stat ETag %q != List ETag %q", oi.ETag, infos[0].ETag)
	}
}

func testNotExist(t *testing.T, st storage.Storage) {
	ctx := ctxT(t)
	put(t, st, "_delta_log/00000000000000000000.json", []byte("{}\n"))
	for _, key := range []string{"missing.parquet", "_delta_log/00000000000000000001.json", "nodir/x"} {
		if _, err := st.Stat(ctx, key); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("Stat(%q) = %v, want ErrNotExist", key, err)
		}
		buf := make([]byte, 10)
		if n, err := st.ReadAt(ctx, key, buf, 0); !errors.Is(err, storage.ErrNotExist) || n != 0 {
			t.Errorf("ReadAt(%q) = %d, %v, want 0, ErrNotExist", key, n, err)
		}
		if _, err := storage.ReadAll(ctx, st, key); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("ReadAll(%q) = %v, want ErrNotExist", key, err)
		}
	}
	// Errors name the key.
	_, err := st.Stat(ctx, "missing.parquet")
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("missing.parquet")) {
		t.Errorf("Stat error %q does not name the key", err)
	}
}

// A table's worth of keys, in ascending byte order. '-' < '.' < '/' < '0'
// < '=' < 'Z' < '_' < 'a' < 0xC3 (ü) in UTF-8.
var tableKeys = []string{
	"_delta_log/00000000000000000000.json",
	"_delta_log/00000000000000000001.json",
	"_delta_log/00000000000000000002.checkpoint.parquet",
	"_delta_log/00000000000000000002.json",
	"_delta_log/00000000000000000010.json",
	"_delta_log/_last_checkpoint",
	"a-b",
	"a.b",
	"a/b/c",
	"a/b2",
	"a0",
	"ab",
	"date=2024-01-01/part-0.parquet",
	"date=2024-01-02/part-0.parquet",
	"part-0.parquet",
	"z",
	"\u00fc.parquet",
}

func putAll(t *testing.T, st storage.Storage, ks []string) {
	t.Helper()
	// Put in a scrambled order: the listing must not depend on it.
	perm := rand.New(rand.NewSource(7)).Perm(len(ks))
	for _, i := range perm {
		put(t, st, ks[i], []byte(ks[i]))
	}
}

func testListOrder(t *testing.T, st storage.Storage) {
	putAll(t, st, tableKeys)
	got := list(t, st, "", "")
	if !slices.Equal(got, tableKeys) {
		t.Fatalf("List(\"\", \"\") =\n%q\nwant\n%q", got, tableKeys)
	}
	infos, err := st.List(ctxT(t), "", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, oi := range infos {
		if oi.Size != int64(len(oi.Key)) {
			t.Errorf("List: %q has size %d, want %d", oi.Key, oi.Size, len(oi.Key))
		}
	}
}

func filter(ks []string, prefix, after string) []string {
	var out []string
	for _, k := range ks {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix && k > after {
			out = append(out, k)
		}
	}
	return out
}

func testListPrefix(t *testing.T, st storage.Storage) {
	putAll(t, st, tableKeys)
	for _, prefix := range []string{"_delta_log/", "_delta_log/0", "_delta_log/00000000000000000002", "a", "a/", "a/b", "a/b/", "date=2024-01-02/", "z", "\u00fc"} {
		got := list(t, st, prefix, "")
		if want := filter(tableKeys, prefix, ""); !slices.Equal(got, want) {
			t.Errorf("List(%q, \"\") = %q, want %q", prefix, got, want)
		}
	}
}

func testListStartAfter(t *testing.T, st storage.Storage) {
	putAll(t, st, tableKeys)
	cases := []struct{ prefix, after string }{
		{"_delta_log/0", "_delta_log/00000000000000000001.json"}, // an existing key
		{"_delta_log/0", "_delta_log/00000000000000000002"},      // between keys: sorts before 2's files
		{"_delta_log/", "_delta_log/00000000000000000010.json"},
		{"_delta_log/0", "_delta_log/1"},    // after every key under the prefix
		{"_delta_log/", "_delta_log/"},      // equal to the prefix
		{"a/", "a"},                         // before the prefix
		{"", "a/b/c"},                       // across "directories"
		{"", "zzzz"},                        // after everything
		{"date=", "date=2024-01-01/part-0"}, // a prefix of a key
	}
	for _, c := range cases {
		got := list(t, st, c.prefix, c.after)
		if want := filter(tableKeys, c.prefix, c.after); !slices.Equal(got, want) {
			t.Errorf("List(%q, %q) = %q, want %q", c.prefix, c.after, got, want)
		}
	}
}

func testListMissingPrefix(t *testing.T, st storage.Storage) {
	putAll(t, st, tableKeys[:3])
	// A backend with directories may say ErrNotExist for a missing one;
	// an object store says nothing is there. Both are fine; other errors
	// and phantom keys are not.
	for _, prefix := range []string{"nothing/", "nothing", "_delta_log/x", "a/"} {
		infos, err := st.List(ctxT(t), prefix, "")
		if err != nil && !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("List(%q): %v", prefix, err)
		}
		if len(infos) != 0 {
			t.Errorf("List(%q) = %q, want none", prefix, keys(infos))
		}
	}
}

// testListMany lists more keys than one S3 page (1000).
func testListMany(t *testing.T, st storage.Storage) {
	if testing.Short() {
		t.Skip("short")
	}
	const n = 1100
	ks := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := range ks {
		ks[i] = fmt.Sprintf("_delta_log/%020d.json", i)
		wg.Add(1)
		sem <- struct{}{}
		go func(k string) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := st.Put(ctxT(t), k, []byte("{}"), false); err != nil {
				errs <- err
			}
		}(ks[i])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := list(t, st, "_delta_log/", ""); !slices.Equal(got, ks) {
		t.Fatalf("List: %d keys, want %d in order", len(got), len(ks))
	}
	if got := list(t, st, "_delta_log/", ks[1049]); !slices.Equal(got, ks[1050:]) {
		t.Fatalf("List after %q: %d keys, want %d", ks[1049], len(got), n-1050)
	}
	if got := list(t, st, "_delta_log/", ks[3]); !slices.Equal(got, ks[4:]) {
		t.Fatalf("List after %q: %d keys, want %d", ks[3], len(got), n-4)
	}
}

func testReadAt(t *testing.T, st storage.Storage) {
	ctx := ctxT(t)
	data := randBytes(2, 10000)
	put(t, st, "data.bin", data)
	cases := []struct {
		off, n  int64
		wantN   int
		wantEOF bool
	}{
		{0, 100, 100, false},
		{5000, 1234, 1234, false},
		{9900, 100, 100, false}, // ends exactly at the end: no EOF required
		{9950, 100, 50, true},
		{0, 20000, 10000, true},
		{9999, 1, 1, false},
		{10000, 10, 0, true},
		{12345, 10, 0, true},
		{0, 0, 0, false},
		{500, 0, 0, false},
	}
	for _, c := range cases {
		p := make([]byte, c.n)
		n, err := st.ReadAt(ctx, "data.bin", p, c.off)
		if n != c.wantN {
			t.Errorf("ReadAt(off %d, len %d) = %d bytes, want %d (err %v)", c.off, c.n, n, c.wantN, err)
			continue
		}
		if c.wantEOF && err != io.EOF {
			t.Errorf("ReadAt(off %d, len %d) err = %v, want io.EOF", c.off, c.n, err)
		}
		if !c.wantEOF && err != nil && !(err == io.EOF && n == len(p) && n > 0) {
			t.Errorf("ReadAt(off %d, len %d) err = %v, want nil", c.off, c.n, err)
		}
		if n > 0 && !bytes.Equal(p[:n], data[c.off:c.off+int64(n)]) {
			t.Errorf("ReadAt(off %d, len %d): wrong bytes", c.off, c.n)
		}
	}
	if n, err := st.ReadAt(ctx, "data.bin", make([]byte, 10), -1); err == nil {
		t.Errorf("ReadAt(off -1) = %d, nil; want an error", n)
	}
	// io.ReaderAt adapter, io.SectionReader on top.
	got, err := io.ReadAll(io.NewSectionReader(storage.ReaderAt(ctx, st, "data.bin"), 100, 5000))
	if err != nil || !bytes.Equal(got, data[100:5100]) {
		t.Errorf("SectionReader: %d bytes, %v", len(got), err)
	}
}

func testReadAtEmpty(t *testing.T, st storage.Storage) {
	ctx := ctxT(t)
	put(t, st, "empty", nil)
	oi, err := st.Stat(ctx, "empty")
	if err != nil || oi.Size != 0 {
		t.Fatalf("Stat(empty) = %+v, %v", oi, err)
	}
	if n, err := st.ReadAt(ctx, "empty", make([]byte, 10), 0); n != 0 || err != io.EOF {
		t.Errorf("ReadAt(empty) = %d, %v; want 0, io.EOF", n, err)
	}
	if b, err := storage.ReadAll(ctx, st, "empty"); err != nil || len(b) != 0 {
		t.Errorf("ReadAll(empty) = %d bytes, %v", len(b), err)
	}
}

func testReadHelpers(t *testing.T, st storage.Storage) {
	ctx := ctxT(t)
	data := randBytes(3, 3000)
	put(t, st, "x/y.bin", data)
	if b, err := storage.ReadAll(ctx, st, "x/y.bin"); err != nil || !bytes.Equal(b, data) {
		t.Errorf("ReadAll: %d bytes, %v", len(b), err)
	}
	if b, err := storage.ReadRange(ctx, st, "x/y.bin", 1000, 2000); err != nil || !bytes.Equal(b, data[1000:]) {
		t.Errorf("ReadRange to the end: %d bytes, %v", len(b), err)
	}
	if _, err := storage.ReadRange(ctx, st, "x/y.bin", 1000, 2001); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("ReadRange past the end: %v, want io.ErrUnexpectedEOF", err)
	}
}

func testConcurrentReads(t *testing.T, st storage.Storage) {
	ctx := ctxT(t)
	data := randBytes(4, 1<<20)
	put(t, st, "big.bin", data)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(g)))
			for i := 0; i < 8; i++ {
				off := r.Int63n(int64(len(data)))
				n := r.Int63n(64<<10) + 1
				p := make([]byte, n)
				got, err := st.ReadAt(ctx, "big.bin", p, off)
				end := min(off+n, int64(len(data)))
				if int64(got) != end-off || (err != nil && err != io.EOF) || !bytes.Equal(p[:got], data[off:end]) {
					errs <- fmt.Errorf("ReadAt(%d, %d) = %d, %v", off, n, got, err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func testOverwrite(t *testing.T, st storage.Storage) {
	ctx := ctxT(t)
	put(t, st, "k", []byte("version one"))
	if b, err := storage.ReadAll(ctx, st, "k"); err != nil || string(b) != "version one" {
		t.Fatalf("ReadAll = %q, %v", b, err)
	}
	put(t, st, "k", []byte("v2"))
	if b, err := storage.ReadAll(ctx, st, "k"); err != nil || string(b) != "v2" {
		t.Fatalf("after overwrite ReadAll = %q, %v; want v2", b, err)
	}
	if got := list(t, st, "", ""); !slices.Equal(got, []string{"k"}) {
		t.Fatalf("List = %q", got)
	}
}

func testPutIfAbsent(t *testing.T, st storage.Storage) {
	ctx := ctxT(t)
	key := "_delta_log/00000000000000000000.json"
	if err := st.Put(ctx, key, []byte("first"), true); err != nil {
		t.Fatalf("Put(ifAbsent) of a new key: %v", err)
	}
	err := st.Put(ctx, key, []byte("second"), true)
	if !errors.Is(err, storage.ErrExist) {
		t.Fatalf("Put(ifAbsent) of an existing key = %v, want ErrExist", err)
	}
	if b, err := storage.ReadAll(ctx, st, key); err != nil || string(b) != "first" {
		t.Fatalf("after a lost put-if-absent ReadAll = %q, %v; want first", b, err)
	}
	// The same bytes again also lose.
	if err := st.Put(ctx, key, []byte("first"), true); !errors.Is(err, storage.ErrExist) {
		t.Fatalf("Put(ifAbsent) of the same bytes again = %v, want ErrExist", err)
	}
	// Only the objects written are listed (no probe or temporary left over).
	if got := list(t, st, "", ""); !slices.Equal(got, []string{key}) {
		t.Fatalf("List = %q, want only %q", got, key)
	}
}

func testPutIfAbsentRace(t *testing.T, st storage.Storage) {
	ctx := ctxT(t)
	key := "_delta_log/00000000000000000001.json"
	// Warm up once (backends may do one-time checks on the first
	// conditional put) on another key.
	if err := st.Put(ctx, "_delta_log/00000000000000000000.json", []byte("0"), true); err != nil {
		t.Fatal(err)
	}
	const writers = 8
	for round := 0; round < 3; round++ {
		k := fmt.Sprintf("%s.%d", key, round)
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make([]error, writers)
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				<-start
				errs[w] = st.Put(ctx, k, []byte(fmt.Sprintf("writer %d", w)), true)
			}(w)
		}
		close(start)
		wg.Wait()
		winner := -1
		for w, err := range errs {
			switch {
			case err == nil:
				if winner >= 0 {
					t.Fatalf("round %d: writers %d and %d both won", round, winner, w)
				}
				winner = w
			case !errors.Is(err, storage.ErrExist):
				t.Fatalf("round %d: writer %d: %v, want nil or ErrExist", round, w, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no writer won", round)
		}
		b, err := storage.ReadAll(ctx, st, k)
		if err != nil || string(b) != fmt.Sprintf("writer %d", winner) {
			t.Fatalf("round %d: object = %q, %v; want writer %d's", round, b, err, winner)
		}
	}
}

func testEscapedKeys(t *testing.T, st storage.Storage) {
	ctx := ctxT(t)
	ks := []string{
		"date=2024-01-01 12%3A00%3A00/part-0.parquet", // Delta's escaped partition values
		"name=a+b/part-0.parquet",
		"name=x y/part 1.parquet",
		"p=%25/x",
		"q=?&#/x",
		"\u00e9t\u00e9/\u6570\u636e.parquet",
	}
	for i, k := range ks {
		put(t, st, k, []byte(fmt.Sprint(i)))
	}
	want := slices.Clone(ks)
	slices.Sort(want)
	if got := list(t, st, "", ""); !slices.Equal(got, want) {
		t.Fatalf("List = %q, want %q", got, want)
	}
	for i, k := range ks {
		b, err := storage.ReadAll(ctx, st, k)
		if err != nil || string(b) != fmt.Sprint(i) {
			t.Errorf("ReadAll(%q) = %q, %v", k, b, err)
		}
	}
}
