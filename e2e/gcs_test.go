package e2e

import (
	"strings"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/storage/gcsstore"
	"github.com/deltafs/deltafs/storage/gcsstore/gcstest"
)

// TestImageFolderGCS imports the real MNIST test set straight into
// fake-gcs-server with `deltafs import gs://...` (conditional commits over
// GCS), mounts the gs:// table as PNGs in class folders over three shards,
// and checks with torchvision's ImageFolder and a two-worker DataLoader
// that every digit comes back with its label and exact pixels.
func TestImageFolderGCS(t *testing.T) {
	python := needTorchvision(t)
	bin := buildDeltafs(t)
	gcstest.Env(t)
	f := gcstest.NewFake(t, nil)
	f.CreateBucket("train")
	t.Setenv(gcsstore.EmulatorEnv, f.Host)
	const table = "gs://train/datasets/mnist"
	run(t, bin, "import", testkit.MNISTTest, table, "--rows-per-file", "2500")
	if out := run(t, bin, "log", table); !strings.Contains(out, "10000") {
		t.Fatalf("deltafs log %s:\n%s", table, out)
	}
	mnt := mount(t, bin, table, "--image", "28x28", "--class-column", "label", "--shards", "3")
	checkImageFolder(t, python, mnt, 3)
}
