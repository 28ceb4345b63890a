package snapshot

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/deltafs/deltafs/storage"
)

// Reading checkpoints: a classic single file, every part of a multi-part
// checkpoint, or a V2 checkpoint (UUID-named JSON or Parquet, or V2 content
// under a classic name) with the sidecars it lists in _delta_log/_sidecars.
// A checkpoint is the reconciled state of its version, so only its add
// actions matter to a reader: remove actions in it are tombstones for
// VACUUM and never cancel an add of the same checkpoint.

// checkpointState is what a checkpoint says about its version.
type checkpointState struct {
	Version  int64
	Protocol *Protocol
	Metadata *Metadata
	Adds     []*AddFile
	V2       bool // it had a checkpointMetadata action

	// What the cross-checks compare (crosscheck.go).
	Actions   int64 // actions in every file of it, sidecars included
	Protocols int   // protocol actions (a reconciled state has one)
	Metadatas int   // metaData actions (likewise)
}

// ckptPart is what one checkpoint file (or sidecar) holds.
type ckptPart struct {
	protocol *Protocol
	metadata *Metadata
	meta     *CheckpointMeta
	adds     []*AddFile
	sidecars []*Sidecar
	// stats_parsed: the file's layout of it, and the adds whose Stats
	// were rendered from it (statsparsed.go), checked against the
	// schema once the checkpoint's metaData is known.
	parsed     *parsedLayout
	parsedAdds []*AddFile
	actions    int64 // rows (Parquet) or non-empty lines (JSON)
	protocols  int
	metadatas  int
	size       int64 // bytes of the file
}

