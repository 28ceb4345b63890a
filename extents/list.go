package extents

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// ListName is the file name of a shard's extent list. (The shard's sample
// list is sample.ListName, _samples.tsv.)
const ListName = "_extents.tsv"

// listHeader is the first line of an extent list. It names the format: a
// list without it is refused.
const listHeader = "sample\tpath\toffset\tlength\tcrc32"

// listHeaderV1 is the header of the format before checksums, which
// ParseList refuses with ErrOldList.
const listHeaderV1 = "sample\tpath\toffset\tlength"

// ErrOldList is returned by ParseList for an extent list in the format
// before checksums (four columns, no crc32): its extents cannot be
// verified, so they are not read.
var ErrOldList = errors.New("extent list without checksums, written by a deltafs older than this reader: remount the table with this deltafs")

// Entry is one line of an extent list: a sample and where its bytes lie.
type Entry struct {
	// Sample is the sample file's path relative to the shard directory,
	// with '/' separators (for example "7/000123.png").
	Sample string
	Extent
}

// WriteList writes entries as an extent list: the header line
//
//	sample<TAB>path<TAB>offset<TAB>length<TAB>crc32
//
// then one line per entry, in the given order, with the sample and path
// fields escaped (backslash, tab, newline and carriage return become \\, \t,
// \n and \r), offset and length in decimal and crc32 in Checksum's
// fixed-width text form. Every entry is validated first; nothing is written
// when one is invalid.
func WriteList(w io.Writer, entries []Entry) error {
	for i, e := range entries {
		if err := validateEntry(e); err != nil {
			return fmt.Errorf("extent list entry %d: %w", i, err)
		}
	}
	bw := bufio.NewWriter(w)
	bw.WriteString(listHeader + "\n")
	for _, e := range entries {
		fmt.Fprintf(bw, "%s\t%s\t%d\t%d\t%s\n", escapeField(e.Sample), escapeField(e.Path), e.Offset, e.Length, e.Sum)
	}
	return bw.Flush()
}

func validateEntry(e Entry) error {
	if e.Sample == "" {
		return errors.New("empty sample path")
	}
	return e.Validate()
}

// ParseList reads an extent list written by WriteList. The first line
// must be the header, which names the format: a list of the format before
// checksums is ErrOldList, anything else without the header is not an
// extent list. Empty lines are skipped and "\r\n" line ends are accepted.
// Cache file paths are returned as written: ReadListFile resolves relative
// ones. An error names the 1-based line.
func ParseList(r io.Reader) ([]Entry, error) {
	br := bufio.NewReader(r)
	var out []Entry
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadString('\n')
		if err != nil && err != io.EOF {
			return out, fmt.Errorf("extent list line %d: %w", lineNo, err)
		}
		if line == "" && err == io.EOF {
			if lineNo == 1 {
				return nil, errors.New("empty extent list: no header line")
			}
			return out, nil
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		switch {
		case lineNo == 1 && line == listHeader:
		case lineNo == 1 && line == listHeaderV1:
			return nil, ErrOldList
		case lineNo == 1:
			return nil, fmt.Errorf("not an extent list: the first line is not the header %q", listHeader)
		case line == "":
		default:
			e, perr := parseListLine(line)
			if perr != nil {
				return out, fmt.Errorf("extent list line %d: %w", lineNo, perr)
			}
			out = append(out, e)
		}
		if err == io.EOF {
			return out, nil
		}
	}
}

func parseListLine(line string) (Entry, error) {
	f := strings.Split(line, "\t")
	if len(f) != 5 {
		return Entry{}, fmt.Errorf("want 5 tab-separated fields (sample, path, offset, length, crc32), got %d", len(f))
	}
	sample, err := unescapeField(f[0])
	if err != nil {
		return Entry{}, fmt.Errorf("sample: %w", err)
	}
	if sample == "" {
		return Entry{}, errors.New("empty sample path")
	}
	ext, err := parseExtentFields(f[1], f[2], f[3], f[4])
	if err != nil {
		return Entry{}, fmt.Errorf("sample %q: %w", sample, err)
	}
	return Entry{Sample: sample, Extent: ext}, nil
}

// ReadListFile parses the extent list at path and resolves relative cache
// file paths against the list's directory.
//
// A list on a FUSE filesystem (a deltafs mount) is read with O_DIRECT:
// deltafs materialises the shard on every read of _extents.tsv that reaches
// it, and the kernel may answer a plain read from pages cached by a read a
// few milliseconds earlier.
func ReadListFile(path string) ([]Entry, error) {
	f, err := openList(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := ParseList(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	dir := filepath.Dir(path)
	for i := range entries {
		if !filepath.IsAbs(entries[i].Path) {
			entries[i].Path = filepath.Join(dir, entries[i].Path)
		}
	}
	return entries, nil
}

// Extents returns the entries' extents, in order.
func Extents(entries []Entry) []Extent {
	out := make([]Extent, len(entries))
	for i, e := range entries {
		out[i] = e.Extent
	}
	return out
}

// openList opens an extent list, with O_DIRECT on FUSE (see ReadListFile).
// FUSE needs no buffer alignment for O_DIRECT.
func openList(path string) (*os.File, error) {
	if onFUSE(path) {
		f, _, err := OpenFile(path, true)
		return f, err
	}
	return os.Open(path)
}
