package unitytest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/writer"
)

// ManagedTable writes a table of versions versions under root with
// writer/ (two rows each, {id long, label string}; version 3 an
// overwrite) and returns it made catalog-managed (dir) and, for
// comparison, the same table without the feature (ref), both with
// in-commit timestamps one second apart from 2025-06-01 12:00 UTC.
func ManagedTable(t testing.TB, root string, versions int) (dir, ref string) {
	t.Helper()
	dir, ref = filepath.Join(root, "managed"), filepath.Join(root, "ref")
	st, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	schema := &snapshot.StructType{Fields: []snapshot.StructField{
		{Name: "id", Type: &snapshot.PrimitiveType{Name: "long"}},
		{Name: "label", Type: &snapshot.PrimitiveType{Name: "string"}},
	}}
	for v := 0; v < versions; v++ {
		rows := []writer.Row{{nil, fmt.Sprint("a", v)}, {nil, fmt.Sprint("b", v)}}
		opts := writer.Options{IDColumn: "id"}
		if v == 3 {
			opts.Mode = writer.ModeOverwrite
		}
		if _, err := writer.Write(context.Background(), st, schema, writer.SliceRows(rows), opts); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.CopyFS(ref, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	MakeCatalogManaged(t, dir, true, base)
	MakeCatalogManaged(t, ref, false, base)
	return dir, ref
}

// Catalog-managed tables: the Delta REST API's loadTable (GET
// /delta/v1/catalogs/{catalog}/schemas/{schema}/tables/{table}, shared/
// reference/unity-catalog/delta.yaml) answers a DeltaLoadTableResponse:
// metadata (with delta.feature.* properties derived from the protocol),
// the ratified unpublished commits newest first, latest-table-version.
// Errors are DeltaErrorResponse: {"error": {"message", "type", "code"}}.

// Commit is a ratified commit (delta.yaml, DeltaCommit).
type Commit struct {
	Version   int64
	Timestamp int64 // in-commit timestamp, ms
	FileName  string
	FileSize  int64
	ModTime   int64 // file-modification-timestamp, ms
}

// SetCommits makes the table catalog-managed with these ratified
// commits (any order; answered newest first, as given otherwise: hostile
// tests pass gaps and duplicates) and latest version (-1: omitted).
func (s *Server) SetCommits(fullName string, commits []Commit, latest int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tb := s.tables[strings.ToLower(fullName)]
	tb.managed, tb.commits, tb.latest = true, append([]Commit(nil), commits...), latest
}

// Drop removes the table from the catalog: every call about it answers
// 404 from now on.
func (s *Server) Drop(fullName string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tb := s.tables[strings.ToLower(fullName)]
	delete(s.tables, strings.ToLower(fullName))
	delete(s.byID, tb.id)
}

func (s *Server) loadTable(w http.ResponseWriter, r *http.Request, rest string) {
	if d := time.Duration(s.LoadDelay.Load()); d > 0 {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(d):
		}
	}
	switch st := int(s.LoadStatus.Load()); st {
	case 0:
	case http.StatusNotFound: // a catalog without the Delta REST API
		writeError(w, st, "NOT_FOUND", "No API found for '"+r.Method+" "+r.URL.Path+"'")
		return
	default:
		writeDeltaError(w, st, "InternalServerErrorException", "the catalog is failing")
		return
	}
	parts := strings.Split(rest, "/") // CATALOG/schemas/SCHEMA/tables/TABLE
	if len(parts) != 5 || parts[1] != "schemas" || parts[3] != "tables" {
		writeDeltaError(w, http.StatusNotFound, "NotFoundException", "No API found for '"+r.URL.Path+"'")
		return
	}
	full := parts[0] + "." + parts[2] + "." + parts[4]
	s.mu.Lock()
	tb := s.tables[strings.ToLower(full)]
	var commits []Commit
	var managed, revoked bool
	var latest int64
	var id, loc string
	if tb != nil {
		commits, managed, revoked, latest, id, loc = append([]Commit(nil), tb.commits...), tb.managed, tb.revoked, tb.latest, tb.id, tb.location
	}
	s.mu.Unlock()
	switch {
	case tb == nil:
		writeDeltaError(w, http.StatusNotFound, "NoSuchTableException", "Table not found: "+full)
		return
	case revoked:
		writeDeltaError(w, http.StatusForbidden, "PermissionDeniedException", "User does not have SELECT on Table '"+full+"'.")
		return
	}
	s.Loads.Add(1)
	props := map[string]string{}
	if managed {
		props["delta.feature.catalogManaged"] = "supported"
		props["delta.feature.inCommitTimestamp"] = "supported"
		props["delta.enableInCommitTimestamps"] = "true"
	}
	now := time.Now().UnixMilli()
	answer := map[string]any{"metadata": map[string]any{
		"etag": uuid.NewString(), "table-type": "MANAGED", "table-uuid": id, "location": loc,
		"created-time": now, "updated-time": now, "columns": map[string]any{"type": "struct", "fields": []any{}},
		"properties": props,
	}}
	if managed {
		list := make([]map[string]any, 0, len(commits))
		for i := len(commits) - 1; i >= 0; i-- { // newest first
			c := commits[i]
			list = append(list, map[string]any{"version": c.Version, "timestamp": c.Timestamp, "file-name": c.FileName,
				"file-size": c.FileSize, "file-modification-timestamp": c.ModTime})
		}
		answer["commits"] = list
		if latest >= 0 {
			answer["latest-table-version"] = latest
		}
	}
	writeJSON(w, answer)
}

func writeDeltaError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": status}})
}

