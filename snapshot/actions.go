package snapshot

import "encoding/json"

// The actions of a Delta log, as the protocol (PROTOCOL.md, "Actions") spells
// them in JSON. One line of a commit file holds exactly one of them. These
// types serve reading and writing alike: the writer marshals them as they are.

// Action is one line of a commit file. Exactly one field is set.
type Action struct {
	Protocol       *Protocol       `json:"protocol,omitempty"`
	MetaData       *Metadata       `json:"metaData,omitempty"`
	Add            *AddFile        `json:"add,omitempty"`
	Remove         *RemoveFile     `json:"remove,omitempty"`
	CommitInfo     *CommitInfo     `json:"commitInfo,omitempty"`
	Txn            *Txn            `json:"txn,omitempty"`
	CDC            json.RawMessage `json:"cdc,omitempty"`
	DomainMetadata json.RawMessage `json:"domainMetadata,omitempty"`
	CheckpointMeta *CheckpointMeta `json:"checkpointMetadata,omitempty"`
	Sidecar        *Sidecar        `json:"sidecar,omitempty"`
}

// Protocol is the protocol action.
type Protocol struct {
	MinReaderVersion int      `json:"minReaderVersion"`
	MinWriterVersion int      `json:"minWriterVersion"`
	ReaderFeatures   []string `json:"readerFeatures,omitempty"`
	WriterFeatures   []string `json:"writerFeatures,omitempty"`
}

// Format is the data file format of a metaData action.
type Format struct {
	Provider string            `json:"provider"`
	Options  map[string]string `json:"options,omitempty"`
}

// Metadata is the metaData action. SchemaString holds the JSON schema; use
// ParseSchema (or Snapshot.Schema) to read it.
type Metadata struct {
	ID               string            `json:"id"`
	Name             string            `json:"name,omitempty"`
	Description      string            `json:"description,omitempty"`
	Format           Format            `json:"format"`
	SchemaString     string            `json:"schemaString"`
	PartitionColumns []string          `json:"partitionColumns"`
	Configuration    map[string]string `json:"configuration,omitempty"`
	CreatedTime      *int64            `json:"createdTime,omitempty"`
}

// DeletionVector is a deletion vector descriptor (PROTOCOL.md, "Deletion
// Vectors").
type DeletionVector struct {
	StorageType    string `json:"storageType"` // "u", "p" or "i"
	PathOrInlineDv string `json:"pathOrInlineDv"`
	Offset         *int32 `json:"offset,omitempty"`
	SizeInBytes    int32  `json:"sizeInBytes"`
	Cardinality    int64  `json:"cardinality"`
	MaxRowIndex    *int64 `json:"maxRowIndex,omitempty"`
}

// UniqueID is the descriptor's unique id: storageType, path or inline data,
// and "@offset" when an offset is set. Add and remove actions are reconciled
// by (path, UniqueID).
func (dv *DeletionVector) UniqueID() string {
	if dv == nil {
		return ""
	}
	id := dv.StorageType + dv.PathOrInlineDv
	if dv.Offset != nil {
		id += "@" + itoa(int64(*dv.Offset))
	}
	return id
}

// AddFile is the add action: one data file of the table.
//
// PartitionValues are keyed by the partition column's physical name (which
// equals its logical name without column mapping); a nil value is a null.
type AddFile struct {
	Path               string             `json:"path"`
	PartitionValues    map[string]*string `json:"partitionValues"`
	Size               int64              `json:"size"`
	ModificationTime   int64              `json:"modificationTime"`
	DataChange         bool               `json:"dataChange"`
	statsRendered      bool               // Stats rendered from a checkpoint's stats_parsed (statsparsed.go)
	Stats              string             `json:"stats,omitempty"`
	Tags               map[string]string  `json:"tags,omitempty"`
	DeletionVector     *DeletionVector    `json:"deletionVector,omitempty"`
	BaseRowID          *int64             `json:"baseRowId,omitempty"`
	DefaultRowCommit   *int64             `json:"defaultRowCommitVersion,omitempty"`
	ClusteringProvider string             `json:"clusteringProvider,omitempty"`

	// NumRecords is the physical row count of the file from its statistics,
	// or -1 when the log does not say. Filled by log replay; not serialised.
	NumRecords int64 `json:"-"`
}

// LiveRows is NumRecords less the deletion vector's cardinality, or -1 when
// NumRecords is unknown.
func (a *AddFile) LiveRows() int64 {
	if a.NumRecords < 0 {
		return -1
	}
	if a.DeletionVector != nil {
		return a.NumRecords - a.DeletionVector.Cardinality
	}
	return a.NumRecords
}

// RemoveFile is the remove action.
type RemoveFile struct {
	Path                 string             `json:"path"`
	DeletionTimestamp    *int64             `json:"deletionTimestamp,omitempty"`
	DataChange           bool               `json:"dataChange"`
	ExtendedFileMetadata *bool              `json:"extendedFileMetadata,omitempty"`
	PartitionValues      map[string]*string `json:"partitionValues,omitempty"`
	Size                 *int64             `json:"size,omitempty"`
	DeletionVector       *DeletionVector    `json:"deletionVector,omitempty"`
}

// CommitInfo is the commitInfo action. Only the fields deltafs uses are
// typed; other fields are ignored.
type CommitInfo struct {
	Timestamp           int64          `json:"timestamp,omitempty"`
	InCommitTimestamp   *int64         `json:"inCommitTimestamp,omitempty"`
	Operation           string         `json:"operation,omitempty"`
	OperationParameters map[string]any `json:"operationParameters,omitempty"`
	EngineInfo          string         `json:"engineInfo,omitempty"`
	ClientVersion       string         `json:"clientVersion,omitempty"`
	IsBlindAppend       *bool          `json:"isBlindAppend,omitempty"`
	ReadVersion         *int64         `json:"readVersion,omitempty"`
	OperationMetrics    map[string]any `json:"operationMetrics,omitempty"`
}

// Engine is the writer as recorded: engineInfo, else clientVersion.
func (c *CommitInfo) Engine() string {
	if c == nil {
		return ""
	}
	if c.EngineInfo != "" {
		return c.EngineInfo
	}
	return c.ClientVersion
}

// Txn is the txn (transaction identifier) action.
type Txn struct {
	AppID       string `json:"appId"`
	Version     int64  `json:"version"`
	LastUpdated *int64 `json:"lastUpdated,omitempty"`
}

// CheckpointMeta is the checkpointMetadata action of a V2 checkpoint.
type CheckpointMeta struct {
	Version int64             `json:"version"`
	Tags    map[string]string `json:"tags,omitempty"`
}

// Sidecar is the sidecar action of a V2 checkpoint.
type Sidecar struct {
	Path             string            `json:"path"`
	SizeInBytes      int64             `json:"sizeInBytes"`
	ModificationTime int64             `json:"modificationTime"`
	Tags             map[string]string `json:"tags,omitempty"`
}

func itoa(v int64) string {
	b, _ := json.Marshal(v)
	return string(b)
}
