package sharing

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Building the log. A version's query gives its protocol, metaData and
// live files (add actions whose path is a pre-signed URL). Commit N is the
// difference between versions N-1 and N: removes for the files that left,
// adds for those that came, the protocol and metaData when they changed,
// and a commitInfo with the version's timestamp. The first version served
// is written whole, as a checkpoint.

// liveFile is one data file of a version, its add action rewritten to
// point into the virtual table directory.
type liveFile struct {
	key   string          // storage key of the data file
	ident string          // key and deletion vector: what a Delta log reconciles by
	add   json.RawMessage // the add action, path (and DV path) relative
	size  int64
	part  json.RawMessage // partitionValues
	dv    json.RawMessage // deletionVector (rewritten) or nil
	urls  []signedURL     // the data file's, then its deletion vector's
}

// signedURL is a key and the pre-signed URL that reads it now.
type signedURL struct {
	key     string
	url     string
	expires int64 // Unix ms; 0: no expiry given
	size    int64 // -1: unknown (a deletion vector file)
}

// version is one version as the share answers it.
type version struct {
	v         int64
	timestamp int64 // Unix ms; -1 when the answer gave none
	protocol  json.RawMessage
	metadata  json.RawMessage
	files     map[string]*liveFile // by ident
}

// parseVersion turns a query's answer into a version.
func parseVersion(r *Response) (*version, error) {
	out := &version{v: r.Version, timestamp: -1, protocol: compact(r.Protocol), metadata: compact(r.Metadata), files: map[string]*liveFile{}}
	loc := locationPath(r.Location)
	for i, f := range r.Files {
		if f.Timestamp != nil && out.timestamp < 0 {
			out.timestamp = *f.Timestamp
		}
		var sa struct {
			Add    map[string]json.RawMessage `json:"add"`
			Remove json.RawMessage            `json:"remove"`
		}
		if err := json.Unmarshal(f.DeltaSingleAction, &sa); err != nil {
			return nil, fmt.Errorf("file %d of the answer: %v", i+1, err)
		}
		if sa.Add == nil {
			if sa.Remove != nil {
				return nil, fmt.Errorf("file %d of the answer: a remove action in a snapshot", i+1)
			}
			continue // cdc and other actions do not make a snapshot
		}
		lf, err := rewriteAdd(sa.Add, f, loc, r.PlainURLs)
		if err != nil {
			return nil, fmt.Errorf("file %s of the answer: %v", shortQuote(f.ID), err)
		}
		if _, dup := out.files[lf.ident]; dup {
			return nil, fmt.Errorf("the answer lists the file %s twice", lf.key)
		}
		out.files[lf.ident] = lf
	}
	return out, nil
}

// rewriteAdd points an add action (and its deletion vector) at keys of
// the virtual table directory and keeps the URLs that read them.
func rewriteAdd(add map[string]json.RawMessage, f File, loc string, plain bool) (*liveFile, error) {
	var u string
	if err := json.Unmarshal(add["path"], &u); err != nil || u == "" {
		return nil, fmt.Errorf("add action without a path")
	}
	exp := int64(0)
	if f.ExpirationTimestamp != nil {
		exp = *f.ExpirationTimestamp
	}
	key, err := urlKey(u, loc, f.ID, plain)
	if err != nil {
		return nil, err
	}
	var size int64
	if err := json.Unmarshal(add["size"], &size); err != nil {
		return nil, fmt.Errorf("%s: add action without a size", key)
	}
	if size < 0 {
		return nil, fmt.Errorf("%s: add action with size %d", key, size)
	}
	lf := &liveFile{key: key, ident: key, size: size, part: add["partitionValues"]}
	lf.urls = append(lf.urls, signedURL{key: key, url: u, expires: exp, size: size})
	add["path"] = mustJSON(escapeKey(key))
	if raw, ok := add["deletionVector"]; ok && !isNull(raw) {
		var dv map[string]json.RawMessage
		if err := json.Unmarshal(raw, &dv); err != nil {
			return nil, fmt.Errorf("%s: deletion vector: %v", key, err)
		}
		var st, p string
		_ = json.Unmarshal(dv["storageType"], &st)
		_ = json.Unmarshal(dv["pathOrInlineDv"], &p)
		switch st {
		case "i":
		case "p":
			// The server gives a vector's file as a pre-signed URL.
			id := f.ID + "-dv"
			dk, err := urlKey(p, loc, id, plain)
			if err != nil {
				return nil, fmt.Errorf("%s: deletion vector: %v", key, err)
			}
			dv["pathOrInlineDv"] = mustJSON(escapeKey(dk))
			lf.urls = append(lf.urls, signedURL{key: dk, url: p, expires: exp, size: -1})
		default:
			// A 'u' vector names a file relative to a table root the
			// recipient cannot reach.
			return nil, fmt.Errorf("%s: deletion vector of storage type %q has no pre-signed URL", key, st)
		}
		raw = mustJSON(dv)
		add["deletionVector"] = raw
		lf.dv = raw
		var off json.RawMessage = dv["offset"]
		lf.ident = key + "\x00" + st + string(dv["pathOrInlineDv"]) + "@" + string(off)
	}
	lf.add = mustJSON(add)
	return lf, nil
}

