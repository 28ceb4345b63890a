package snapshot

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"slices"
	"strings"

	"github.com/deltafs/deltafs/storage"
)

// Cross-checking checkpoints. A checkpoint is the reconciled state of its
// version, so it cannot hold two add actions of one logical file, nor two
// protocol or metaData actions; and _last_checkpoint, written after it,
// says how many actions (size), add actions (numOfAddFiles) and parts it
// has. A checkpoint that disagrees with either is not used: the version is
// rebuilt from an older checkpoint or the commits when they exist, else
// fails naming the checkpoint (see Table.build). What this cannot see is
// listed in doc.go.

// errInconsistent marks a checkpoint that failed a cross-check (it is
// never printed: causes carry their own text and match ErrCorrupt).
var errInconsistent = errors.New("inconsistent checkpoint")

// inconsistentf is a cause matching ErrCorrupt and errInconsistent.
func inconsistentf(format string, args ...any) error {
	return &cause{sentinel: ErrCorrupt, msg: fmt.Sprintf(format, args...), wrapped: errInconsistent}
}

// lastCheckpointHint is what _last_checkpoint says about the checkpoint of
// Version. Pointers are nil for absent fields.
type lastCheckpointHint struct {
	Version       int64
	Size          *int64 // actions in the checkpoint
	Parts         *int64 // parts of a multi-part checkpoint
	NumOfAddFiles *int64 // add actions in the checkpoint
	V2Path        string // a V2 checkpoint's top-level file name, "" when absent
}

// maxHintBytes bounds the _last_checkpoint read: a real one is a few KiB
// (a V2 hint repeats the schema); a larger one is ignored, not read.
const maxHintBytes = 16 << 20

// readLastCheckpoint reads _last_checkpoint. ok is false when it is
// absent, unreadable, too large, not a valid hint, or its checksum (when
// it has one) does not match its content: it is only a hint, so a bad one
// costs a full listing and no cross-check, never an error.
func readLastCheckpoint(ctx context.Context, st storage.Storage) (h lastCheckpointHint, ok bool) {
	info, err := st.Stat(ctx, lastCheckpointKey)
	if err == nil && (info.Size <= 0 || info.Size > maxHintBytes) {
		return h, false
	}
	var data []byte
	if err == nil {
		data, err = storage.ReadRange(ctx, st, lastCheckpointKey, 0, info.Size)
	}
	if err != nil {
		switch {
		case errors.Is(err, storage.ErrNotRegular):
			// Never read (a named pipe would block): say so once.
			slog.Warn("ignoring the _last_checkpoint hint: the log is listed from its start", "table", st.Location(), "err", err)
		case !errors.Is(err, storage.ErrNotExist):
			slog.Debug("ignoring the _last_checkpoint hint: the log is listed from its start", "table", st.Location(), "err", err)
		}
		return h, false
	}
	return parseLastCheckpoint(data)
}

// parseLastCheckpoint decodes and validates a _last_checkpoint.
func parseLastCheckpoint(data []byte) (h lastCheckpointHint, ok bool) {
	var raw struct {
		Version       *int64 `json:"version"`
		Size          *int64 `json:"size"`
		Parts         *int64 `json:"parts"`
		NumOfAddFiles *int64 `json:"numOfAddFiles"`
		Checksum      string `json:"checksum"`
		V2Checkpoint  *struct {
			Path string `json:"path"`
		} `json:"v2Checkpoint"`
	}
	if err := json.Unmarshal(data, &raw); err != nil || raw.Version == nil || *raw.Version < 0 {
		return h, false
	}
	for _, n := range []*int64{raw.Size, raw.Parts, raw.NumOfAddFiles} {
		if n != nil && *n < 0 {
			return h, false
		}
	}
	// The protocol's canonical form also refuses duplicate keys, which
	// encoding/json accepts: check it whether or not there is a checksum.
	canon, err := canonicalJSON(data)
	if err != nil {
		return h, false
	}
	if raw.Checksum != "" {
		sum := md5.Sum([]byte(canon))
		if !strings.EqualFold(raw.Checksum, hex.EncodeToString(sum[:])) {
			return h, false
		}
	}
	h = lastCheckpointHint{Version: *raw.Version, Size: raw.Size, Parts: raw.Parts, NumOfAddFiles: raw.NumOfAddFiles}
	if raw.V2Checkpoint != nil {
		h.V2Path = raw.V2Checkpoint.Path
	}
	return h, true
}

