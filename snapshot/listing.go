package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/deltafs/deltafs/storage"
)

// Listing the log: every file name of _delta_log that starts with a
// zero-padded version, from a version on, in one List call. The
// _last_checkpoint hint says where a listing for the latest version can
// start; it is only a hint and may be stale, point at a missing file or be
// absent.

// logFile is one listed _delta_log file.
type logFile struct {
	logPath
	Size    int64
	ModTime time.Time
}

// versionedPrefix is the List prefix of every versioned log file: versions
// are zero-padded to 20 digits and an int64 has at most 19, so they all
// start with '0'. It keeps _sidecars/ and _last_checkpoint out.
const versionedPrefix = logDir + "0"

// listLog lists the versioned log files of version from and newer, in key
// order. A missing _delta_log lists as empty; a missing bucket or refused
// credentials (storage.IsTableWide) are errors.
func listLog(ctx context.Context, st storage.Storage, from int64) ([]logFile, error) {
	after := ""
	if from > 0 {
		after = versionPrefix(from) // sorts before every file of version from
	}
	infos, err := st.List(ctx, versionedPrefix, after)
	if err != nil {
		if errors.Is(err, storage.ErrNotExist) && !storage.IsTableWide(err) {
			return nil, nil
		}
		return nil, err
	}
	out := make([]logFile, 0, len(infos))
	for _, oi := range infos {
		p := parseLogPath(oi.Key)
		if p.Kind == kindUnknown || p.Kind == kindChecksum || p.Version < from {
			continue
		}
		out = append(out, logFile{logPath: p, Size: oi.Size, ModTime: oi.ModTime})
	}
	return out, nil
}

// lastCheckpointHint is the part of _last_checkpoint this reader uses.
type lastCheckpointHint struct {
	Version *int64 `json:"version"`
	Parts   *int   `json:"parts,omitempty"`
}

// readLastCheckpoint returns the version _last_checkpoint points at, or -1
// when it is absent or unreadable (it is a hint: a bad one costs a full
// listing, never an error).
func readLastCheckpoint(ctx context.Context, st storage.Storage) int64 {
	data, err := storage.ReadAll(ctx, st, lastCheckpointKey)
	if err != nil {
		switch {
		case errors.Is(err, storage.ErrNotRegular):
			// Never read (a named pipe would block): say so once.
			slog.Warn("ignoring the _last_checkpoint hint: the log is listed from its start", "table", st.Location(), "err", err)
		case !errors.Is(err, storage.ErrNotExist):
			slog.Debug("ignoring the _last_checkpoint hint: the log is listed from its start", "table", st.Location(), "err", err)
		}
		return -1
	}
	var h lastCheckpointHint
	if err := json.Unmarshal(data, &h); err != nil || h.Version == nil || *h.Version < 0 {
		return -1
	}
	return *h.Version
}
