package snapshot

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Commit times and timestamp time travel. The time of a version is its
// commit's inCommitTimestamp when in-commit timestamps are enabled for it
// (delta.enableInCommitTimestamps in the latest metadata, from
// delta.inCommitTimestampEnablementVersion on), else the modification time
// of its commit file (of its checkpoint when the commit was cleaned up),
// truncated to the millisecond: Delta's times are milliseconds, and
// every time deltafs prints (Unix milliseconds, or RFC 3339 and its table
// format with milliseconds) must select its own version when given back.

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
func (t *Log) versionTime(v int64, ict *int64, mod time.Time) time.Time {
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
	if mod.IsZero() {
		return mod
	}
	return time.UnixMilli(mod.UnixMilli())
}

// commitTime is the time of version v, whose commitInfo is ci.
func (t *Log) commitTime(v int64, ci *CommitInfo, lst *logListing) time.Time {
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
func (t *Log) VersionAt(ctx context.Context, ts time.Time) (int64, error) {
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

// LogTimeLayout is how `deltafs log` prints commit times (in UTC):
// milliseconds, like every time deltafs prints, so that ParseTime of it
// selects that version.
const LogTimeLayout = "2006-01-02 15:04:05.000"

// ParseTime reads a time given to select a version (`--at`, the mount's
// at/ names): Unix milliseconds (1673493662988), RFC 3339 with or without
// a fraction, with Z or an offset (2023-01-12T03:21:02.988Z,
// 2023-01-12T05:21:02+02:00), or the table format of `deltafs log`, in
// UTC (2023-01-12 03:21:02.988; the fraction may be left out). The one
// parser for the command line and the mount.
func ParseTime(s string) (time.Time, error) {
	if isUnixMilli(s) {
		if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.UnixMilli(ms), nil
		}
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02 15:04:05.999999999", s, time.UTC); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time: want Unix milliseconds (1673493662988), RFC 3339 (2023-01-12T03:21:02.988Z) or the time `deltafs log` prints, in UTC (%s)", s, "2023-01-12 03:21:02.988")
}

// isUnixMilli reports whether s is an optional minus sign and digits.
func isUnixMilli(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
