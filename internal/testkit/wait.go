package testkit

import (
	"testing"
	"time"
)

// WaitUntil polls cond every millisecond until it holds, failing t after
// ten seconds with what was waited for.
func WaitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
