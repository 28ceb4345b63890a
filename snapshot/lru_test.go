package snapshot

import "testing"

func TestLRU(t *testing.T) {
	c := newLRU[int, string](10)
	c.put(1, "a", 4)
	c.put(2, "b", 4)
	if _, ok := c.get(1); !ok { // 1 is now the most recent
		t.Fatal("1 missing")
	}
	c.put(3, "c", 4) // evicts 2, the least recently used
	if _, ok := c.get(2); ok {
		t.Error("2 not evicted")
	}
	if v, ok := c.get(1); !ok || v != "a" {
		t.Error("1 evicted")
	}
	c.put(1, "A", 2) // replace: cost 2+4
	if v, _ := c.get(1); v != "A" || c.cost != 6 || c.len() != 2 {
		t.Errorf("replace: %q, cost %d, len %d", v, c.cost, c.len())
	}
	c.put(4, "too big", 11)
	if _, ok := c.get(4); ok || c.len() != 2 {
		t.Error("an item larger than the cache was kept")
	}
	var keys []int
	c.each(func(k int, _ string) { keys = append(keys, k) })
	if len(keys) != 2 || keys[0] != 1 || keys[1] != 3 {
		t.Errorf("each: %v, want [1 3]", keys)
	}
}
