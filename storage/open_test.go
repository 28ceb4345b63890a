package storage

import (
	"context"
	"strings"
	"testing"
)

// TestOpenDepthBounded: a backend whose locations lead to locations (a
// catalog's table stored at a catalog's table) ends with one line after
// maxOpenDepth opens, never recursing without end.
func TestOpenDepthBounded(t *testing.T) {
	opens := 0
	Register("looptest", func(ctx context.Context, location string, opts Options) (Storage, error) {
		opens++
		return Open(ctx, location, opts)
	})
	defer delete(openers, "looptest")
	_, err := Open(context.Background(), "looptest://x", Options{})
	if err == nil || !strings.Contains(err.Error(), "looptest://x: the location is reached through 4 others") || opens != maxOpenDepth {
		t.Fatalf("%d opens: %v", opens, err)
	}
}
