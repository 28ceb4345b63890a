package fusefs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Overlays: no IOCTL round trip per open.
//
// Linux forwards every ioctl on a FUSE file to the server, and CPython
// before 3.14 asks isatty (TCGETS) in every open() with default
// buffering: one round trip per file, whatever the server answers. An
// overlayfs has no ioctl handler for regular files, so TCGETS is answered
// in the kernel. Overlayfs assumes its layers never change, which holds
// for version/N only; so the mount stacks a read-only overlay of each
// version directory on that very directory (lowerdir=MNT/version/N plus an
// empty directory, mounted at MNT/version/N): paths under version/N,
// latest/... and at/<time>/... then cross into the overlay, while the
// root, version/, latest and at/ stay the FUSE mount's own and keep moving.
// Reads of the overlay's files are reads of the FUSE files (same page
// cache, errors passed through, nothing cached that the mount does not).
//
// An overlay is mounted for the version latest points to (checked every
// overlayPoll) and for each version directory the kernel looks up, lists
// or walks into (a LOOKUP in it), from a
// goroutine after the LOOKUP's reply (a mount from inside the LOOKUP would
// wait for itself). A process that walked into version/N before its
// overlay was there keeps the FUSE directory it holds and pays the IOCTLs;
// a path walked afresh, as every open() is, crosses the overlay. At most
// MaxOverlays are mounted; further versions are served by the FUSE mount
// alone. Unmount detaches them before the FUSE mount, also after the
// server was killed (UnmountOverlays).
//
// The mount(2) of an overlay is made by a child process (mount(8)), never
// by the server itself: overlayfs looks up and statfs-es its lower layer
// while mounting, which are FUSE requests to this very server. Were the
// server killed while one of them was read but not answered, the thread
// in mount(2) would wait uninterruptibly for an answer that its own
// process can no longer give, holding the new superblock's lock: the
// process could not exit and every sync(2) on the machine would hang. A
// child's mount(2) ends instead, with ENOTCONN, when the dying server's
// /dev/fuse closes.

// MaxOverlays bounds the overlays a mount stacks.
const MaxOverlays = 64

// overlayMountTimeout bounds one overlay's mount(8).
const overlayMountTimeout = 30 * time.Second

// overlayPoll is how often the overlay goroutine looks where latest
// points.
const overlayPoll = 200 * time.Millisecond

type overlays struct {
	mnt      string // the FUSE mount point, absolute
	empty    string // the empty second layer
	mountCmd string // mount(8), which makes each overlay's mount(2)
	want     chan int64

	mu      sync.Mutex
	mounted map[int64]bool // guarded by mu; versions tried (true: mounted)
}

// StartOverlays stacks an overlay on each version directory that is read
// (see above) of the mount at mnt, served by r. It mounts the one of the
// latest version at once, and fails, mounting nothing, when overlays
// cannot be made here (not root, no overlayfs, a mount point path that
// overlayfs options cannot name): the caller logs the error, which says
// what that costs, and the mount works without them.
func (r *Root) StartOverlays(mnt string) error {
	// Only the parent is resolved: a stat of the mount point itself would
	// be a request to this server (see above).
	abs, err := filepath.Abs(mnt)
	if err == nil {
		var dir string
		dir, err = filepath.EvalSymlinks(filepath.Dir(abs))
		abs = filepath.Join(dir, filepath.Base(abs))
	}
	if err != nil {
		return overlayOff(err.Error())
	}
	if strings.ContainsAny(abs, ":,\\\n") {
		return overlayOff("the mount point's path holds ':', ',' or '\\', which overlayfs options cannot name")
	}
	if os.Geteuid() != 0 {
		return overlayOff("not root")
	}
	mountCmd, err := exec.LookPath("mount")
	if err != nil {
		return overlayOff("no mount(8) command")
	}
	empty, err := os.MkdirTemp("", "deltafs-overlay-")
	if err != nil {
		return overlayOff(err.Error())
	}
	o := &overlays{mnt: abs, empty: empty, mountCmd: mountCmd, want: make(chan int64, 64), mounted: map[int64]bool{}}
	r.mu.RLock()
	latest := r.latest
	r.mu.RUnlock()
	if latest >= 0 {
		if err := o.mount(latest); err != nil {
			os.Remove(empty)
			return overlayOff(err.Error())
		}
	}
	r.ovl.Store(o)
	go o.run(r)
	return nil
}

func overlayOff(cause string) error {
	return fmt.Errorf("no overlays (%s): every Python open() with default buffering costs one IOCTL round trip to the server (isatty); mounted without them", cause)
}

