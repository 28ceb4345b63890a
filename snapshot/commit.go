package snapshot

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Parsing JSON log files: commits (n.json), log compactions and JSON V2
// checkpoints. Each non-empty line is one action; lines of unknown action
// types are checked to be JSON and otherwise ignored, as the protocol asks.

// fileID is the primary key of a logical file: its path as written in the
// log and the unique id of its deletion vector ("" for none).
type fileID struct {
	Path string
	DV   string
}

// ID is the file's primary key.
func (a *AddFile) id() fileID { return fileID{a.Path, a.DeletionVector.UniqueID()} }

// fileOp is one add (Add set) or remove (Add nil) of a logical file, in
// log order.
type fileOp struct {
	ID  fileID
	Add *AddFile
}

// actions are the actions of one JSON log file that log replay uses.
type actions struct {
	Protocol       *Protocol
	Metadata       *Metadata
	CommitInfo     *CommitInfo
	CheckpointMeta *CheckpointMeta
	Ops            []fileOp
	Sidecars       []*Sidecar
	Lines          int // non-empty lines

	protocols, metadatas int // protocol and metaData actions (checkpoints must have one each)
}

// lineAction is the subset of Action decoded from a line: fields of other
// actions (txn, cdc, domainMetadata...) are skipped by the decoder.
type lineAction struct {
	Protocol       *Protocol       `json:"protocol"`
	MetaData       *Metadata       `json:"metaData"`
	Add            *AddFile        `json:"add"`
	Remove         *RemoveFile     `json:"remove"`
	CommitInfo     *CommitInfo     `json:"commitInfo"`
	CheckpointMeta *CheckpointMeta `json:"checkpointMetadata"`
	Sidecar        *Sidecar        `json:"sidecar"`
}

// parseActions parses a JSON log file. Errors name the line.
func parseActions(data []byte) (*actions, error) {
	out := &actions{}
	line := 0
	for len(data) > 0 {
		var l []byte
		l, data, _ = bytes.Cut(data, []byte{'\n'})
		line++
		l = bytes.TrimSpace(l)
		if len(l) == 0 {
			continue
		}
		out.Lines++
		if l[0] != '{' {
			return nil, corruptf("line %d: not a JSON object", line)
		}
		var a lineAction
		if err := json.Unmarshal(l, &a); err != nil {
			return nil, corruptf("line %d: %v", line, err)
		}
		if err := out.addLine(&a); err != nil {
			return nil, corruptf("line %d: %v", line, err)
		}
	}
	return out, nil
}

func (out *actions) addLine(a *lineAction) error {
	if a.Protocol != nil {
		out.Protocol = a.Protocol
		out.protocols++
	}
	if a.MetaData != nil {
		out.Metadata = a.MetaData
		out.metadatas++
	}
	if a.CommitInfo != nil {
		out.CommitInfo = a.CommitInfo
	}
	if a.CheckpointMeta != nil {
		out.CheckpointMeta = a.CheckpointMeta
	}
	if a.Sidecar != nil {
		if a.Sidecar.Path == "" {
			return fmt.Errorf("sidecar action without a path")
		}
		out.Sidecars = append(out.Sidecars, a.Sidecar)
	}
	if a.Add != nil {
		if err := finishAdd(a.Add); err != nil {
			return err
		}
		out.Ops = append(out.Ops, fileOp{ID: a.Add.id(), Add: a.Add})
	}
	if a.Remove != nil {
		if a.Remove.Path == "" {
			return fmt.Errorf("remove action without a path")
		}
		if err := checkDV(a.Remove.DeletionVector); err != nil {
			return fmt.Errorf("remove %s: %w", a.Remove.Path, err)
		}
		out.Ops = append(out.Ops, fileOp{ID: fileID{a.Remove.Path, a.Remove.DeletionVector.UniqueID()}})
	}
	return nil
}

// finishAdd validates an add action and fills its derived fields.
func finishAdd(a *AddFile) error {
	if a.Path == "" {
		return fmt.Errorf("add action without a path")
	}
	if a.Size < 0 {
		return fmt.Errorf("add %s: negative size %d", a.Path, a.Size)
	}
	if err := checkDV(a.DeletionVector); err != nil {
		return fmt.Errorf("add %s: %w", a.Path, err)
	}
	a.NumRecords = numRecordsFromStats(a.Stats)
	if a.DeletionVector != nil && a.NumRecords >= 0 && a.DeletionVector.Cardinality > a.NumRecords {
		return fmt.Errorf("add %s: deletion vector removes %d rows of a file of %d", a.Path, a.DeletionVector.Cardinality, a.NumRecords)
	}
	return nil
}

// checkDV validates a deletion vector descriptor (nil is fine).
func checkDV(dv *DeletionVector) error {
	if dv == nil {
		return nil
	}
	switch dv.StorageType {
	case "u", "p", "i":
	default:
		return fmt.Errorf("deletion vector: unknown storage type %q", dv.StorageType)
	}
	if dv.PathOrInlineDv == "" {
		return fmt.Errorf("deletion vector: empty pathOrInlineDv")
	}
	if dv.Cardinality < 0 || dv.SizeInBytes < 0 || (dv.Offset != nil && *dv.Offset < 0) {
		return fmt.Errorf("deletion vector: negative cardinality, size or offset")
	}
	return nil
}

// numRecordsFromStats is the numRecords of an add's JSON statistics, or -1.
func numRecordsFromStats(stats string) int64 {
	if stats == "" {
		return -1
	}
	// Fast path: Spark, Databricks and delta-rs all write numRecords first.
	const prefix = `{"numRecords":`
	if len(stats) > len(prefix) && stats[:len(prefix)] == prefix {
		var n int64
		i := len(prefix)
		start := i
		for i < len(stats) && stats[i] >= '0' && stats[i] <= '9' && i-start < 18 {
			n = n*10 + int64(stats[i]-'0')
			i++
		}
		if i > start && i < len(stats) && (stats[i] == ',' || stats[i] == '}') {
			return n
		}
	}
	var s struct {
		NumRecords *int64 `json:"numRecords"`
	}
	if err := json.Unmarshal([]byte(stats), &s); err != nil || s.NumRecords == nil || *s.NumRecords < 0 {
		return -1
	}
	return *s.NumRecords
}