// canonicalJSON is the canonical form of a _last_checkpoint over which its
// checksum is computed (PROTOCOL.md, "JSON checksum"): one path=value pair
// per scalar, paths of URL-encoded quoted keys and array indexes joined by
// '+', sorted bytewise, joined by ','; the top-level "checksum" left out;
// numbers as written. Duplicate keys are an error.
func canonicalJSON(data []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var pairs [][2]string
	var walk func(path string, depth int) error
	walk = func(path string, depth int) error {
		if depth > 64 {
			return errors.New("nested too deeply")
		}
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		join := func(p, seg string) string {
			if p == "" {
				return seg
			}
			return p + "+" + seg
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				seen := map[string]bool{}
				for dec.More() {
					kt, err := dec.Token()
					if err != nil {
						return err
					}
					k, _ := kt.(string)
					if seen[k] {
						return fmt.Errorf("duplicate key %q", k)
					}
					seen[k] = true
					if path == "" && depth == 0 && k == "checksum" {
						var skip json.RawMessage
						if err := dec.Decode(&skip); err != nil {
							return err
						}
						continue
					}
					if err := walk(join(path, `"`+urlEncode(k)+`"`), depth+1); err != nil {
						return err
					}
				}
			case '[':
				for i := 0; dec.More(); i++ {
					if err := walk(join(path, fmt.Sprint(i)), depth+1); err != nil {
						return err
					}
				}
			}
			_, err := dec.Token() // the closing delimiter
			return err
		case string:
			pairs = append(pairs, [2]string{path, `"` + urlEncode(v) + `"`})
		case json.Number:
			pairs = append(pairs, [2]string{path, v.String()})
		case bool:
			pairs = append(pairs, [2]string{path, fmt.Sprint(v)})
		case nil:
			pairs = append(pairs, [2]string{path, "null"})
		}
		return nil
	}
	if err := walk("", 0); err != nil {
		return "", err
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", errors.New("trailing data")
	}
	slices.SortFunc(pairs, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p[0])
		b.WriteByte('=')
		b.WriteString(p[1])
	}
	return b.String(), nil
}

// urlEncode percent-encodes every byte but a-z A-Z 0-9 - . _ ~, in
// uppercase hex, as the checksum's canonical form asks.
func urlEncode(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

// crossCheck checks checkpoint c, read as cs, for self-consistency and
// against h, the _last_checkpoint hint of its version (nil for none).
func crossCheck(c checkpointRef, cs *checkpointState, h *lastCheckpointHint) error {
	if cs.Protocols > 1 {
		return inconsistentf("checkpoint holds %d protocol actions, a reconciled state has one", cs.Protocols)
	}
	if cs.Metadatas > 1 {
		return inconsistentf("checkpoint holds %d metaData actions, a reconciled state has one", cs.Metadatas)
	}
	seen := make(map[fileID]struct{}, len(cs.Adds))
	for _, a := range cs.Adds {
		id := a.id()
		if _, dup := seen[id]; dup {
			return inconsistentf("checkpoint holds two add actions of %s (a copied or repeated part?)", a.Path)
		}
		seen[id] = struct{}{}
	}
	if h == nil || h.Version != c.Version {
		return nil
	}
	if h.NumOfAddFiles != nil && *h.NumOfAddFiles != int64(len(cs.Adds)) {
		return inconsistentf("checkpoint holds %d add actions, _last_checkpoint says numOfAddFiles %d", len(cs.Adds), *h.NumOfAddFiles)
	}
	if h.Size != nil && h.describes(c) && *h.Size != cs.Actions {
		return inconsistentf("checkpoint holds %d actions, _last_checkpoint says size %d", cs.Actions, *h.Size)
	}
	return nil
}

// describes reports whether the hint describes checkpoint c itself, not
// another checkpoint of its version (writers may race, and a V2 checkpoint
// may also be written under a classic name): its V2 file name, else its
// number of parts, must match. Only then are action counts comparable
// (another checkpoint of the version may keep other tombstones).
func (h *lastCheckpointHint) describes(c checkpointRef) bool {
	if h.V2Path != "" {
		return c.Kind == kindUUIDCheckpoint && path.Base(h.V2Path) == path.Base(c.Key())
	}
	if c.Kind == kindUUIDCheckpoint {
		return false
	}
	parts := int64(1)
	if h.Parts != nil {
		parts = *h.Parts
	}
	return parts == int64(len(c.Files))
}
