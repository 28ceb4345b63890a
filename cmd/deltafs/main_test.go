package main

import (
	"testing"

	"github.com/deltafs/deltafs/internal/testkit"
)

// TestMain lets the tests run deltafs as a separate process without
// building it (testkit.RunMain): the test binary started so is deltafs.
func TestMain(m *testing.M) { testkit.MainProcess(m, "deltafs", main) }
