package cache_test

import (
	"testing"

	"github.com/deltafs/deltafs/cache"
	"github.com/deltafs/deltafs/page"
)

// TestKeyIn: a unit's key from the page reader (page.FileRef.CacheKey),
// completed with its table, is the cache key of every field of both, and
// another table's key is another entry.
func TestKeyIn(t *testing.T) {
	ref := page.FileRef{Path: "part-0.parquet", Key: "t/part-0.parquet", Size: 1234, ID: "s1234-eabc"}
	k := cache.KeyIn("s3://b/t", ref.CacheKey("page", "data", "0/7"))
	want := cache.Key{Kind: "page", Table: "s3://b/t", File: "part-0.parquet", Version: "s1234-eabc", Column: "data", Unit: "0/7"}
	if k != want {
		t.Fatalf("KeyIn = %+v, want %+v", k, want)
	}
	if other := cache.KeyIn("s3://b/u", ref.CacheKey("page", "data", "0/7")); other.String() == k.String() {
		t.Errorf("two tables' keys share the text %q", k)
	}
	// Before the file is identified, its size is its version.
	if v := cache.KeyIn("t", page.FileRef{Path: "p", Size: 99}.CacheKey("tail", "", "")).Version; v != "99" {
		t.Errorf("unidentified file's version %q, want its size", v)
	}
}
