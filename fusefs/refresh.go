package fusefs

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/snapshot"
)

// The versions of the table: listed at mount, then polled every Refresh.
// latest moves only to a version that can be read.

// Run polls the log every Refresh until ctx ends, so new versions appear
// and latest moves without a remount. Call it after mounting. A failed
// poll keeps the last list; it is logged once (again when the cause
// changes), and its recovery once.
func (r *Root) Run(ctx context.Context) {
	t := time.NewTicker(r.opts.Refresh)
	defer t.Stop()
	failing := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, max(r.opts.Refresh*5, 30*time.Second))
		err := r.refresh(pctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && err.Error() != failing:
			failing = err.Error()
			r.log.Warn("listing the table's versions failed; keeping the last list", "err", err)
		case err == nil && failing != "":
			failing = ""
			r.log.Info("listing the table's versions works again")
		}
	}
}

// refresh lists the versions and moves latest to the newest version that
// can be read (see pickLatest); when latest moves or versions appear, it
// tells the kernel.
func (r *Root) refresh(ctx context.Context) error {
	vs, err := r.opts.Samples.Versions(ctx)
	if err != nil {
		r.mu.Lock()
		r.pollErr = err
		r.mu.Unlock()
		return err
	}
	r.mu.RLock()
	old := r.latest
	r.mu.RUnlock()
	latest := r.pickLatest(ctx, vs, old)
	if latest < 0 {
		err := errors.New("no version of the table can be read")
		r.mu.Lock()
		r.pollErr = err
		r.mu.Unlock()
		return err
	}
	r.mu.Lock()
	r.pollErr = nil
	oldVersions := r.byNum
	r.versions = vs
	r.byNum = make(map[int64]int, len(vs))
	for i, v := range vs {
		r.byNum[v.Version] = i
	}
	r.latest = latest
	moved := r.latest != old
	r.mu.Unlock()
	var added []string
	for _, v := range vs {
		if _, ok := oldVersions[v.Version]; !ok {
			added = append(added, strconv.FormatInt(v.Version, 10))
		}
	}
	if moved && old >= 0 {
		r.log.Info("new version", "latest", latest, "was", old)
	}
	if s := r.server; s != nil && (moved || len(added) > 0) {
		// Drop the kernel's cached dentry, attributes and target of
		// latest and the new version names' negative entries. Not from
		// this goroutine: a notification sent while a request waits on
		// this refresh could deadlock.
		go func() {
			if moved {
				s.InodeNotify(r.mustIno(kindLatest, 0, 0), 0, 0)
				s.EntryNotify(r.mustIno(kindRoot, 0, 0), "latest")
			}
			for _, name := range added {
				s.EntryNotify(r.mustIno(kindVersions, 0, 0), name)
			}
		}()
	}
	return nil
}

// pickLatest is where latest points after a poll: the newest listed
// version newer than old whose snapshot builds (protocol accepted, log
// intact) and that the mount's spec can serve (its columns are there, its
// filter binds: sample.Version.Servable), else old. A newer version that cannot be read is logged once
// per cause, with the table, the version and the cause, and tried again
// at every poll (a partial write may complete, a later commit may change
// the protocol back). Versions are tried newest first; a failure naming a
// log file of version c skips the versions from c up, which all need that
// file (snapshot.Error.FileVersion).
func (r *Root) pickLatest(ctx context.Context, vs []snapshot.VersionInfo, old int64) int64 {
	for i := len(vs) - 1; i >= 0 && vs[i].Version > old; i-- {
		v := vs[i].Version
		ver, err := r.opts.Samples.Version(ctx, v)
		if err == nil {
			err = ver.Servable()
		}
		if err == nil {
			r.skippedUpTo(v)
			return v
		}
		if ctx.Err() != nil {
			return old
		}
		r.warnSkipped(v, err)
		var se *snapshot.Error
		if errors.As(err, &se) {
			if c, ok := se.FileVersion(); ok && c < v {
				for i > 0 && vs[i-1].Version >= c {
					i--
				}
			}
		}
	}
	return old
}

// warnSkipped logs, once per version and cause, that latest does not move
// to version v.
func (r *Root) warnSkipped(v int64, err error) {
	table, cause := "", err.Error()
	var se *snapshot.Error
	var spe *sample.SpecError
	switch {
	case errors.As(err, &se):
		table, cause = se.Table, se.Err.Error()
		if se.File != "" {
			cause = se.File + ": " + cause
		}
	case errors.As(err, &spe):
		table, cause = spe.Table, spe.Err.Error()
	}
	r.skipMu.Lock()
	defer r.skipMu.Unlock()
	if r.skipped == nil {
		r.skipped = map[int64]string{}
	}
	if r.skipped[v] == cause {
		return
	}
	r.skipped[v] = cause
	r.log.Warn("latest does not move to a version that cannot be read", "table", table, "version", v, "cause", cause)
}

// skippedUpTo forgets the skipped versions up to v (latest reached v).
func (r *Root) skippedUpTo(v int64) {
	r.skipMu.Lock()
	defer r.skipMu.Unlock()
	for u := range r.skipped {
		if u <= v {
			delete(r.skipped, u)
		}
	}
}

// version looks a version up in the last listing.
func (r *Root) version(v int64) (snapshot.VersionInfo, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	i, ok := r.byNum[v]
	if !ok {
		return snapshot.VersionInfo{}, false
	}
	return r.versions[i], true
}

func (r *Root) latestTime() time.Time {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if i, ok := r.byNum[r.latest]; ok {
		return r.versions[i].Timestamp
	}
	return r.started
}

// latestTarget is latest's link target, false before any version.
func (r *Root) latestTarget() ([]byte, bool) {
	r.mu.RLock()
	v := r.latest
	r.mu.RUnlock()
	if v < 0 {
		return nil, false
	}
	return []byte("version/" + strconv.FormatInt(v, 10)), true
}

// atTarget is the target of at/<time> naming version v.
func atTarget(v int64) []byte { return []byte("../version/" + strconv.FormatInt(v, 10)) }

// versionTime is version v's commit time from the last listing.
func (r *Root) versionTime(v int64) time.Time {
	info, _ := r.version(v)
	return info.Timestamp
}
