package testkit

import (
	"bytes"
	"strings"
	"sync"
)

// SyncBuffer is a bytes.Buffer safe for concurrent Write and String: the
// output of a child process or a logger, read while it is written.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// LogLines are the lines of a text-format slog log (level=INFO ...) at
// level holding every one of subs.
func LogLines(log, level string, subs ...string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		ok := strings.Contains(l, "level="+level)
		for _, s := range subs {
			ok = ok && strings.Contains(l, s)
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}
