package snapshot

import (
	"cmp"
	"slices"
)

// Log replay: the live files of a version are the add actions left after
// applying, in order, the checkpoint's adds and then each commit's adds
// and removes, keyed by (path, deletion vector id). Within a commit,
// actions apply in file order (as Delta's reference implementation does).
// A log compaction file holds the reconciled actions of its commit range
// newest first and may hold both an add and a remove of one key: there the
// first action seen for a key wins.

// state is the table while replaying.
type state struct {
	version      int64
	protocol     *Protocol
	metadata     *Metadata
	protocolFrom string // key of the file the protocol came from
	metadataFrom string // key of the file the metadata came from
	files        map[fileID]*AddFile
}

func newState() *state {
	return &state{version: -1, files: map[fileID]*AddFile{}}
}

// stateFromCheckpoint starts from a checkpoint's reconciled state.
func stateFromCheckpoint(cs *checkpointState, key string) *state {
	s := &state{version: cs.Version, protocol: cs.Protocol, metadata: cs.Metadata,
		protocolFrom: key, metadataFrom: key, files: make(map[fileID]*AddFile, len(cs.Adds))}
	for _, a := range cs.Adds {
		s.files[a.id()] = a
	}
	return s
}

// stateFromSnapshot starts from a built snapshot (whose AddFiles are
// shared, never modified).
func stateFromSnapshot(snap *Snapshot) *state {
	s := &state{version: snap.Version, protocol: snap.protocol, metadata: snap.metadata,
		protocolFrom: snap.protocolFrom, metadataFrom: snap.metadataFrom,
		files: make(map[fileID]*AddFile, len(snap.Files))}
	for _, a := range snap.Files {
		s.files[a.id()] = a
	}
	return s
}

// apply applies the actions of commit file key at version v.
func (s *state) apply(a *actions, key string, v int64) {
	if a.Protocol != nil {
		s.protocol, s.protocolFrom = a.Protocol, key
	}
	if a.Metadata != nil {
		s.metadata, s.metadataFrom = a.Metadata, key
	}
	for _, op := range a.Ops {
		if op.Add != nil {
			s.files[op.ID] = op.Add
		} else {
			delete(s.files, op.ID)
		}
	}
	s.version = v
}

// applyCompaction applies a log compaction file covering commits up to
// version end: the first action seen for each key (and the first protocol
// and metaData) wins.
func (s *state) applyCompaction(a *actions, key string, end int64) {
	if a.Protocol != nil {
		s.protocol, s.protocolFrom = a.Protocol, key
	}
	if a.Metadata != nil {
		s.metadata, s.metadataFrom = a.Metadata, key
	}
	seen := make(map[fileID]bool, len(a.Ops))
	for _, op := range a.Ops {
		if seen[op.ID] {
			continue
		}
		seen[op.ID] = true
		if op.Add != nil {
			s.files[op.ID] = op.Add
		} else {
			delete(s.files, op.ID)
		}
	}
	s.version = end
}

// sortedFiles returns the live files sorted by path (then DV id).
func (s *state) sortedFiles() []*AddFile {
	out := make([]*AddFile, 0, len(s.files))
	for _, a := range s.files {
		out = append(out, a)
	}
	slices.SortFunc(out, compareFiles)
	return out
}

func compareFiles(a, b *AddFile) int {
	if c := cmp.Compare(a.Path, b.Path); c != 0 {
		return c
	}
	return cmp.Compare(a.DeletionVector.UniqueID(), b.DeletionVector.UniqueID())
}
