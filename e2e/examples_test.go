package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
)

// mnistMount imports the MNIST test set and mounts it as PNG class folders
// over the given number of shards.
func mnistMount(t *testing.T, bin string, shards int) *mounttest.Mount {
	t.Helper()
	table := filepath.Join(t.TempDir(), "mnist")
	run(t, bin, "import", testkit.MNISTTest, table, "--rows-per-file", "2500")
	return mounttest.Start(t, bin, table, "--image", "28x28", "--class-column", "label", "--shards", fmt.Sprint(shards))
}

// runPython runs python args... from the repository root with a time limit
// and returns its combined output, failing the test on a non-zero exit.
func runPython(t *testing.T, python string, limit time.Duration, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, args...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v (context: %v)\n%s", args, err, ctx.Err(), out)
	}
	return string(out)
}

// TestExampleMNIST runs examples/mnist/train.py, unmodified but for
// --max-steps, over shard 0 of a two-shard mount (shard 1 as --val) for one
// short epoch: it prints loss lines and an accuracy.
func TestExampleMNIST(t *testing.T) {
	python := needTorchvision(t)
	bin := buildDeltafs(t)
	m := mnistMount(t, bin, 2)
	out := runPython(t, python, 3*time.Minute, "examples/mnist/train.py",
		filepath.Join(m.Dir, "latest", "shard", "0"), "--val", filepath.Join(m.Dir, "latest", "shard", "1"),
		"--epochs", "1", "--max-steps", "20", "--batch-size", "32", "--workers", "1", "--threads", "1")
	for _, re := range []string{
		`(?m)^5000 samples in 10 classes from .*/mnt/version/0/shard/0$`,
		`(?m)^epoch 1 \[32/5000\] loss \d+\.\d{4}$`,
		`(?m)^epoch 1: accuracy [01]\.\d{4}, \d+ samples/s$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("train.py output does not match %s:\n%s", re, out)
		}
	}
}

// TestExampleDDP runs examples/ddp/train_ddp.py with torch.distributed.run,
// two processes on the gloo backend, over a two-shard mount for a few
// steps: each rank reads its own shard of the version rank 0 pinned.
func TestExampleDDP(t *testing.T) {
	python := needTorchvision(t)
	bin := buildDeltafs(t)
	m := mnistMount(t, bin, 2)
	// --redirects 1 --tee 1: Debian's torch 1.13 on Python 3.11 fails with
	// the default --redirects 0 (enum iteration skips Std.NONE there, so
	// "0" parses to None); stdout then goes to a log file and, prefixed
	// "[defaultR]:", to the console.
	out := runPython(t, python, 3*time.Minute, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
		"--redirects", "1", "--tee", "1", "--log_dir", t.TempDir(),
		"examples/ddp/train_ddp.py", m.Dir, "--max-steps", "5", "--batch-size", "32", "--workers", "0")
	for r := 0; r < 2; r++ {
		re := fmt.Sprintf(`(?m)^(\[default%d\]:)?rank %d/2: version 0, 5000 samples from %s$`, r, r,
			regexp.QuoteMeta(filepath.Join(m.Dir, "version", "0", "shard", fmt.Sprint(r))))
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("rank %d did not report reading its own shard (%s):\n%s", r, re, out)
		}
	}
	for _, re := range []string{`(?m)^(\[default0\]:)?epoch 1 batch 0 loss \d+\.\d{4}$`, `(?m)^(\[default0\]:)?epoch 1: mean accuracy over ranks [01]\.\d{4}$`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("train_ddp.py output does not match %s:\n%s", re, out)
		}
	}
}

// TestDemoScript runs scripts/demo.sh (what `make demo` runs) with the test
// binary and a temporary work directory, waits until it serves, then sends
// Ctrl-C (SIGINT to its process group), or SIGTERM to the group as
// `timeout make demo` does: it exits 0 and leaves nothing mounted, and the
// one signal (which the mount gets twice: from the group, and forwarded by
// the script's trap) is one, not a "second SIGINT".
func TestDemoScript(t *testing.T) {
	bin := buildDeltafs(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) { demoScript(t, bin, sig) })
	}
}

func demoScript(t *testing.T, bin string, sig syscall.Signal) {
	work := t.TempDir()
	mnt := filepath.Join(work, "mnt")
	cmd := exec.Command("bash", "scripts/demo.sh")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "DELTAFS_BIN="+bin, "DEMO_DIR="+work)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out testkit.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		mounttest.Unmount(mnt)
	})
	deadline := time.After(2 * time.Minute)
	for !strings.Contains(out.String(), "until Ctrl-C") {
		select {
		case err := <-exited:
			t.Fatalf("demo.sh exited before serving: %v\n%s", err, out.String())
		case <-deadline:
			t.Fatalf("demo.sh did not reach 'Serving' in 2 minutes:\n%s", out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if !mounttest.Mounted(mnt) {
		t.Fatalf("demo.sh says it serves but %s is not mounted:\n%s", mnt, out.String())
	}
	for _, want := range []string{"version 0: ", "version 2: ", "readlink " + mnt + "/latest\nversion/2\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("demo.sh after %v: %v, want exit 0\n%s", sig, err, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("demo.sh still running 30s after %v:\n%s", sig, out.String())
	}
	if mounttest.Mounted(mnt) {
		t.Fatalf("%s still mounted after the demo ended", mnt)
	}
	if strings.Contains(out.String(), "second") || !strings.Contains(out.String(), "demo: unmounted") {
		t.Errorf("demo.sh after one %v: want the mount to unmount on it, as one signal:\n%s", sig, out.String())
	}
}

// TestExampleTar runs examples/tar/train_tar.py, streaming shard 0's tar
// view (shard 1's as --val), and examples/mnist/train.py over the same
// shards' folders with the same budget: the tar loader trains to the same
// accuracy as ImageFolder (within 0.1). Then the same script under
// torch.distributed.run, one tar per rank.
func TestExampleTar(t *testing.T) {
	python := needTorchvision(t)
	bin := buildDeltafs(t)
	m := mnistMount(t, bin, 2)
	shard := func(k int, ext string) string {
		return filepath.Join(m.Dir, "latest", "shard", fmt.Sprint(k)+ext)
	}
	budget := []string{"--epochs", "1", "--max-steps", "40", "--batch-size", "32", "--threads", "1"}
	accRe := regexp.MustCompile(`(?m)^epoch 1: accuracy ([01]\.\d{4}), \d+ samples/s$`)
	accuracy := func(name, out string) float64 {
		t.Helper()
		mm := accRe.FindStringSubmatch(out)
		if mm == nil {
			t.Fatalf("%s prints no accuracy line:\n%s", name, out)
		}
		var a float64
		fmt.Sscan(mm[1], &a)
		return a
	}
	tarOut := runPython(t, python, 3*time.Minute, append([]string{"examples/tar/train_tar.py", shard(0, ".tar"),
		"--val", shard(1, ".tar"), "--shuffle", "256", "--workers", "1"}, budget...)...)
	if want := "streaming " + filepath.Join(m.Dir, "version", "0", "shard", "0.tar"); !strings.Contains(tarOut, want) {
		t.Errorf("train_tar.py does not say it streams the pinned version's tar (%s):\n%s", want, tarOut)
	}
	folderOut := runPython(t, python, 3*time.Minute, append([]string{"examples/mnist/train.py", shard(0, ""),
		"--val", shard(1, ""), "--workers", "1"}, budget...)...)
	tarAcc, folderAcc := accuracy("train_tar.py", tarOut), accuracy("train.py", folderOut)
	if tarAcc < 0.5 || tarAcc < folderAcc-0.1 {
		t.Errorf("tar loader accuracy %.4f, ImageFolder's %.4f with the same budget:\n%s", tarAcc, folderAcc, tarOut)
	}

	out := runPython(t, python, 3*time.Minute, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
		"--redirects", "1", "--tee", "1", "--log_dir", t.TempDir(),
		"examples/tar/train_tar.py", "--mount", m.Dir, "--max-steps", "5", "--batch-size", "32", "--workers", "0",
		"--shuffle", "64", "--threads", "1")
	for r := 0; r < 2; r++ {
		re := fmt.Sprintf(`(?m)^(\[default%d\]:)?rank %d/2: streaming %s$`, r, r,
			regexp.QuoteMeta(filepath.Join(m.Dir, "version", "0", "shard", fmt.Sprintf("%d.tar", r))))
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("rank %d did not report streaming its own shard's tar (%s):\n%s", r, re, out)
		}
	}
	if !regexp.MustCompile(`(?m)^(\[default0\]:)?epoch 1: accuracy [01]\.\d{4}, \d+ samples/s$`).MatchString(out) {
		t.Errorf("train_tar.py under torch.distributed prints no accuracy:\n%s", out)
	}
}

// TestExamplesCheckPaths: the examples refuse, before training, a path
// one level too high (ImageFolder would train on the shard numbers, or on
// "shard", as classes) and a mount with fewer shards than ranks (rank 2 of
// 3 would fail with FileNotFoundError .../shard/2), each with one line
// saying what to pass, and exit 1. The DDP scripts check before joining
// the process group (so WORLD_SIZE, as torch.distributed.run sets it, is
// all they need to refuse).
func TestExamplesCheckPaths(t *testing.T) {
	python := needTorchvision(t)
	bin := buildDeltafs(t)
	m := mnistMount(t, bin, 2)
	latest := filepath.Join(m.Dir, "latest")
	for _, tc := range []struct {
		name  string
		world string
		args  []string
		want  string
	}{
		{"shard list", "", []string{"examples/mnist/train.py", filepath.Join(latest, "shard")},
			"train.py: " + filepath.Join(latest, "shard") + " is the list of shards, not a shard: pass one shard, e.g. " + filepath.Join(latest, "shard", "0")},
		{"version", "", []string{"examples/mnist/train.py", latest},
			"train.py: " + latest + " is a table version, not a shard: pass one shard, e.g. " + filepath.Join(latest, "shard", "0")},
		{"mount point", "", []string{"examples/mnist/train.py", m.Dir, "--epochs", "1"},
			"train.py: " + m.Dir + " is the mount point, not a shard: pass one shard, e.g. " + filepath.Join(latest, "shard", "0")},
		{"val too high", "", []string{"examples/mnist/train.py", filepath.Join(latest, "shard", "0"), "--val", filepath.Join(latest, "shard")},
			"is the list of shards, not a shard"},
		{"ddp shard", "2", []string{"examples/ddp/train_ddp.py", filepath.Join(latest, "shard", "0")},
			"train_ddp.py: " + filepath.Join(latest, "shard", "0") + " is not a deltafs mount point (no latest and version/ in it): pass the directory given to `deltafs mount`"},
		{"ddp too few shards", "3", []string{"examples/ddp/train_ddp.py", m.Dir},
			"train_ddp.py: " + m.Dir + " has 2 shards but the job has 3 ranks: mount it with --shards 3 (one shard per rank), or run 2 ranks"},
		{"tar too few shards", "3", []string{"examples/tar/train_tar.py", "--mount", m.Dir},
			"train_tar.py: " + m.Dir + " has 2 shards but the job has 3 ranks: mount it with --shards 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, python, tc.args...)
			cmd.Dir = ".."
			cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=1", "WORLD_SIZE="+tc.world, "RANK=0", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=1")
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("%v: %v (context: %v), want exit 1\nstdout:\n%s\nstderr:\n%s", tc.args, err, ctx.Err(), stdout.String(), stderr.String())
			}
			line := strings.TrimSpace(stderr.String())
			if strings.Contains(line, "\n") || !strings.Contains(line, tc.want) || stdout.Len() != 0 {
				t.Errorf("%v: stderr %q, stdout %q; want one line with %q", tc.args, stderr.String(), stdout.String(), tc.want)
			}
		})
	}

	// An ImageFolder of digit classes that is not a mount (folders 0, 1
	// and no K.tar beside them) is not taken for a list of shards.
	tree := t.TempDir()
	for c := 0; c < 2; c++ {
		for i := 0; i < 2; i++ {
			var b bytes.Buffer
			if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 28, 28))); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(tree, fmt.Sprint(c), fmt.Sprintf("%d.png", i))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	out := runPython(t, python, 2*time.Minute, "examples/mnist/train.py", tree, "--max-steps", "1", "--workers", "0", "--threads", "1")
	if !strings.Contains(out, "4 samples in 2 classes from "+tree) {
		t.Errorf("train.py over an ImageFolder of digit classes:\n%s", out)
	}
}
