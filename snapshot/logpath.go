package snapshot

import (
	"fmt"
	"strconv"
	"strings"
)

// Names of the files in _delta_log, parsed with no I/O.

const (
	logDir            = "_delta_log/"
	sidecarDir        = "_delta_log/_sidecars/"
	lastCheckpointKey = "_delta_log/_last_checkpoint"
)

// fileKind is what a _delta_log file is.
type fileKind int

const (
	kindUnknown         fileKind = iota
	kindCommit                   // n.json
	kindCheckpoint               // n.checkpoint.parquet (classic: V1, or V2 content)
	kindMultiCheckpoint          // n.checkpoint.o.p.parquet (one part of p)
	kindUUIDCheckpoint           // n.checkpoint.<uuid>.json|parquet (V2)
	kindCompaction               // x.y.compacted.json
	kindChecksum                 // n.crc
)

func (k fileKind) String() string {
	switch k {
	case kindCommit:
		return "commit"
	case kindCheckpoint:
		return "classic checkpoint"
	case kindMultiCheckpoint:
		return "multi-part checkpoint"
	case kindUUIDCheckpoint:
		return "V2 checkpoint"
	case kindCompaction:
		return "log compaction"
	case kindChecksum:
		return "checksum"
	}
	return "unknown"
}

// logPath is a parsed _delta_log file name.
type logPath struct {
	Key     string   // storage key, "_delta_log/..."
	Kind    fileKind // kindUnknown for names this reader ignores
	Version int64    // the version (the start version x of a compaction)
	End     int64    // compaction: the end version y
	Part    int      // multi-part checkpoint: part o (1-based)
	Parts   int      // multi-part checkpoint: number of parts p
	UUID    string   // V2 checkpoint: the uuid
	JSON    bool     // the file is JSON (commit, compaction, JSON V2 checkpoint)
}

// commitKey is the key of the commit file of version v.
func commitKey(v int64) string { return fmt.Sprintf("%s%020d.json", logDir, v) }

// versionPrefix is the zero-padded version as it starts every file name
// of that version: listing after it lists version v and newer.
func versionPrefix(v int64) string { return fmt.Sprintf("%s%020d", logDir, v) }

// parseLogPath parses a key under _delta_log/. Names it does not know
// (temporary files, _last_checkpoint, anything in a subdirectory) come
// back with Kind kindUnknown.
func parseLogPath(key string) logPath {
	p := logPath{Key: key, Version: -1}
	name, ok := strings.CutPrefix(key, logDir)
	if !ok || strings.Contains(name, "/") || len(name) < 21 || name[20] != '.' {
		return p
	}
	v, ok := parseDigits(name[:20])
	if !ok {
		return p
	}
	rest := name[21:]
	switch {
	case rest == "json":
		p.Kind, p.Version, p.JSON = kindCommit, v, true
	case rest == "crc":
		p.Kind, p.Version = kindChecksum, v
	case rest == "checkpoint.parquet":
		p.Kind, p.Version = kindCheckpoint, v
	case strings.HasPrefix(rest, "checkpoint."):
		mid := strings.TrimPrefix(rest, "checkpoint.")
		if base, ok := strings.CutSuffix(mid, ".parquet"); ok {
			// o.p (10 digits each) or a uuid
			if len(base) == 21 && base[10] == '.' {
				o, ok1 := parseDigits(base[:10])
				n, ok2 := parseDigits(base[11:])
				if ok1 && ok2 && n >= 1 && o >= 1 && o <= n {
					p.Kind, p.Version, p.Part, p.Parts = kindMultiCheckpoint, v, int(o), int(n)
				}
				return p
			}
			if isUUIDLike(base) {
				p.Kind, p.Version, p.UUID = kindUUIDCheckpoint, v, base
			}
			return p
		}
		if base, ok := strings.CutSuffix(mid, ".json"); ok && isUUIDLike(base) {
			p.Kind, p.Version, p.UUID, p.JSON = kindUUIDCheckpoint, v, base, true
		}
	case strings.HasSuffix(rest, ".compacted.json") && len(rest) == 20+len(".compacted.json"):
		end, ok := parseDigits(rest[:20])
		if ok && end > v {
			p.Kind, p.Version, p.End, p.JSON = kindCompaction, v, end, true
		}
	}
	return p
}

// parseDigits parses a string of ASCII digits (no sign) into a
// non-negative int64.
func parseDigits(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}

// isUUIDLike accepts the unique part of a V2 checkpoint name: non-empty,
// no dots or slashes (a strict UUID check would refuse writers that use
// other unique strings, which the protocol allows for sidecars).
func isUUIDLike(s string) bool {
	return s != "" && !strings.ContainsAny(s, "./")
}
