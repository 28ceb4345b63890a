package main

import (
	"testing"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
)

// TestMain lets the tests run deltafs as a separate process without
// building it (testkit.RunMain): the test binary started so is deltafs.
// The binary the mount tests build (mounttest.Binary) is removed at the end.
func TestMain(m *testing.M) { testkit.MainProcess(mounttest.Tests(m), "deltafs", main) }
