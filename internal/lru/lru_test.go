package lru

import (
	"slices"
	"testing"
)

func keys[K comparable, V any](c *Cache[K, V]) []K {
	var ks []K
	for k := range c.All() {
		ks = append(ks, k)
	}
	return ks
}

func TestLRU(t *testing.T) {
	c := New[int, string](10, nil)
	c.Add(1, "a", 4)
	c.Add(2, "b", 4)
	if _, ok := c.Get(1); !ok { // 1 is now the most recent
		t.Fatal("1 missing")
	}
	c.Add(3, "c", 4) // evicts 2, the least recently used
	if _, ok := c.Get(2); ok {
		t.Error("2 not evicted")
	}
	if v, ok := c.Get(1); !ok || v != "a" {
		t.Error("1 evicted")
	}
	c.Add(1, "A", 2) // replace: cost 2+4
	if v, _ := c.Get(1); v != "A" || c.Cost() != 6 || c.Len() != 2 {
		t.Errorf("replace: %q, cost %d, len %d", v, c.Cost(), c.Len())
	}
	if c.Add(4, "too big", 11) {
		t.Error("Add of an entry larger than the cache reported it kept")
	}
	if _, ok := c.Get(4); ok || c.Len() != 2 {
		t.Error("an item larger than the cache was kept")
	}
	if ks := keys(c); !slices.Equal(ks, []int{1, 3}) {
		t.Errorf("All: %v, want [1 3]", ks)
	}
	// Replacing with an entry too large removes the old one.
	if c.Add(3, "too big", 11); c.Len() != 1 || c.Cost() != 2 {
		t.Errorf("after a too large replacement: len %d cost %d, want 1 2", c.Len(), c.Cost())
	}
}

func TestLRUEvictCallback(t *testing.T) {
	var evicted []int
	c := New(3, func(k int, v string) {
		if v != string(rune('a'+k)) {
			t.Errorf("evicted %d with value %q", k, v)
		}
		evicted = append(evicted, k)
	})
	for k := range 5 {
		c.Add(k, string(rune('a'+k)), 1)
	}
	if !slices.Equal(evicted, []int{0, 1}) {
		t.Fatalf("evicted %v, want [0 1]", evicted)
	}
	// Remove, RemoveFunc and replacement are not evictions.
	c.Add(4, "e", 1)
	if v, ok := c.Remove(3); !ok || v != "d" {
		t.Fatalf("Remove(3) = %q, %v", v, ok)
	}
	if _, ok := c.Remove(3); ok {
		t.Fatal("Remove of a removed key reported a value")
	}
	c.RemoveFunc(func(k int, _ string) bool { return k == 2 })
	if len(evicted) != 2 {
		t.Fatalf("evicted %v after Remove/RemoveFunc/replace, want [0 1]", evicted)
	}
	if ks := keys(c); !slices.Equal(ks, []int{4}) || c.Cost() != 1 {
		t.Fatalf("left %v cost %d, want [4] 1", ks, c.Cost())
	}
	// One costly entry evicts several.
	c.Add(5, "f", 1)
	c.Add(6, "g", 1)
	c.Add(7, "h", 3)
	if !slices.Equal(evicted, []int{0, 1, 4, 5, 6}) || c.Len() != 1 || c.Cost() != 3 {
		t.Fatalf("evicted %v, len %d cost %d", evicted, c.Len(), c.Cost())
	}
}

func TestLRUNothingKept(t *testing.T) {
	for _, max := range []int64{0, -1} {
		c := New[string, int](max, func(string, int) { t.Error("evicted from an empty cache") })
		if c.Add("a", 1, 1) || c.Len() != 0 {
			t.Errorf("max %d: an entry was kept", max)
		}
	}
	// A zero cost entry fits a zero budget; a negative cost counts as 0.
	c := New[string, int](0, nil)
	if !c.Add("a", 1, -5) || c.Cost() != 0 {
		t.Errorf("a negative cost entry: cost %d", c.Cost())
	}
}

// TestLRUOrder checks the recency order against a plain slice model over
// a long pseudo-random run of every operation.
func TestLRUOrder(t *testing.T) {
	const max = 8
	c := New[int, int](max, nil)
	var model []int // most recent first; every entry costs 1
	touch := func(k int) {
		model = slices.DeleteFunc(model, func(x int) bool { return x == k })
		model = append([]int{k}, model...)
	}
	x := uint32(1)
	for i := range 20000 {
		x = x*1664525 + 1013904223
		k := int(x>>8) % 13
		switch op := (x >> 24) % 4; op {
		case 0, 1:
			c.Add(k, k*10, 1)
			touch(k)
			if len(model) > max {
				model = model[:max]
			}
		case 2:
			v, ok := c.Get(k)
			if ok != slices.Contains(model, k) || ok && v != k*10 {
				t.Fatalf("step %d: Get(%d) = %d, %v; model %v", i, k, v, ok, model)
			}
			if ok {
				touch(k)
			}
		case 3:
			_, ok := c.Remove(k)
			if ok != slices.Contains(model, k) {
				t.Fatalf("step %d: Remove(%d) = %v; model %v", i, k, ok, model)
			}
			model = slices.DeleteFunc(model, func(y int) bool { return y == k })
		}
		if ks := keys(c); !slices.Equal(ks, model) && !(len(ks) == 0 && len(model) == 0) {
			t.Fatalf("step %d: order %v, want %v", i, ks, model)
		}
		if c.Len() != len(model) || c.Cost() != int64(len(model)) {
			t.Fatalf("step %d: len %d cost %d, want %d", i, c.Len(), c.Cost(), len(model))
		}
	}
}
