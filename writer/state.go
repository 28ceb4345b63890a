package writer

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
)

const logDir = "_delta_log/"

// state is the table at the version a write builds on, read through the
// snapshot package (so checkpoints, compactions and every log shape it reads
// work here too). version -1 means no table exists yet.
type state struct {
	table   *snapshot.Log // nil while there is no table
	snap    *snapshot.Snapshot
	version int64
}

// dataFileName matches the data files this package writes, which may be left
// at a location by a write that never committed.
var dataFileName = regexp.MustCompile(`^part-\d{5}-[0-9a-f-]{36}-c000\.snappy\.parquet$`)

func logKey(version int64) string { return fmt.Sprintf("%s%020d.json", logDir, version) }

// readState returns the table's latest version, listing the log again when
// prev already opened the table.
func readState(ctx context.Context, st storage.Storage, prev *state) (*state, error) {
	t := (*snapshot.Log)(nil)
	if prev != nil {
		t = prev.table
	}
	if t == nil {
		var err error
		t, err = snapshot.Open(ctx, st)
		if errors.Is(err, snapshot.ErrNotDeltaTable) || errors.Is(err, storage.ErrNotExist) {
			return &state{version: -1}, nil
		}
		if err != nil {
			if _, serr := st.Stat(ctx, ""); serr == nil {
				return nil, fmt.Errorf("%s exists and is not a directory", st.Location())
			}
			return nil, err
		}
	} else if _, err := t.Refresh(ctx); err != nil {
		return nil, err
	}
	snap, err := t.Snapshot(ctx, -1)
	if err != nil {
		return nil, err
	}
	return &state{table: t, snap: snap, version: snap.Version}, nil
}

// liveFiles lists the live files of the version, sorted by path.
func (s *state) liveFiles() []*snapshot.AddFile {
	if s.snap == nil {
		return nil
	}
	return s.snap.Files
}

// fileKey is the storage key of a live file's path.
func (s *state) fileKey(f *snapshot.AddFile) (string, error) {
	return s.snap.FileKey(f.Path)
}

// checkWritable refuses tables whose protocol or configuration asks for
// more than this writer does.
func (s *state) checkWritable(mode Mode) error {
	if s.version < 0 {
		return nil
	}
	p, m := &s.snap.Protocol, &s.snap.Metadata
	if p.MinReaderVersion > 1 || p.MinWriterVersion > 2 || len(p.ReaderFeatures) > 0 || len(p.WriterFeatures) > 0 {
		return fmt.Errorf("table protocol (reader %d, writer %d) needs features this writer lacks (it writes reader 1, writer 2)", p.MinReaderVersion, p.MinWriterVersion)
	}
	if len(m.PartitionColumns) > 0 {
		return fmt.Errorf("table is partitioned by %v; this writer writes unpartitioned tables only", m.PartitionColumns)
	}
	for _, f := range s.snap.Schema.Fields {
		if _, ok := f.Metadata["delta.invariants"]; ok {
			return fmt.Errorf("column %q has invariants, which this writer does not check", f.Name)
		}
	}
	if mode == ModeOverwrite && strings.EqualFold(m.Configuration["delta.appendOnly"], "true") {
		return fmt.Errorf("table is append-only (delta.appendOnly=true): overwrite refused")
	}
	return nil
}

// checkEmptyLocation is called when the location has no Delta log: it fails
// when the location holds anything but leftovers of a failed write.
func checkEmptyLocation(ctx context.Context, st storage.Storage) error {
	objs, err := st.List(ctx, "", "")
	if err != nil {
		if errors.Is(err, storage.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("list %s: %w", st.Location(), err)
	}
	for _, o := range objs {
		if o.Key == "." || o.Key == "" {
			return fmt.Errorf("%s exists and is not a directory", st.Location())
		}
		if strings.HasPrefix(o.Key, logDir) || dataFileName.MatchString(o.Key) || strings.HasPrefix(o.Key, ".tmp-part-") {
			continue // a concurrent or failed write's, or the local backend's in-flight put of one
		}
		return fmt.Errorf("%s exists but is not a Delta table and is not empty (it holds %s)", st.Location(), o.Key)
	}
	return nil
}
