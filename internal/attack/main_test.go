package attack

import (
	"io"
	"log/slog"
	"os"
	"testing"
)

// TestMain keeps the suite's output readable: damaged tables make deltafs
// log warnings by the hundred (that is their job); only errors show. It
// removes the table the targets import once the tests are done.
func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	code := m.Run()
	if importedDir != "" {
		_ = os.RemoveAll(importedDir)
	}
	os.Exit(code)
}
