package remote

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/storage"
)

// A server that answers out of order and repeats keys across pages still
// lists each key once, in order.
func TestListingSortsAndDropsRepeats(t *testing.T) {
	var l Listing
	for _, k := range []string{"b", "a", "c", "b", "a"} {
		l.Add(storage.ObjectInfo{Key: k})
	}
	var got []string
	for _, o := range l.Objects() {
		got = append(got, o.Key)
	}
	if strings.Join(got, ",") != "a,b,c" {
		t.Fatalf("listed %v, want a,b,c", got)
	}
}

func TestListedKey(t *testing.T) {
	for _, c := range []struct {
		full string
		key  string
		ok   bool
	}{
		{"t/_delta_log/1.json", "_delta_log/1.json", true},
		{"t/_delta_log/0.json", "", false}, // at startAfter
		{"t/_delta_log/", "", false},       // folder marker
		{"u/_delta_log/2.json", "", false}, // another table
		{"t/data/x.parquet", "", false},    // outside the listed prefix
	} {
		key, ok := ListedKey(c.full, "t/", "_delta_log/", "_delta_log/0.json")
		if key != c.key || ok != c.ok {
			t.Errorf("ListedKey(%q) = %q, %v; want %q, %v", c.full, key, ok, c.key, c.ok)
		}
	}
}

// A changed size, or a changed ETag where both sides have one, is told;
// a missing ETag is not a change, and a mutable key is never pinned.
func TestPinETag(t *testing.T) {
	var ps Pins[Pin]
	if why := PinETag(&ps, "k", Pin{Size: 3, ETag: "a"}, false); why != "" {
		t.Fatalf("first pin: %q", why)
	}
	if why := PinETag(&ps, "k", Pin{Size: 3}, false); why != "" {
		t.Fatalf("no ETag read as a change: %q", why)
	}
	if why := PinETag(&ps, "k", Pin{Size: 3, ETag: "b"}, false); !strings.Contains(why, `ETag "a", now 3 bytes ETag "b"`) {
		t.Fatalf("changed ETag: %q", why)
	}
	if why := PinETag(&ps, "k", Pin{Size: 4, ETag: "a"}, false); !strings.Contains(why, "pinned 3 bytes") {
		t.Fatalf("changed size: %q", why)
	}
	PinETag(&ps, "m", Pin{Size: 1}, true)
	if _, ok := ps.Get("m"); ok || ps.Len() != 1 {
		t.Fatalf("mutable key pinned (%d pins)", ps.Len())
	}
	ps.Unpin("k")
	if ps.Len() != 0 {
		t.Fatal("Unpin left the pin")
	}
}

func TestMessage(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{Message("s3://b/t", "k", "object does not exist", true, false, "GetObject", 3, "HTTP 404"), "s3://b/t/k: object does not exist"},
		{Message("s3://b/t", "k", "server error", false, false, "GetObject", 3, "HTTP 500"), "s3://b/t/k: server error (GetObject, 3 attempts, HTTP 500)"},
		{Message("s3://b/t", "k", "denied", false, true, TableOp("HeadObject", "k", true), 1, ""), "s3://b/t: denied (HeadObject k)"},
		{Message("gs://b", "k", "gave up after 5 attempts", false, false, "", 5, ""), "gs://b/k: gave up after 5 attempts"},
	} {
		if c.got != c.want {
			t.Errorf("got  %q\nwant %q", c.got, c.want)
		}
	}
	if errs := Unwrap(storage.ErrNotExist, nil); len(errs) != 1 || !errors.Is(errs[0], storage.ErrNotExist) {
		t.Fatalf("Unwrap = %v", errs)
	}
}

// The command line's values fill only what the caller's Tuning leaves
// zero; defaults fill the rest; a negative DownAfter (never) and
// CoalesceGap (touching ranges only) stay.
func TestTuningDefaults(t *testing.T) {
	tu := Tuning{MaxAttempts: 7, DownAfter: -1, CoalesceGap: -1}
	tu.Command(storage.RemoteOptions{Timeout: 3 * time.Second, MaxAttempts: 2, DownAfter: 20 * time.Second})
	tu.SetDefaults()
	if tu.MaxAttempts != 7 || tu.RequestTimeout != 3*time.Second || tu.DownAfter != -1 || tu.CoalesceGap != -1 {
		t.Errorf("set fields changed: %+v", tu)
	}
	if tu.ProbeInterval != DefaultProbeInterval || tu.MaxBackoff != DefaultMaxBackoff || tu.ConnectTimeout != DefaultConnectTimeout ||
		tu.MaxConcurrency != DefaultMaxConcurrency || tu.MaxCoalesce != DefaultMaxCoalesce || tu.Logger == nil ||
		!tu.Mutable(LastCheckpointKey) || tu.Mutable("_delta_log/0.json") {
		t.Errorf("defaults not set: %+v", tu)
	}
	var z Tuning
	z.Command(storage.RemoteOptions{})
	z.SetDefaults()
	if z.DownAfter != DefaultDownAfter || z.MaxAttempts != DefaultMaxAttempts || z.RequestTimeout != DefaultRequestTimeout {
		t.Errorf("zero tuning: %+v", z)
	}
}
