// Package attack damages copies of Delta tables the way a hostile user, a
// broken writer or a failing disk would, for deltafs's attack suite: flipped
// bits, truncations, deleted and swapped files, special files in place of
// regular ones, and hostile numbers in the log. Each Damage says whether
// deltafs can detect it (Strict): a strict damage must leave every
// readable sample byte-identical to the undamaged table's or fail it with
// an error; a lenient one (a flipped bit in a JSON commit, or in a Parquet
// page written without a checksum, can decode to another valid table) may
// change what is read, but must still never crash deltafs, hang it past a
// bound or make it allocate from a claim.
package attack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Kind is a way of damaging one file.
type Kind int

const (
	FlipByte     Kind = iota // xor one byte at a random offset
	Truncate                 // cut the file at a random length
	Empty                    // cut the file to 0 bytes
	Delete                   // remove the file
	Swap                     // exchange the file's content with another's of its kind
	FIFO                     // replace the file by a named pipe
	DevZero                  // replace the file by a symlink to /dev/zero
	Directory                // replace the file by a directory
	HostileStats             // rewrite numbers of a commit's add actions
	HostileHint              // rewrite _last_checkpoint's numbers
	numKinds
)

var kindNames = [...]string{"flip", "truncate", "empty", "delete", "swap", "fifo", "devzero", "directory", "stats", "hint"}

func (k Kind) String() string { return kindNames[k] }

// Role is what a file is to the table.
type Role int

const (
	DataFile       Role = iota // a Parquet data file
	Commit                     // _delta_log/N.json
	Checkpoint                 // a checkpoint part or sidecar
	DeletionVector             // deletion_vector_*.bin
	LastCheckpoint             // _delta_log/_last_checkpoint
	Other                      // CRC files, compactions, anything else
)

var roleNames = [...]string{"data", "commit", "checkpoint", "dv", "hint", "other"}

func (r Role) String() string { return roleNames[r] }

// RoleOf classifies a path relative to the table root.
func RoleOf(rel string) Role {
	base := filepath.Base(rel)
	switch {
	case rel == "_delta_log/_last_checkpoint":
		return LastCheckpoint
	case strings.HasPrefix(base, "deletion_vector_") && strings.HasSuffix(base, ".bin"):
		return DeletionVector
	case strings.HasPrefix(rel, "_delta_log/") && strings.Contains(base, ".checkpoint."),
		strings.HasPrefix(rel, "_delta_log/_sidecars/"):
		return Checkpoint
	case strings.HasPrefix(rel, "_delta_log/") && strings.HasSuffix(base, ".json") && !strings.Contains(base, "compacted"):
		return Commit
	case strings.HasSuffix(base, ".parquet") && !strings.HasPrefix(rel, "_delta_log/"):
		return DataFile
	}
	return Other
}

// Damage is one damage applied to one table.
type Damage struct {
	Kind   Kind
	File   string // relative to the table root
	Role   Role
	Detail string // what exactly was done
	// Strict: deltafs can detect this damage, so every sample it serves
	// must equal the undamaged table's.
	Strict bool
}

func (d Damage) String() string {
	s := "lenient"
	if d.Strict {
		s = "strict"
	}
	return fmt.Sprintf("%s %s %s (%s): %s", s, d.Kind, d.File, d.Role, d.Detail)
}

