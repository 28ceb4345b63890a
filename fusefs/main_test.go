package fusefs_test

import (
	"os"
	"testing"

	"github.com/deltafs/deltafs/fusefs/mounttest"
)

// TestMain removes the deltafs binary the mount tests build.
func TestMain(m *testing.M) { os.Exit(mounttest.Tests(m).Run()) }
