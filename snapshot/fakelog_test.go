package snapshot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/storage/storagetest"
)

// fakeLog fabricates Delta logs in a storagetest.Mem: commits, JSON V2 and
// Parquet classic checkpoints, _last_checkpoint. Version v is committed at
// t0 + v seconds (file modification time).

type fakeLog struct {
	t  testing.TB
	st *storagetest.Mem
	t0 time.Time
	// live is the replayed state after each commit (for checkpoints).
	live     map[string]*AddFile
	protocol Protocol
	metadata Metadata
}

func newFakeLog(t testing.TB) *fakeLog {
	return &fakeLog{t: t, st: storagetest.NewMem(), t0: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), live: map[string]*AddFile{}}
}

const fakeSchema = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"part","type":"string","nullable":true,"metadata":{}}]}`

func (f *fakeLog) at(v int64) time.Time { return f.t0.Add(time.Duration(v) * time.Second) }

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// commit writes version v: commitInfo, then the given actions.
func (f *fakeLog) commit(v int64, acts ...Action) {
	var buf bytes.Buffer
	buf.WriteString(mustJSON(Action{CommitInfo: &CommitInfo{Timestamp: f.at(v).UnixMilli(), Operation: fmt.Sprintf("OP%d", v)}}))
	buf.WriteByte('\n')
	for _, a := range acts {
		buf.WriteString(mustJSON(a))
		buf.WriteByte('\n')
		switch {
		case a.Protocol != nil:
			f.protocol = *a.Protocol
		case a.MetaData != nil:
			f.metadata = *a.MetaData
		case a.Add != nil:
			f.live[a.Add.Path] = a.Add
		case a.Remove != nil:
			delete(f.live, a.Remove.Path)
		}
	}
	f.st.Set(commitKey(v), buf.Bytes(), f.at(v))
}

func protocolAction(r, w int, features ...string) Action {
	p := &Protocol{MinReaderVersion: r, MinWriterVersion: w}
	if r == 3 {
		p.ReaderFeatures = append([]string{}, features...)
	}
	return Action{Protocol: p}
}

func metadataAction(conf map[string]string) Action {
	return Action{MetaData: &Metadata{ID: "fake-id", Format: Format{Provider: "parquet"}, SchemaString: fakeSchema,
		PartitionColumns: []string{"part"}, Configuration: conf}}
}

func addAction(path string, rows int64) Action {
	p := "p" + path[len(path)-1:]
	return Action{Add: &AddFile{Path: path, Size: 100 + rows, ModificationTime: 1, DataChange: true,
		PartitionValues: map[string]*string{"part": &p}, Stats: fmt.Sprintf(`{"numRecords":%d}`, rows)}}
}

func removeAction(path string) Action {
	return Action{Remove: &RemoveFile{Path: path, DataChange: true}}
}

// create writes version 0: protocol, metadata.
func (f *fakeLog) create(conf map[string]string) {
	f.commit(0, protocolAction(1, 2), metadataAction(conf))
}

// simple writes versions 0..n: create, then one add per version (file
// "f<v>" with v rows), every third version also removing the file of the
// version before.
func (f *fakeLog) simple(n int64) { f.simpleWith(n, nil) }

// simpleWith is simple, calling after(v) once version v is written (to
// write a checkpoint of it, say).
func (f *fakeLog) simpleWith(n int64, after func(v int64)) {
	f.create(nil)
	if after != nil {
		after(0)
	}
	for v := int64(1); v <= n; v++ {
		acts := []Action{addAction(fmt.Sprintf("f%d", v), v)}
		if v%3 == 0 {
			acts = append(acts, removeAction(fmt.Sprintf("f%d", v-1)))
		}
		f.commit(v, acts...)
		if after != nil {
			after(v)
		}
	}
}

// liveAdds returns the current live files sorted by path.
func (f *fakeLog) liveAdds() []*AddFile {
	out := make([]*AddFile, 0, len(f.live))
	for _, a := range f.live {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// jsonCheckpoint writes a UUID-named JSON V2 checkpoint of the current
// state as version v.
func (f *fakeLog) jsonCheckpoint(v int64) string {
	var buf bytes.Buffer
	p, m := f.protocol, f.metadata
	for _, a := range []Action{{CheckpointMeta: &CheckpointMeta{Version: v}}, {Protocol: &p}, {MetaData: &m}} {
		buf.WriteString(mustJSON(a) + "\n")
	}
	for _, a := range f.liveAdds() {
		buf.WriteString(mustJSON(Action{Add: a}) + "\n")
	}
	key := fmt.Sprintf("%s%020d.checkpoint.%08d-0000-0000-0000-000000000000.json", logDir, v, v)
	f.st.Set(key, buf.Bytes(), f.at(v).Add(time.Millisecond))
	return key
}

// Parquet checkpoint rows, in the shape Spark writes them.
type ckptRow struct {
	Protocol *ckptProtocol `parquet:"protocol,optional"`
	MetaData *ckptMetadata `parquet:"metaData,optional"`
	Add      *ckptAdd      `parquet:"add,optional"`
	Remove   *ckptRemove   `parquet:"remove,optional"`
}

type ckptProtocol struct {
	MinReaderVersion int32    `parquet:"minReaderVersion,optional"`
	MinWriterVersion int32    `parquet:"minWriterVersion,optional"`
	ReaderFeatures   []string `parquet:"readerFeatures,optional,list"`
}

type ckptMetadata struct {
	ID               string            `parquet:"id,optional"`
	Format           ckptFormat        `parquet:"format,optional"`
	SchemaString     string            `parquet:"schemaString,optional"`
	PartitionColumns []string          `parquet:"partitionColumns,optional,list"`
	Configuration    map[string]string `parquet:"configuration,optional"`
}

type ckptFormat struct {
	Provider string `parquet:"provider,optional"`
}

type ckptAdd struct {
	Path             string            `parquet:"path,optional"`
	PartitionValues  map[string]string `parquet:"partitionValues,optional"`
	Size             int64             `parquet:"size,optional"`
	ModificationTime int64             `parquet:"modificationTime,optional"`
	DataChange       bool              `parquet:"dataChange,optional"`
	Stats            string            `parquet:"stats,optional"`
	DeletionVector   *ckptDV           `parquet:"deletionVector,optional"`
}

type ckptDV struct {
	StorageType    string `parquet:"storageType"`
	PathOrInlineDv string `parquet:"pathOrInlineDv"`
	Offset         *int32 `parquet:"offset,optional"`
	SizeInBytes    int32  `parquet:"sizeInBytes"`
	Cardinality    int64  `parquet:"cardinality"`
}

type ckptRemove struct {
	Path       string `parquet:"path,optional"`
	DataChange bool   `parquet:"dataChange,optional"`
}

// parquetCheckpoint writes a classic Parquet checkpoint of the current
// state as version v (with one remove tombstone, as real ones have).
func (f *fakeLog) parquetCheckpoint(v int64) string {
	rows := []ckptRow{
		{Protocol: &ckptProtocol{MinReaderVersion: int32(f.protocol.MinReaderVersion), MinWriterVersion: int32(f.protocol.MinWriterVersion), ReaderFeatures: f.protocol.ReaderFeatures}},
		{MetaData: &ckptMetadata{ID: f.metadata.ID, Format: ckptFormat{Provider: "parquet"}, SchemaString: f.metadata.SchemaString,
			PartitionColumns: f.metadata.PartitionColumns, Configuration: f.metadata.Configuration}},
		{Remove: &ckptRemove{Path: "tombstone"}},
	}
	for _, a := range f.liveAdds() {
		ca := &ckptAdd{Path: a.Path, Size: a.Size, ModificationTime: a.ModificationTime, Stats: a.Stats, PartitionValues: map[string]string{}}
		for k, val := range a.PartitionValues {
			if val != nil {
				ca.PartitionValues[k] = *val
			}
		}
		if dv := a.DeletionVector; dv != nil {
			ca.DeletionVector = &ckptDV{StorageType: dv.StorageType, PathOrInlineDv: dv.PathOrInlineDv, Offset: dv.Offset, SizeInBytes: dv.SizeInBytes, Cardinality: dv.Cardinality}
		}
		rows = append(rows, ckptRow{Add: ca})
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[ckptRow](&buf, parquet.Compression(&parquet.Snappy))
	if _, err := w.Write(rows); err != nil {
		f.t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		f.t.Fatal(err)
	}
	key := fmt.Sprintf("%s%020d.checkpoint.parquet", logDir, v)
	f.st.Set(key, buf.Bytes(), f.at(v).Add(time.Millisecond))
	return key
}

// lastCheckpoint writes a _last_checkpoint naming version v (no counts:
// crosscheck_test.go writes hints with counts).
func (f *fakeLog) lastCheckpoint(v int64) {
	f.st.Set(lastCheckpointKey, []byte(fmt.Sprintf(`{"version":%d}`, v)), time.Now())
}

func f0() time.Time { return time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC) }
