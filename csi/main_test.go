package csi

import (
	"os"
	"testing"

	"github.com/deltafs/deltafs/fusefs/mounttest"
)

// TestMain removes the deltafs binary the tests built.
func TestMain(m *testing.M) { os.Exit(mounttest.Tests(m).Run()) }