// Files lists a table's regular files, relative to its root, sorted.
func Files(dir string) ([]string, error) {
	var out []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// Options say what the table is, for strictness.
type Options struct {
	// PageChecksums: the table's data files carry page checksums (tables
	// written by parquet-go, as `deltafs import` does; Spark's do not),
	// so a flipped bit in one is detected.
	PageChecksums bool
}

// Apply damages the table at dir with kind k, choosing the file and the
// details with rng. It returns false when the table has no file the kind
// applies to.
func Apply(dir string, k Kind, rng *rand.Rand, opts Options) (Damage, bool, error) {
	files, err := Files(dir)
	if err != nil {
		return Damage{}, false, err
	}
	var cands []string
	for _, f := range files {
		r := RoleOf(f)
		switch k {
		case HostileStats:
			if r == Commit {
				if b, _ := os.ReadFile(filepath.Join(dir, f)); bytes.Contains(b, []byte(`"add"`)) {
					cands = append(cands, f)
				}
			}
		case HostileHint:
			if r == LastCheckpoint {
				cands = append(cands, f)
			}
		default:
			if r != Other {
				cands = append(cands, f)
			}
		}
	}
	if len(cands) == 0 {
		return Damage{}, false, nil
	}
	f := cands[rng.IntN(len(cands))]
	d := Damage{Kind: k, File: f, Role: RoleOf(f)}
	p := filepath.Join(dir, filepath.FromSlash(f))
	switch k {
	case FlipByte:
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			return d, false, err
		}
		i := rng.IntN(len(b))
		x := byte(1 << rng.IntN(8))
		b[i] ^= x
		d.Detail = fmt.Sprintf("byte %d of %d xor %#x", i, len(b), x)
		// Detected: deletion vectors carry a CRC, and so do data pages
		// where the writer wrote checksums. A flip outside the pages
		// (footer, page index) is still caught by the size and page
		// checks, or decodes to an error.
		d.Strict = d.Role == DeletionVector || d.Role == DataFile && opts.PageChecksums
		return d, true, os.WriteFile(p, b, 0o644)
	case Truncate:
		fi, err := os.Stat(p)
		if err != nil || fi.Size() < 2 {
			return d, false, err
		}
		n := rng.Int64N(fi.Size()-1) + 1
		d.Detail = fmt.Sprintf("cut to %d of %d bytes", n, fi.Size())
		// The log records data files' sizes; deletion vectors are framed
		// and checksummed. A commit cut at a line end reads as a shorter
		// commit: not detectable.
		d.Strict = d.Role == DataFile || d.Role == DeletionVector
		return d, true, os.Truncate(p, n)
	case Empty:
		d.Detail = "cut to 0 bytes"
		d.Strict = d.Role != LastCheckpoint && d.Role != Checkpoint
		return d, true, os.Truncate(p, 0)
	case Delete:
		d.Detail = "removed"
		d.Strict = true
		return d, true, os.Remove(p)
	case Swap:
		var same []string
		for _, o := range cands {
			if o != f && RoleOf(o) == d.Role {
				same = append(same, o)
			}
		}
		if len(same) == 0 {
			return d, false, nil
		}
		o := same[rng.IntN(len(same))]
		po := filepath.Join(dir, filepath.FromSlash(o))
		a, err1 := os.ReadFile(p)
		b, err2 := os.ReadFile(po)
		if err1 != nil || err2 != nil {
			return d, false, fmt.Errorf("swap: %v %v", err1, err2)
		}
		d.Detail = "content swapped with " + o
		// Data files differ in size from what the log says (or are
		// another file's rows with a row count to match: rare); commits
		// swapped make another valid log.
		d.Strict = d.Role == DataFile && len(a) != len(b) || d.Role == DeletionVector
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return d, false, err
		}
		return d, true, os.WriteFile(po, a, 0o644)
	case FIFO:
		d.Detail = "named pipe"
		d.Strict = true
		if err := os.Remove(p); err != nil {
			return d, false, err
		}
		return d, true, syscall.Mkfifo(p, 0o644)
	case DevZero:
		d.Detail = "symlink to /dev/zero"
		d.Strict = true
		if err := os.Remove(p); err != nil {
			return d, false, err
		}
		return d, true, os.Symlink("/dev/zero", p)
	case Directory:
		d.Detail = "a directory"
		d.Strict = true
		if err := os.Remove(p); err != nil {
			return d, false, err
		}
		return d, true, os.Mkdir(p, 0o755)
	case HostileStats:
		return hostileStats(p, d, rng)
	case HostileHint:
		return hostileHint(p, d, rng)
	}
	return d, false, fmt.Errorf("unknown kind %d", k)
}