// locationPath is the path part of a table's root ("s3://bucket/t" ->
// "/t"; abfss://c@a.host/t -> "/t").
func locationPath(loc string) string {
	if loc == "" {
		return ""
	}
	u, err := url.Parse(loc)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(path.Clean("/"+u.Path), "/")
}

// urlKey is the key of a pre-signed URL in the virtual table directory:
// its path below the table's location when the server gave the location
// and the URL holds it, which is the path the table's own log has; else
// the file's id and the URL's last segment (then derived names differ
// from the table's own). The URL must be https (plain: or http, when the
// endpoint is): a file://, s3:// or other URL is refused, not read.
func urlKey(raw, loc, id string, plain bool) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || !(u.Scheme == "https" || plain && u.Scheme == "http") {
		scheme := "https"
		if plain {
			scheme = "http(s)"
		}
		what := "a URL"
		if err == nil && u.Scheme != "" {
			what = "a " + strconv.Quote(u.Scheme) + " URL"
		}
		return "", fmt.Errorf("the file's URL is %s, not an %s URL", what, scheme)
	}
	p := path.Clean("/" + u.Path)
	if loc != "" && loc != "/" {
		if i := strings.Index(p, loc+"/"); i >= 0 {
			if rel := p[i+len(loc)+1:]; validKey(rel) {
				return rel, nil
			}
		}
	}
	base := path.Base(p)
	if id == "" || strings.ContainsAny(id, "/\x00") || !validKey(base) {
		return "", fmt.Errorf("the file's URL names no file")
	}
	return "_shared/" + id + "/" + base, nil
}

func validKey(k string) bool {
	if k == "" || strings.HasPrefix(k, "_delta_log/") {
		return false
	}
	for _, s := range strings.Split(k, "/") {
		if s == "" || s == "." || s == ".." {
			return false
		}
	}
	return true
}

// escapeKey writes a key as a Delta log path: a relative URI, escaped as
// Spark writes them (java.net.URI): '%', spaces, controls and the
// characters a URI path may not hold; non-ASCII letters stay.
func escapeKey(k string) string {
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c <= ' ' || c == 0x7f || strings.IndexByte("%\"#<>?[\\]^`{|}", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// commit writes commit N: the difference from prev (nil: written whole)
// to cur.
func commit(prev, cur *version, ts int64, ict bool) []byte {
	var b bytes.Buffer
	ci := map[string]any{"timestamp": ts} // the protocol shares no commitInfo: no operation
	if ict {
		ci["inCommitTimestamp"] = ts
	}
	line(&b, "commitInfo", ci)
	if prev == nil || !bytes.Equal(prev.protocol, cur.protocol) {
		line(&b, "protocol", cur.protocol)
	}
	if prev == nil || !bytes.Equal(prev.metadata, cur.metadata) {
		line(&b, "metaData", cur.metadata)
	}
	if prev != nil {
		for _, id := range sortedKeys(prev.files) {
			if _, ok := cur.files[id]; ok {
				continue
			}
			f := prev.files[id]
			rm := map[string]any{"path": escapeKey(f.key), "deletionTimestamp": ts, "dataChange": true, "extendedFileMetadata": true, "size": f.size}
			if f.part != nil {
				rm["partitionValues"] = f.part
			}
			if f.dv != nil {
				rm["deletionVector"] = f.dv
			}
			line(&b, "remove", rm)
		}
	}
	for _, id := range sortedKeys(cur.files) {
		if prev != nil {
			if _, ok := prev.files[id]; ok {
				continue
			}
		}
		line(&b, "add", cur.files[id].add)
	}
	return b.Bytes()
}

// checkpoint writes version cur whole as a V2 checkpoint in JSON.
func checkpoint(cur *version) []byte {
	var b bytes.Buffer
	line(&b, "checkpointMetadata", map[string]any{"version": cur.v})
	line(&b, "protocol", cur.protocol)
	line(&b, "metaData", cur.metadata)
	for _, id := range sortedKeys(cur.files) {
		line(&b, "add", cur.files[id].add)
	}
	return b.Bytes()
}

func line(b *bytes.Buffer, action string, v any) {
	b.WriteString(`{"` + action + `":`)
	b.Write(mustJSON(v))
	b.WriteString("}\n")
}

func mustJSON(v any) json.RawMessage {
	if r, ok := v.(json.RawMessage); ok {
		return r
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps of JSON values reach here
	}
	return b
}

func compact(r json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, r) != nil {
		return r
	}
	return b.Bytes()
}

func isNull(r json.RawMessage) bool { return string(bytes.TrimSpace(r)) == "null" }

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
