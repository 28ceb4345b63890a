package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
)

// Key names one cached unit by content identity. Two keys are the same entry
// exactly when all their fields are equal, so a key must name bytes that never
// change: a Delta data file is immutable once written, and Version (its size
// or ETag) guards against a rewritten object at the same path.
//
// Table versions that share a data file share its entries: the key carries
// the data file, not the table version, so reading version 7 after version 6
// finds the pages both versions reference already cached. Callers must
// therefore never put a table version into a key of data derived from one
// data file alone.
type Key struct {
	Kind    string // namespace: "page", "index", "footer", ...; required
	Table   string // table URI (location as the user gave it, normalised by the caller)
	File    string // data file path relative to the table root
	Version string // object identity guard: size in bytes or ETag
	Column  string // column path, "" for whole-file units
	Unit    string // unit within the file/column: page index, row range, byte range
}

// maxKeyText bounds a key's text so that a header stays small.
const maxKeyText = 60 << 10

var errEmptyKind = errors.New("cache: key has no Kind")

// String is the key's canonical text. It is stored inside every disk entry
// and compared on read, so a hash collision can never return another key's
// bytes. Each field is Go-quoted, which makes the text unambiguous whatever
// bytes the fields contain.
func (k Key) String() string {
	var b strings.Builder
	b.Grow(16 + len(k.Kind) + len(k.Table) + len(k.File) + len(k.Version) + len(k.Column) + len(k.Unit) + 64)
	b.WriteString("kind=")
	b.WriteString(strconv.Quote(k.Kind))
	b.WriteString(" table=")
	b.WriteString(strconv.Quote(k.Table))
	b.WriteString(" file=")
	b.WriteString(strconv.Quote(k.File))
	b.WriteString(" version=")
	b.WriteString(strconv.Quote(k.Version))
	b.WriteString(" column=")
	b.WriteString(strconv.Quote(k.Column))
	b.WriteString(" unit=")
	b.WriteString(strconv.Quote(k.Unit))
	return b.String()
}

// ref is a key prepared for lookups: its text, the sha256 of the text (the
// memory-tier key, as a 32-byte string) and the hex name of its disk entry.
type ref struct {
	text string
	sum  string // raw sha256, 32 bytes
	name string // hex sha256, 64 characters: the entry's file name without suffix
}

func (k Key) ref() (ref, error) {
	if k.Kind == "" {
		return ref{}, errEmptyKind
	}
	text := k.String()
	if len(text) > maxKeyText {
		return ref{}, errors.New("cache: key text longer than 60 KiB")
	}
	sum := sha256.Sum256([]byte(text))
	return ref{text: text, sum: string(sum[:]), name: hex.EncodeToString(sum[:])}, nil
}