// MakeCatalogManaged rewrites the commits of the local table at dir (one
// without checkpoints, as writer/ writes them) as a catalog-managed
// table's writer would have: reader 3 and writer 7 with the
// catalogManaged and inCommitTimestamp features (only inCommitTimestamp
// when managed is false: the same table as its path reads it), in-commit
// timestamps enabled, every commitInfo first with an inCommitTimestamp
// (base + version seconds) and a txnId.
func MakeCatalogManaged(t testing.TB, dir string, managed bool, base time.Time) {
	t.Helper()
	readerF, writerF := []string{}, []string{"inCommitTimestamp"}
	if managed {
		readerF, writerF = []string{"catalogManaged"}, []string{"catalogManaged", "inCommitTimestamp"}
	}
	logDir := filepath.Join(dir, "_delta_log")
	for v := int64(0); ; v++ {
		p := filepath.Join(logDir, fmt.Sprintf("%020d.json", v))
		data, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var a map[string]map[string]any
			if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if ci := a["commitInfo"]; ci != nil {
				ci["inCommitTimestamp"] = base.Add(time.Duration(v) * time.Second).UnixMilli()
				ci["txnId"] = uuid.NewString()
			}
			if pr := a["protocol"]; pr != nil {
				pr["minReaderVersion"], pr["minWriterVersion"] = 3, 7
				pr["readerFeatures"], pr["writerFeatures"] = readerF, writerF
			}
			if md := a["metaData"]; md != nil {
				conf, _ := md["configuration"].(map[string]any)
				if conf == nil {
					conf = map[string]any{}
				}
				conf["delta.enableInCommitTimestamps"] = "true"
				md["configuration"] = conf
			}
			line, _ := json.Marshal(a)
			out.Write(line)
			out.WriteByte('\n')
		}
		if err := os.WriteFile(p, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// StageCommits moves the commits of versions from and newer of the local
// table at dir to _delta_log/_staged_commits/<version>.<uuid>.json, as a
// catalog-managed table holds them until they are published, and returns
// them as the catalog's ratified commits, with the latest version.
func StageCommits(t testing.TB, dir string, from int64) ([]Commit, int64) {
	t.Helper()
	logDir := filepath.Join(dir, "_delta_log")
	staged := filepath.Join(logDir, "_staged_commits")
	if err := os.MkdirAll(staged, 0o755); err != nil {
		t.Fatal(err)
	}
	var out []Commit
	latest := from - 1
	for v := from; ; v++ {
		p := filepath.Join(logDir, fmt.Sprintf("%020d.json", v))
		data, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			return out, latest
		}
		if err != nil {
			t.Fatal(err)
		}
		var ci struct {
			CommitInfo struct {
				ICT int64 `json:"inCommitTimestamp"`
			} `json:"commitInfo"`
		}
		first, _, _ := bytes.Cut(data, []byte("\n"))
		_ = json.Unmarshal(first, &ci)
		name := fmt.Sprintf("%020d.%s.json", v, uuid.NewString())
		if err := os.Rename(p, filepath.Join(staged, name)); err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(filepath.Join(staged, name))
		out = append(out, Commit{Version: v, Timestamp: ci.CommitInfo.ICT, FileName: name, FileSize: int64(len(data)), ModTime: st.ModTime().UnixMilli()})
		latest = v
	}
}
