package sharing

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The parquet response format (PROTOCOL.md, API Response Actions in
// Parquet Format): the protocol's default, and the only format of a
// server that ignores the delta-sharing-capabilities header. A server may
// answer either format to any request, so the format is read from each
// answer's protocol line ({"minReaderVersion": 1} in parquet,
// {"deltaProtocol": ...} in delta), and the parquet actions are turned
// into the delta ones the rest of the package reads: the protocol into a
// Delta protocol (1, 2), the metaData into a Delta metaData, and each file
// into an add action whose path is its url. The format cannot express
// deletion vectors or column mapping (a server must answer in delta for
// such tables): a parquet answer for a table that has them is refused by
// name, as its rows would be read wrong.

// parquetReaderVersion is the parquet format's protocol version deltafs reads.
const parquetReaderVersion = 1

// responseFormat is the format of one answer, set by its protocol line.
type responseFormat int

const (
	formatUnknown responseFormat = iota
	formatDelta
	formatParquet
)

func (f responseFormat) String() string {
	if f == formatParquet {
		return "parquet"
	}
	return "delta"
}

// parquetProtocol is the Delta protocol of a table served in the parquet
// format: the format shares no table features, and tables that need the
// ones that change what a reader reads are not served in it.
func parquetProtocol(minReaderVersion *int64) (json.RawMessage, error) {
	if minReaderVersion == nil {
		return nil, errors.New("protocol without minReaderVersion")
	}
	if *minReaderVersion != parquetReaderVersion {
		return nil, fmt.Errorf("the server's parquet-format protocol is version %d: this deltafs reads version %d: upgrade deltafs", *minReaderVersion, parquetReaderVersion)
	}
	return json.RawMessage(`{"minReaderVersion":1,"minWriterVersion":2}`), nil
}

// parquetMetadata is the Delta metaData of a parquet-format metaData line.
func parquetMetadata(m *metaDataLine) (json.RawMessage, error) {
	switch {
	case m.ID == nil || *m.ID == "":
		return nil, errors.New("metaData without an id")
	case m.Format == nil || m.Format.Provider == nil:
		return nil, errors.New("metaData without a format")
	case !strings.EqualFold(*m.Format.Provider, "parquet"):
		return nil, fmt.Errorf("metaData format %s: deltafs reads parquet", shortQuote(*m.Format.Provider))
	case m.SchemaString == nil || *m.SchemaString == "":
		return nil, errors.New("metaData without a schemaString")
	case m.PartitionColumns == nil:
		return nil, errors.New("metaData without partitionColumns")
	}
	var schema struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal([]byte(*m.SchemaString), &schema); err != nil || schema.Type != "struct" {
		return nil, errors.New("metaData's schemaString is not a struct schema")
	}
	for k, v := range m.Configuration {
		switch strings.ToLower(k) {
		case "delta.columnmapping.mode":
			if !strings.EqualFold(v, "none") {
				return nil, fmt.Errorf("the table uses column mapping (mode %s), which the parquet response format cannot express: the server must answer in the delta format", shortQuote(v))
			}
		case "delta.enabledeletionvectors":
			if strings.EqualFold(v, "true") {
				return nil, errors.New("the table uses deletion vectors, which the parquet response format cannot express: the server must answer in the delta format")
			}
		}
	}
	md := map[string]any{
		"id":               *m.ID,
		"format":           map[string]any{"provider": "parquet", "options": map[string]string{}},
		"schemaString":     *m.SchemaString,
		"partitionColumns": m.PartitionColumns,
		"configuration":    m.Configuration,
	}
	if m.Configuration == nil {
		md["configuration"] = map[string]string{}
	}
	if m.Name != nil {
		md["name"] = *m.Name
	}
	if m.Description != nil {
		md["description"] = *m.Description
	}
	return mustJSON(md), nil
}

// fromParquet fills f's deltaSingleAction from its parquet-format fields:
// an add whose path is the url.
func (f *File) fromParquet() error {
	switch {
	case len(f.DeltaSingleAction) != 0:
		return errors.New("a delta-format file in a parquet-format answer")
	case f.URL == nil || *f.URL == "":
		return errors.New("a file without a url")
	case f.Size == nil:
		return errors.New("a file without a size")
	case !isObject(f.PartitionValues):
		return errors.New("a file without partitionValues")
	}
	add := map[string]any{"path": *f.URL, "size": *f.Size, "partitionValues": f.PartitionValues, "dataChange": true, "modificationTime": int64(0)}
	if f.Timestamp != nil {
		add["modificationTime"] = *f.Timestamp
	}
	if f.Stats != nil {
		add["stats"] = *f.Stats
	}
	f.DeltaSingleAction = mustJSON(map[string]any{"add": add})
	return nil
}