// hostileNumbers are claims no real table makes.
var hostileNumbers = []int64{-1, -1 << 62, 1 << 31, 1 << 40, 1 << 62, 30_000_000, 0}

// hostileStats rewrites one add action of a commit: its statistics'
// numRecords, its size, or its deletion vector's cardinality, size or
// offset. Every one of these is checked against what the file holds, so
// the damage is strict.
func hostileStats(p string, d Damage, rng *rand.Rand) (Damage, bool, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return d, false, err
	}
	lines := bytes.Split(b, []byte("\n"))
	var adds []int
	for i, l := range lines {
		if bytes.HasPrefix(bytes.TrimSpace(l), []byte(`{"add"`)) {
			adds = append(adds, i)
		}
	}
	if len(adds) == 0 {
		return d, false, nil
	}
	i := adds[rng.IntN(len(adds))]
	var a struct {
		Add map[string]any `json:"add"`
	}
	if err := json.Unmarshal(lines[i], &a); err != nil {
		return d, false, nil // not JSON we can rewrite: leave it
	}
	n := hostileNumbers[rng.IntN(len(hostileNumbers))]
	dv, hasDV := a.Add["deletionVector"].(map[string]any)
	field := []string{"numRecords", "size", "dv.cardinality", "dv.sizeInBytes", "dv.offset"}[rng.IntN(5)]
	if !hasDV && strings.HasPrefix(field, "dv.") {
		field = "numRecords"
	}
	switch field {
	case "numRecords":
		var st map[string]any
		s, _ := a.Add["stats"].(string)
		if s == "" || json.Unmarshal([]byte(s), &st) != nil {
			st = map[string]any{}
		}
		st["numRecords"] = n
		j, _ := json.Marshal(st)
		a.Add["stats"] = string(j)
	case "size":
		a.Add["size"] = n
	default:
		dv[strings.TrimPrefix(field, "dv.")] = n
	}
	d.Detail = fmt.Sprintf("add of %v: %s = %d", a.Add["path"], field, n)
	// A claim equal to the truth is no damage; 0 and -1 are claims the
	// reader must check too (-1 numRecords is invalid JSON for stats).
	d.Strict = true
	j, err := json.Marshal(a)
	if err != nil {
		return d, false, err
	}
	lines[i] = j
	return d, true, os.WriteFile(p, bytes.Join(lines, []byte("\n")), 0o644)
}

// hostileHint rewrites _last_checkpoint: a hint, so whatever it says, a
// reader that checks it against the log reads the same table.
func hostileHint(p string, d Damage, rng *rand.Rand) (Damage, bool, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return d, false, err
	}
	var h map[string]any
	if json.Unmarshal(bytes.TrimSpace(b), &h) != nil {
		return d, false, nil
	}
	field := []string{"version", "size", "parts", "numOfAddFiles", "sizeInBytes"}[rng.IntN(5)]
	n := hostileNumbers[rng.IntN(len(hostileNumbers))]
	h[field] = n
	delete(h, "checksum") // else the checksum alone refuses it
	d.Detail = fmt.Sprintf("%s = %d", field, n)
	d.Strict = true
	j, _ := json.Marshal(h)
	return d, true, os.WriteFile(p, j, 0o644)
}

// Kinds lists every kind.
func Kinds() []Kind {
	out := make([]Kind, numKinds)
	for i := range out {
		out[i] = Kind(i)
	}
	return out
}

// CopyTable copies the table at src to dst (regular files and
// directories; modification times kept, since commit times are file
// times).
func CopyTable(src, dst string) error {
	return filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		t := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(t, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(t, b, 0o644); err != nil {
			return err
		}
		return os.Chtimes(t, fi.ModTime(), fi.ModTime())
	})
}
