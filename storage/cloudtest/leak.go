package cloudtest

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// CheckGoroutines fails t if, after cleanup, more goroutines run than
// before the test (allowing them a few seconds to end). Register it first,
// so that it runs after every other cleanup.
//
// Toxiproxy's own goroutines are not counted: v2.5.0 leaks link goroutines
// blocked on a channel send when a toxic (reset_peer, limit_data) ends a
// stream, even after the proxy is stopped. That is the test harness, not
// the code under test.
func CheckGoroutines(t testing.TB) {
	before, _ := CountGoroutines()
	t.Cleanup(func() {
		if now, dump := WaitGoroutines(before, 5*time.Second); now > before {
			t.Errorf("goroutine leak: %d before, %d after\n%s", before, now, dump)
		}
	})
}

// WaitGoroutines waits up to d until at most n goroutines run (see
// CountGoroutines), and returns the count and the stacks.
func WaitGoroutines(n int, d time.Duration) (int, string) {
	var now int
	var dump string
	for deadline := time.Now().Add(d); ; {
		now, dump = CountGoroutines()
		if now <= n || time.Now().After(deadline) {
			return now, dump
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// CountGoroutines counts the goroutines other than Toxiproxy's and the
// test runner's, and returns their stacks.
func CountGoroutines() (int, string) {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var keep []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		switch {
		case strings.Contains(g, "github.com/Shopify/toxiproxy/"),
			strings.Contains(g, "testing.(*T).Run("),
			strings.Contains(g, "testing.tRunner("),
			strings.Contains(g, "testing.(*M)."),
			strings.Contains(g, "runtime.goexit") && strings.Contains(g, "os/signal."):
			continue
		}
		keep = append(keep, g)
	}
	return len(keep), strings.Join(keep, "\n\n")
}