// entered notes a LOOKUP of child c in parent, or an OPENDIR of parent
// (c zero): a version directory looked up, listed or walked into (its
// entry may come from a listing of version/, which sends no LOOKUP) wants
// its overlay.
func (r *Root) entered(parent, c node) {
	switch {
	case parent.kind == kindVersion:
		r.overlayWanted(parent.version)
	case c.kind == kindVersion:
		r.overlayWanted(c.version)
	}
}

// overlayWanted asks for an overlay of version v, without waiting.
func (r *Root) overlayWanted(v int64) {
	o := r.ovl.Load()
	if o == nil {
		return
	}
	o.mu.Lock()
	_, seen := o.mounted[v]
	o.mu.Unlock()
	if seen {
		return
	}
	select {
	case o.want <- v:
	default: // asked again at the next lookup
	}
}

func (o *overlays) run(r *Root) {
	t := time.NewTicker(overlayPoll)
	defer t.Stop()
	served := make(chan struct{})
	if s := r.server; s != nil {
		go func() { s.Wait(); close(served) }()
	}
	for {
		var v int64
		select {
		case <-served:
			return
		case v = <-o.want:
		case <-t.C:
			r.mu.RLock()
			v = r.latest
			r.mu.RUnlock()
		}
		if v < 0 || !r.known(v) {
			continue
		}
		o.mu.Lock()
		_, seen := o.mounted[v]
		full := len(o.mounted) >= MaxOverlays
		o.mu.Unlock()
		if seen {
			continue
		}
		if full {
			o.mu.Lock()
			o.mounted[v] = false
			o.mu.Unlock()
			r.log.Info("overlay limit reached: version served by the FUSE mount alone (an IOCTL round trip per Python open)", "version", v, "limit", MaxOverlays)
			continue
		}
		if err := o.mount(v); err != nil {
			if !Mounted(o.mnt) {
				return // unmounted
			}
			r.log.Warn("no overlay for a version: its Python opens cost an IOCTL round trip each", "version", v, "err", err)
		}
	}
}

// mount stacks the overlay of version v.
func (o *overlays) mount(v int64) error {
	dir := filepath.Join(o.mnt, "version", strconv.FormatInt(v, 10))
	ctx, cancel := context.WithTimeout(context.Background(), overlayMountTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, o.mountCmd, "--no-canonicalize", "-n", "-t", "overlay", "overlay",
		"-o", "ro,nosuid,nodev,lowerdir="+dir+":"+o.empty, dir).CombinedOutput()
	if err != nil {
		if msg := strings.TrimSpace(string(out)); msg != "" {
			err = errors.New(msg)
		}
	}
	o.mu.Lock()
	o.mounted[v] = err == nil
	o.mu.Unlock()
	if err != nil {
		return fmt.Errorf("overlay of %s: %w", versionPath(v), err)
	}
	return nil
}

// Overlays is the number of overlays the mount stacked.
func (r *Root) Overlays() int {
	o := r.ovl.Load()
	if o == nil {
		return 0
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, ok := range o.mounted {
		if ok {
			n++
		}
	}
	return n
}

// overlaysUnder lists the overlay mounts inside the mount at dir (their
// mount points, deepest first), from /proc/self/mountinfo.
func overlaysUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	prefix := strings.TrimSuffix(dir, "/") + "/version/"
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		p := unescapeMountinfo(fields[4])
		if !strings.HasPrefix(p, prefix) {
			continue
		}
		for i, fl := range fields {
			if fl == "-" && i+1 < len(fields) && fields[i+1] == "overlay" {
				out = append(out, p)
				break
			}
		}
	}
	// Later mounts first: one stacked over another goes before it.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// UnmountOverlays unmounts the overlays stacked inside the deltafs mount
// at dir (also when its server died): detached when lazy, else only those
// no file is open under, so that a busy mount stays busy. It reports
// whether some remain (a lazy unmount of dir, which detaches what is
// under it, clears them).
func UnmountOverlays(dir string, lazy bool) (remain bool) {
	flags := unix.UMOUNT_NOFOLLOW
	if lazy {
		flags |= unix.MNT_DETACH
	}
	abs, err := filepath.Abs(dir)
	if err == nil {
		if p, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
			abs = filepath.Join(p, filepath.Base(abs))
		}
	}
	for _, p := range overlaysUnder(abs) {
		if err := unix.Unmount(p, flags); err != nil && !errors.Is(err, unix.EINVAL) {
			remain = true
		}
	}
	return remain || len(overlaysUnder(abs)) > 0
}
