package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
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

// FileKey is a key of one data file's unit without its table: page.Key,
// the key the page reader and the sample layer give their units, is one
// (its fields are these, so a page.Key is a FileKey). Package cache does
// not import page: page's and sample's tests use the cache.
type FileKey = struct {
	Kind    string
	File    string
	Version string
	Column  string
	Unit    string
}

// KeyIn is the key of unit k of a data file of table: the one place where
// a unit's key is completed with its table (the table's cache handle and
// the disk-cache extents, package cache/materialize, both use it).
func KeyIn(table string, k FileKey) Key {
	return Key{Kind: k.Kind, Table: table, File: k.File, Version: k.Version, Column: k.Column, Unit: k.Unit}
}

// maxKeyText bounds a key's text so that a header stays small.
const maxKeyText = 60 << 10

var errEmptyKind = errors.New("cache: key has no Kind")

// String is the key's canonical text. It is stored inside every disk entry
// and compared on read, so a hash collision can never return another key's
// bytes. Each field is written as name=<byte length>:<bytes>, which keeps the
// text readable in logs and unambiguous whatever bytes the fields contain:
//
//	kind=4:page table=14:s3://bucket/t file=12:part-0.parquet version=6:123456 column=8:features unit=1:7
func (k Key) String() string { return string(k.appendText(nil)) }

func (k Key) appendText(b []byte) []byte {
	field := func(b []byte, name, v string) []byte {
		b = append(b, name...)
		b = strconv.AppendInt(b, int64(len(v)), 10)
		b = append(b, ':')
		return append(b, v...)
	}
	b = field(b, "kind=", k.Kind)
	b = field(b, " table=", k.Table)
	b = field(b, " file=", k.File)
	b = field(b, " version=", k.Version)
	b = field(b, " column=", k.Column)
	return field(b, " unit=", k.Unit)
}

// ref is a key prepared for lookups: its text, the sha256 of the text (the
// memory-tier key, as a 32-byte string) and the hex name of its disk entry.
type ref struct {
	text string
	sum  string // raw sha256, 32 bytes
	name string // hex sha256, 64 characters: the entry's file name without suffix
}

// digest is the first step of a lookup, cheap enough for a memory hit: the
// key's text in scratch (no allocation for keys up to its size) and its
// sha256.
func (k Key) digest(scratch []byte) (text []byte, sum [sha256.Size]byte, err error) {
	if k.Kind == "" {
		return nil, sum, errEmptyKind
	}
	text = k.appendText(scratch[:0])
	if len(text) > maxKeyText {
		return nil, sum, errors.New("cache: key text longer than 60 KiB")
	}
	return text, sha256.Sum256(text), nil
}

func makeRef(text []byte, sum [sha256.Size]byte) ref {
	return ref{text: string(text), sum: string(sum[:]), name: hex.EncodeToString(sum[:])}
}

func (k Key) ref() (ref, error) {
	var scratch [256]byte
	text, sum, err := k.digest(scratch[:])
	if err != nil {
		return ref{}, err
	}
	return makeRef(text, sum), nil
}
