package snapshot

import (
	"context"
	"strconv"
	"time"
)

// Commit times and timestamp time travel. The time of a version is its
// commit's inCommitTimestamp when in-commit timestamps are enabled for it
// (delta.enableInCommitTimestamps in the latest metadata, from
// delta.inCommitTimestampEnablementVersion on), else the modification time
// of its commit file (of its checkpoint when the commit was cleaned up).

// ictConfig is the in-commit timestamp setting of the latest metadata.
type ictConfig struct {
	since int64 // first version with in-commit timestamps; -1: disabled
}

func ictFromMetadata(m *Metadata) ictConfig {
	if m == nil || m.Configuration["delta.enableInCommitTimestamps"] != "true" {
		return ictConfig{since: -1}
	}
	since := int64(0)
	if s, ok := m.Configuration["delta.inCommitTimestampEnablementVersion"]; ok {
		if v, err := strconv.ParseInt(s, 10, 64); err == nil && v >= 0 {
			since = v
		}
	}
	return ictConfig{since: since}
}

// uses reports whether version v takes its time from inCommitTimestamp.
func (c ictConfig) uses(v int64) bool { return c.since >= 0 && v >= c.since }

// versionTime is the commit time of version v from its commitInfo (nil
// when the commit is not read or has none) and the file's time.
func (t *Table) versionTime(v int64, ict *int64, mod time.Time) time.Time {
	t.mu.Lock()
	cfg := t.ict
	t.mu.Unlock()
	return cfg.time(v, ict, mod)
}

// time is the time of version v with in-commit timestamp ict (nil when
// the commit has none) and file time mod.
func (c ictConfig) time(v int64, ict *int64, mod time.Time) time.Time {
	if ict != nil && c.uses(v) {
		return time.UnixMilli(*ict)
	}
	return mod
}

// commitTime is the time of version v, whose commitInfo is ci.
func (t *Table) commitTime(v int64, ci *CommitInfo, lst *logListing) time.Time {
	var ict *int64
	if ci != nil {
		ict = ci.InCommitTimestamp
	}
	return t.versionTime(v, ict, fileTime(lst, v))
}

// fileTime is the modification time of version v's commit file, or of its
// checkpoint when the commit is gone.
func fileTime(lst *logListing, v int64) time.Time {
	if f, ok := lst.commit(v); ok {
		return f.ModTime
	}
	if c, ok := completeCheckpoint(lst.checkpoints[v], nil); ok {
		return c.Files[0].ModTime
	}
	return time.Time{}
}

// VersionAt returns the latest version committed at or before ts, among
// the readable versions of the last listing (Versions refreshes it). The
// search does not assume commit times increase: it is the greatest
// version whose time is not after ts. It fails with an *Error wrapping
// ErrVersionNotFound when every readable version is newer than ts.
func (t *Table) VersionAt(ctx context.Context, ts time.Time) (int64, error) {
	infos, err := t.versionInfos(ctx, t.listing())
	if err != nil {
		return -1, err
	}
	for i := len(infos) - 1; i >= 0; i-- {
		if !infos[i].Timestamp.After(ts) {
			return infos[i].Version, nil
		}
	}
	if len(infos) == 0 {
		return -1, t.err(-1, "", because(ErrVersionNotFound, "no readable version"))
	}
	first := infos[0]
	for _, in := range infos {
		if in.Timestamp.Before(first.Timestamp) {
			first = in
		}
	}
	return -1, t.err(-1, "", because(ErrVersionNotFound, "%s is before the earliest commit (version %d at %s)",
		ts.UTC().Format(time.RFC3339Nano), first.Version, first.Timestamp.UTC().Format(time.RFC3339Nano)))
}
