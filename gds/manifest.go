package gds

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// ManifestName is the file name of a shard's extent manifest.
const ManifestName = "_extents.tsv"

// manifestHeader is the first line of a manifest. It names the format: a
// manifest without it is refused.
const manifestHeader = "sample\tpath\toffset\tlength\tcrc32"

// manifestHeaderV1 is the header of the format before checksums, which
// ParseManifest refuses with ErrOldManifest.
const manifestHeaderV1 = "sample\tpath\toffset\tlength"

// ErrOldManifest is returned by ParseManifest for a manifest in the format
// before checksums (four columns, no crc32): its extents cannot be
// verified, so they are not read.
var ErrOldManifest = errors.New("manifest without checksums, written by a deltafs older than this reader: remount the table with this deltafs")

// ManifestEntry is one line of an extent manifest: a sample and where its
// bytes lie.
type ManifestEntry struct {
	// Sample is the sample file's path relative to the shard directory,
	// with '/' separators (for example "7/000123.png").
	Sample string
	Extent
}

// WriteManifest writes entries as an extent manifest: the header line
//
//	sample<TAB>path<TAB>offset<TAB>length<TAB>crc32
//
// then one line per entry, in the given order, with the sample and path
// fields escaped (backslash, tab, newline and carriage return become \\, \t,
// \n and \r), offset and length in decimal and crc32 in Checksum's
// fixed-width text form. Every entry is validated first; nothing is written
// when one is invalid.
func WriteManifest(w io.Writer, entries []ManifestEntry) error {
	for i, e := range entries {
		if err := validateEntry(e); err != nil {
			return fmt.Errorf("manifest entry %d: %w", i, err)
		}
	}
	bw := bufio.NewWriter(w)
	bw.WriteString(manifestHeader + "\n")
	for _, e := range entries {
		fmt.Fprintf(bw, "%s\t%s\t%d\t%d\t%s\n", escapeField(e.Sample), escapeField(e.Path), e.Offset, e.Length, e.Sum)
	}
	return bw.Flush()
}

func validateEntry(e ManifestEntry) error {
	if e.Sample == "" {
		return errors.New("empty sample path")
	}
	return e.Validate()
}

// ParseManifest reads an extent manifest written by WriteManifest. The
// first line must be the header, which names the format: a manifest of the
// format before checksums is ErrOldManifest, anything else without the
// header is not a manifest. Empty lines are skipped and "\r\n" line ends
// are accepted. Cache file paths are returned as written: ReadManifestFile
// resolves relative ones. An error names the 1-based line.
func ParseManifest(r io.Reader) ([]ManifestEntry, error) {
	br := bufio.NewReader(r)
	var out []ManifestEntry
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadString('\n')
		if err != nil && err != io.EOF {
			return out, fmt.Errorf("manifest line %d: %w", lineNo, err)
		}
		if line == "" && err == io.EOF {
			if lineNo == 1 {
				return nil, errors.New("empty manifest: no header line")
			}
			return out, nil
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		switch {
		case lineNo == 1 && line == manifestHeader:
		case lineNo == 1 && line == manifestHeaderV1:
			return nil, ErrOldManifest
		case lineNo == 1:
			return nil, fmt.Errorf("not an extent manifest: the first line is not the header %q", manifestHeader)
		case line == "":
		default:
			e, perr := parseManifestLine(line)
			if perr != nil {
				return out, fmt.Errorf("manifest line %d: %w", lineNo, perr)
			}
			out = append(out, e)
		}
		if err == io.EOF {
			return out, nil
		}
	}
}

func parseManifestLine(line string) (ManifestEntry, error) {
	f := strings.Split(line, "\t")
	if len(f) != 5 {
		return ManifestEntry{}, fmt.Errorf("want 5 tab-separated fields (sample, path, offset, length, crc32), got %d", len(f))
	}
	sample, err := unescapeField(f[0])
	if err != nil {
		return ManifestEntry{}, fmt.Errorf("sample: %w", err)
	}
	if sample == "" {
		return ManifestEntry{}, errors.New("empty sample path")
	}
	ext, err := parseExtentFields(f[1], f[2], f[3], f[4])
	if err != nil {
		return ManifestEntry{}, fmt.Errorf("sample %q: %w", sample, err)
	}
	return ManifestEntry{Sample: sample, Extent: ext}, nil
}

// ReadManifestFile parses the manifest at path and resolves relative cache
// file paths against the manifest's directory.
//
// A manifest on a FUSE filesystem (a deltafs mount) is read with O_DIRECT:
// deltafs materialises the shard on every read of _extents.tsv that reaches
// it, and the kernel may answer a plain read from pages cached by a read a
// few milliseconds earlier.
func ReadManifestFile(path string) ([]ManifestEntry, error) {
	f, err := openManifest(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := ParseManifest(f)
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
func Extents(entries []ManifestEntry) []Extent {
	out := make([]Extent, len(entries))
	for i, e := range entries {
		out[i] = e.Extent
	}
	return out
}

// fuseSuperMagic is statfs's f_type of FUSE filesystems.
const fuseSuperMagic = 0x65735546

// openManifest opens a manifest, with O_DIRECT on FUSE (see
// ReadManifestFile). FUSE needs no buffer alignment for O_DIRECT.
func openManifest(path string) (*os.File, error) {
	if magic, err := statfsType(path); err == nil && magic == fuseSuperMagic {
		f, _, err := openRead(path, true)
		return f, err
	}
	return os.Open(path)
}
