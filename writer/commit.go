package writer

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/google/uuid"

	"github.com/deltafs/deltafs/snapshot"
)

// commit is the content of one commit file, before it is encoded.
type commit struct {
	now         int64 // ms: commitInfo.timestamp, deletionTimestamp, createdTime
	mode        Mode
	readVersion int64 // -1 for none
	create      *snapshot.StructType
	engineInfo  string
	blind       bool
	removes     []*snapshot.AddFile
	adds        []dataFile
	cols        []column
}

// removeAction is the remove action as Spark writes it. snapshot.RemoveFile
// omits an empty partitionValues; this one always has it.
type removeAction struct {
	Path                 string                   `json:"path"`
	DeletionTimestamp    int64                    `json:"deletionTimestamp"`
	DataChange           bool                     `json:"dataChange"`
	ExtendedFileMetadata bool                     `json:"extendedFileMetadata"`
	PartitionValues      map[string]*string       `json:"partitionValues"`
	Size                 int64                    `json:"size"`
	DeletionVector       *snapshot.DeletionVector `json:"deletionVector,omitempty"`
}

// encode returns the commit file: commitInfo first, then protocol and
// metaData for a new table, removes, adds; one JSON action per line.
func (c *commit) encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf) // one value per line
	enc.SetEscapeHTML(false)

	op := "WRITE"
	if c.create != nil {
		op = "CREATE TABLE"
	}
	modeParam := "Append"
	if c.mode == ModeOverwrite {
		modeParam = "Overwrite"
	}
	var rows, bytes_ int64
	for _, f := range c.adds {
		rows += f.rows
		bytes_ += f.size
	}
	metrics := map[string]any{
		"numFiles":       strconv.Itoa(len(c.adds)),
		"numOutputRows":  strconv.FormatInt(rows, 10),
		"numOutputBytes": strconv.FormatInt(bytes_, 10),
	}
	if c.mode == ModeOverwrite {
		metrics["numRemovedFiles"] = strconv.Itoa(len(c.removes))
	}
	ci := &snapshot.CommitInfo{
		Timestamp:           c.now,
		Operation:           op,
		OperationParameters: map[string]any{"mode": modeParam, "partitionBy": "[]"},
		EngineInfo:          c.engineInfo,
		IsBlindAppend:       &c.blind,
		OperationMetrics:    metrics,
	}
	if c.readVersion >= 0 {
		rv := c.readVersion
		ci.ReadVersion = &rv
	}
	if err := enc.Encode(snapshot.Action{CommitInfo: ci}); err != nil {
		return nil, err
	}
	if c.create != nil {
		schema, err := json.Marshal(c.create)
		if err != nil {
			return nil, err
		}
		created := c.now
		actions := []snapshot.Action{
			{Protocol: &snapshot.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}},
			{MetaData: &snapshot.Metadata{
				ID:               uuid.NewString(),
				Format:           snapshot.Format{Provider: "parquet", Options: map[string]string{}},
				SchemaString:     string(schema),
				PartitionColumns: []string{},
				Configuration:    map[string]string{},
				CreatedTime:      &created,
			}},
		}
		for _, a := range actions {
			if err := enc.Encode(a); err != nil {
				return nil, err
			}
		}
	}
	for _, f := range c.removes {
		pv := f.PartitionValues
		if pv == nil {
			pv = map[string]*string{}
		}
		r := removeAction{Path: f.Path, DeletionTimestamp: c.now, DataChange: true, ExtendedFileMetadata: true,
			PartitionValues: pv, Size: f.Size, DeletionVector: f.DeletionVector}
		if err := enc.Encode(map[string]any{"remove": r}); err != nil {
			return nil, err
		}
	}
	for _, f := range c.adds {
		add := &snapshot.AddFile{
			Path:             f.key,
			PartitionValues:  map[string]*string{},
			Size:             f.size,
			ModificationTime: f.modTime,
			DataChange:       true,
			Stats:            statsJSON(c.cols, f.stats, f.rows),
		}
		if err := enc.Encode(snapshot.Action{Add: add}); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}