// readCheckpoint reads every file of c, then the sidecars they list.
// Errors name the file at fault.
func readCheckpoint(ctx context.Context, st storage.Storage, c checkpointRef) (*checkpointState, string, error) {
	parts := make([]*ckptPart, len(c.Files))
	failed := make([]string, len(c.Files))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i, f := range c.Files {
		g.Go(func() error {
			p, err := readCheckpointFile(gctx, st, f.Key, f.Size, f.JSON)
			if err != nil {
				failed[i] = f.Key
				return err
			}
			parts[i] = p
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, firstNonEmpty(failed), err
	}
	cs := &checkpointState{Version: c.Version}
	var sidecars []*Sidecar
	for _, p := range parts {
		if p.protocol != nil {
			cs.Protocol = p.protocol
		}
		if p.metadata != nil {
			cs.Metadata = p.metadata
		}
		cs.Actions += p.actions
		cs.Protocols += p.protocols
		cs.Metadatas += p.metadatas
		if p.meta != nil {
			cs.V2 = true
			if p.meta.Version != c.Version {
				return nil, c.Files[0].Key, corruptf("checkpointMetadata says version %d", p.meta.Version)
			}
		}
		cs.Adds = append(cs.Adds, p.adds...)
		sidecars = append(sidecars, p.sidecars...)
	}
	done := parts
	if len(sidecars) > 0 {
		keys := make([]string, len(sidecars))
		for i, sc := range sidecars {
			k, err := sidecarKey(sc.Path)
			if err != nil {
				return nil, c.Files[0].Key, corruptf("sidecar %q: %v", sc.Path, err)
			}
			keys[i] = k
		}
		var mu sync.Mutex
		failedKey := ""
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(4)
		for i, sc := range sidecars {
			g.Go(func() error {
				// The sidecar's size comes from its object, not from the
				// action (which sizes nothing it has not checked).
				p, err := readCheckpointFile(gctx, st, keys[i], -1, false)
				if err == nil && sc.SizeInBytes > 0 && sc.SizeInBytes != p.size {
					err = corruptf("sidecar is %d bytes, %s says %d", p.size, c.Files[0].Key, sc.SizeInBytes)
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					if failedKey == "" {
						failedKey = keys[i]
					}
					return fmt.Errorf("%w (a sidecar of %s)", err, c.Files[0].Key)
				}
				cs.Adds = append(cs.Adds, p.adds...)
				cs.Actions += p.actions
				done = append(done, p)
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return nil, failedKey, err
		}
	}
	if cs.Protocol == nil {
		return nil, c.Files[0].Key, corruptf("checkpoint has no protocol action")
	}
	if cs.Metadata == nil {
		return nil, c.Files[0].Key, corruptf("checkpoint has no metaData action")
	}
	dropMismatchedStats(cs.Metadata, done)
	return cs, "", nil
}

// dropMismatchedStats takes back the statistics rendered from a file's
// stats_parsed when its layout disagrees with the checkpoint's schema:
// those files are then not skipped (their numRecords stays).
func dropMismatchedStats(m *Metadata, parts []*ckptPart) {
	var schema *StructType
	parsedSchema := false
	for _, p := range parts {
		if len(p.parsedAdds) == 0 {
			continue
		}
		if !parsedSchema {
			schema, _ = ParseSchema(m.SchemaString)
			parsedSchema = true
		}
		if !checkParsedStats(p.parsed, schema) {
			for _, a := range p.parsedAdds {
				a.Stats, a.statsRendered = "", false
			}
		}
		p.parsedAdds = nil
	}
}

func firstNonEmpty(s []string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// sidecarKey resolves a sidecar action's path: a file name (or relative
// path) in _delta_log/_sidecars/, URL-encoded.
func sidecarKey(p string) (string, error) {
	if strings.Contains(p, "://") || strings.HasPrefix(p, "/") {
		// An absolute URI: only its name is used; sidecars always live
		// in the table's own _delta_log/_sidecars.
		if i := strings.LastIndex(p, "/_delta_log/_sidecars/"); i >= 0 {
			p = p[i+len("/_delta_log/_sidecars/"):]
		} else {
			return "", fmt.Errorf("not in _delta_log/_sidecars")
		}
	}
	dec, err := url.PathUnescape(p)
	if err != nil {
		return "", err
	}
	if dec == "" || strings.HasPrefix(dec, "/") || strings.Contains("/"+dec+"/", "/../") {
		return "", fmt.Errorf("bad sidecar path")
	}
	return sidecarDir + dec, nil
}

// readCheckpointFile reads one checkpoint file or sidecar.
func readCheckpointFile(ctx context.Context, st storage.Storage, key string, size int64, isJSON bool) (*ckptPart, error) {
	if isJSON {
		data, err := readAllSized(ctx, st, key, size)
		if err != nil {
			return nil, err
		}
		a, err := parseActions(data)
		if err != nil {
			return nil, err
		}
		p := &ckptPart{protocol: a.Protocol, metadata: a.Metadata, meta: a.CheckpointMeta, sidecars: a.Sidecars,
			actions: int64(a.Lines), protocols: a.protocols, metadatas: a.metadatas, size: int64(len(data))}
		for _, op := range a.Ops {
			if op.Add != nil {
				p.adds = append(p.adds, op.Add)
			}
		}
		return p, nil
	}
	pf, err := openParquet(ctx, st, key, size)
	if err != nil {
		return nil, err
	}
	p, err := readParquetCheckpoint(pf)
	if err != nil {
		return nil, err
	}
	p.size = pf.size
	return p, nil
}

// readAllSized reads a whole object whose size is known from a listing
// (size < 0: unknown, stat it).
func readAllSized(ctx context.Context, st storage.Storage, key string, size int64) ([]byte, error) {
	var data []byte
	var err error
	if size < 0 {
		data, err = storage.ReadAll(ctx, st, key)
	} else {
		data, err = storage.ReadRange(ctx, st, key, 0, size)
	}
	if err != nil {
		return nil, storageCause(err)
	}
	return data, nil
}

// readParquetCheckpoint decodes the actions of a Parquet checkpoint file.
func readParquetCheckpoint(pf *pqFile) (p *ckptPart, err error) {
	defer recoverParquet(&err)
	p = &ckptPart{}
	for i, rg := range pf.rowGroups() {
		g := &groupReader{p: pf, rg: rg, idx: i}
		if rows := rg.NumRows(); rows < 0 || rows > pf.size {
			return nil, corruptf("parquet row group of %d rows in a %d-byte file", rows, pf.size)
		}
		n := int(rg.NumRows())
		p.actions += int64(n)
		if err := readAdds(g, n, p); err != nil {
			return nil, err
		}
		readProtocol(g, n, p)
		readMetadata(g, n, p)
		readCheckpointMeta(g, n, p)
		readSidecars(g, n, p)
		if g.err != nil {
			return nil, g.err
		}
	}
	return p, nil
}

func readAdds(g *groupReader, n int, p *ckptPart) error {
	path, defs := g.column("add", "path")
	if path == nil {
		return nil
	}
	addDef := defs[0]
	size, _ := g.column("add", "size")
	mtime, _ := g.column("add", "modificationTime")
	dataChange, _ := g.column("add", "dataChange")
	stats, _ := g.column("add", "stats")
	pv := g.mapColumns("add", "partitionValues")
	tags := g.mapColumns("add", "tags")
	dvType, dvDefs := g.column("add", "deletionVector", "storageType")
	dvPath, _ := g.column("add", "deletionVector", "pathOrInlineDv")
	dvOffset, _ := g.column("add", "deletionVector", "offset")
	dvSize, _ := g.column("add", "deletionVector", "sizeInBytes")
	dvCard, _ := g.column("add", "deletionVector", "cardinality")
	dvMax, _ := g.column("add", "deletionVector", "maxRowIndex")
	baseRowID, _ := g.column("add", "baseRowId")
	defRowCommit, _ := g.column("add", "defaultRowCommitVersion")
	clustering, _ := g.column("add", "clusteringProvider")
	parsed, layout := readStatsParsed(g)
	if g.err != nil {
		return g.err
	}
	for r := 0; r < n; r++ {
		if !path.defined(r, addDef) {
			continue
		}
		pathV, ok := path.value(r)
		if !ok || pathV.s == "" {
			return corruptf("row %d: add action without a path", r)
		}
		a := &AddFile{Path: pathV.s, PartitionValues: pv.stringMap(r), Tags: tags.plainMap(r)}
		if v, ok := size.value(r); ok {
			a.Size = v.i
		}
		if v, ok := mtime.value(r); ok {
			a.ModificationTime = v.i
		}
		if v, ok := dataChange.value(r); ok {
			a.DataChange = v.i != 0
		}
		if v, ok := stats.value(r); ok {
			a.Stats = v.s
		}
		fromParsed := false
		if a.Stats == "" {
			a.Stats = parsed.render(r)
			fromParsed = a.Stats != ""
			a.statsRendered = fromParsed
		}
		if v, ok := baseRowID.value(r); ok {
			a.BaseRowID = &v.i
		}
		if v, ok := defRowCommit.value(r); ok {
			a.DefaultRowCommit = &v.i
		}
		if v, ok := clustering.value(r); ok {
			a.ClusteringProvider = v.s
		}
		if a.PartitionValues == nil {
			a.PartitionValues = map[string]*string{}
		}
		// The deletion vector is present when its group is defined, not
		// when some field happens to be non-zero.
		if dvType != nil && len(dvDefs) >= 2 && dvType.defined(r, dvDefs[1]) {
			dv := &DeletionVector{}
			if v, ok := dvType.value(r); ok {
				dv.StorageType = v.s
			}
			if v, ok := dvPath.value(r); ok {
				dv.PathOrInlineDv = v.s
			}
			if v, ok := dvOffset.value(r); ok {
				o := int32(v.i)
				dv.Offset = &o
			}
			if v, ok := dvSize.value(r); ok {
				dv.SizeInBytes = int32(v.i)
			}
			if v, ok := dvCard.value(r); ok {
				dv.Cardinality = v.i
			}
			if v, ok := dvMax.value(r); ok {
				m := v.i
				dv.MaxRowIndex = &m
			}
			a.DeletionVector = dv
		}
		if err := finishAdd(a); err != nil {
			return corruptf("row %d: %v", r, err)
		}
		if a.NumRecords < 0 && !fromParsed && parsed != nil {
			// JSON statistics without numRecords beside stats_parsed.
			if v, ok := parsed.num.value(r); ok && v.i >= 0 {
				a.NumRecords = v.i
				if a.DeletionVector != nil && a.DeletionVector.Cardinality > a.NumRecords {
					return corruptf("row %d: add %s: deletion vector removes %d rows of a file of %d", r, a.Path, a.DeletionVector.Cardinality, a.NumRecords)
				}
			}
		}
		if fromParsed {
			p.parsedAdds = append(p.parsedAdds, a)
			p.parsed = layout
		}
		p.adds = append(p.adds, a)
	}
	return nil
}

func readProtocol(g *groupReader, n int, p *ckptPart) {
	rv, defs := g.column("protocol", "minReaderVersion")
	if rv == nil {
		return
	}
	wv, _ := g.column("protocol", "minWriterVersion")
	rf := g.listColumns("protocol", "readerFeatures")
	wf := g.listColumns("protocol", "writerFeatures")
	for r := 0; r < n; r++ {
		if !rv.defined(r, defs[0]) {
			continue
		}
		pr := &Protocol{}
		if v, ok := rv.value(r); ok {
			pr.MinReaderVersion = int(v.i)
		}
		if v, ok := wv.value(r); ok {
			pr.MinWriterVersion = int(v.i)
		}
		pr.ReaderFeatures = rf.strings(r)
		pr.WriterFeatures = wf.strings(r)
		if pr.ReaderFeatures == nil && rf.elem != nil && rf.elem.defined(r, rf.entryDef-1) {
			pr.ReaderFeatures = []string{} // an empty list, not an absent one
		}
		p.protocol = pr
		p.protocols++
	}
}

func readMetadata(g *groupReader, n int, p *ckptPart) {
	id, defs := g.column("metaData", "id")
	schema, sdefs := g.column("metaData", "schemaString")
	present, pdef := id, defs
	if present == nil {
		present, pdef = schema, sdefs
	}
	if present == nil {
		return
	}
	name, _ := g.column("metaData", "name")
	desc, _ := g.column("metaData", "description")
	provider, _ := g.column("metaData", "format", "provider")
	options := g.mapColumns("metaData", "format", "options")
	partCols := g.listColumns("metaData", "partitionColumns")
	conf := g.mapColumns("metaData", "configuration")
	created, _ := g.column("metaData", "createdTime")
	for r := 0; r < n; r++ {
		if !present.defined(r, pdef[0]) {
			continue
		}
		m := &Metadata{}
		if v, ok := id.value(r); ok {
			m.ID = v.s
		}
		if v, ok := schema.value(r); ok {
			m.SchemaString = v.s
		}
		if v, ok := name.value(r); ok {
			m.Name = v.s
		}
		if v, ok := desc.value(r); ok {
			m.Description = v.s
		}
		if v, ok := provider.value(r); ok {
			m.Format.Provider = v.s
		}
		m.Format.Options = options.plainMap(r)
		m.PartitionColumns = partCols.strings(r)
		if m.PartitionColumns == nil {
			m.PartitionColumns = []string{}
		}
		m.Configuration = conf.plainMap(r)
		if v, ok := created.value(r); ok {
			c := v.i
			m.CreatedTime = &c
		}
		p.metadata = m
		p.metadatas++
	}
}

func readCheckpointMeta(g *groupReader, n int, p *ckptPart) {
	ver, defs := g.column("checkpointMetadata", "version")
	if ver == nil {
		return
	}
	tags := g.mapColumns("checkpointMetadata", "tags")
	for r := 0; r < n; r++ {
		if !ver.defined(r, defs[0]) {
			continue
		}
		m := &CheckpointMeta{Tags: tags.plainMap(r)}
		if v, ok := ver.value(r); ok {
			m.Version = v.i
		}
		p.meta = m
	}
}

func readSidecars(g *groupReader, n int, p *ckptPart) {
	path, defs := g.column("sidecar", "path")
	if path == nil {
		return
	}
	size, _ := g.column("sidecar", "sizeInBytes")
	mtime, _ := g.column("sidecar", "modificationTime")
	tags := g.mapColumns("sidecar", "tags")
	for r := 0; r < n; r++ {
		if !path.defined(r, defs[0]) {
			continue
		}
		sc := &Sidecar{Tags: tags.plainMap(r)}
		if v, ok := path.value(r); ok {
			sc.Path = v.s
		}
		if v, ok := size.value(r); ok {
			sc.SizeInBytes = v.i
		}
		if v, ok := mtime.value(r); ok {
			sc.ModificationTime = v.i
		}
		if sc.Path == "" {
			if g.err == nil {
				g.err = corruptf("row %d: sidecar action without a path", r)
			}
			continue
		}
		p.sidecars = append(p.sidecars, sc)
	}
}
