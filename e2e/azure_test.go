package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/storage/azstore/aztest"
)

// TestImageFolderAzure writes the real MNIST test set into Azurite with
// `deltafs import` (conditional commits with If-None-Match: *, through the
// Blob API that abfss:// tables are read through), mounts it from there as
// PNGs in class folders over two shards, and checks with torchvision's
// ImageFolder and a two-worker DataLoader that every digit comes back with
// its label and exact pixels. A second import of the same table appends a
// version (the commit of version 0 is not overwritten).
func TestImageFolderAzure(t *testing.T) {
	python := needTorchvision(t)
	bin := buildDeltafs(t)
	srv := aztest.Start(t, aztest.Options{})
	aztest.CreateContainer(t, srv.Endpoint, "train", false)
	for _, v := range []string{"AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN", "AZURE_CLIENT_ID"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", aztest.ConnString(srv.Endpoint))
	table := "abfss://train@" + aztest.Account + ".dfs.core.windows.net/mnist"
	run(t, bin, "import", testkit.MNISTTest, table, "--rows-per-file", "2500")

	mnt := mount(t, bin, "az://train/mnist", "--image", "28x28", "--class-column", "label", "--shards", "2")
	checkImageFolder(t, python, mnt, 2)

	// Conditional commits: an overwrite import commits version 1 next to
	// version 0, whose commit is still the first import's.
	run(t, bin, "import", testkit.MNISTTest, table, "--rows-per-file", "5000", "--mode", "overwrite")
	out, err := exec.Command(bin, "log", "--json", table).Output()
	if err != nil {
		t.Fatalf("log: %v %s", err, stderrOf(err))
	}
	if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 2 || !strings.Contains(lines[0], `"files":4`) || !strings.Contains(lines[1], `"files":2`) {
		t.Fatalf("log after two imports:\n%s", out)
	}
}
