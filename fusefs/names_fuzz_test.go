package fusefs

import (
	"strconv"
	"testing"

	"github.com/deltafs/deltafs/snapshot"
)

// FuzzParseName: the names the mount parses (version/N, shard/K, at/TIME)
// never panic, and every index has exactly one name: a name parses only
// when it is the canonical decimal of its value (no sign, no leading zero,
// ASCII digits), so version/+1 or version/01 is never an alias of
// version/1.
func FuzzParseName(f *testing.F) {
	for _, s := range []string{"0", "1", "+1", "-1", "01", "١", "9223372036854775807", "99999999999999999999", " 1", "1 ", "0x1",
		"1795536164500", "2026-11-24T17:00:00Z", "2026-11-24 17:00:00.123", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if n, ok := parseIndex(name); ok {
			if n < 0 || strconv.FormatInt(n, 10) != name {
				t.Fatalf("parseIndex(%q) = %d: not its canonical name", name, n)
			}
		}
		_, _ = snapshot.ParseTime(name)
	})
}

func TestParseIndexAliases(t *testing.T) {
	for _, name := range []string{"+1", "-1", "01", "1 ", " 1", "١", "1e3", "0x1", ""} {
		if n, ok := parseIndex(name); ok {
			t.Errorf("parseIndex(%q) = %d, want no index", name, n)
		}
	}
	if n, ok := parseIndex("17"); !ok || n != 17 {
		t.Errorf("parseIndex(17) = %d, %v", n, ok)
	}
}
