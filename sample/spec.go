package sample

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/deltafs/deltafs/snapshot"
)

// Spec decides what a sample file holds. The zero value means all defaults:
// id from the `id` column when the table has one, data from the table's only
// binary column (raw bytes, extension sniffed), else the row as JSON; one
// shard; no class folders.
type Spec struct {
	// IDColumn names the files; "" means `id` when the table has such a
	// column, else an id derived from the data file and row position.
	IDColumn string
	// DataColumn holds each sample's bytes; "" means the only binary
	// column, when the table has exactly one; NoData ("-") means none.
	// With no data column a sample is its row as JSON.
	DataColumn string
	// Image, when set (H > 0), says the data column holds raw uint8 pixels
	// of that shape, encoded as ImageFormat.
	Image Image
	// ImageFormat is FormatPNG (default) or FormatPNM.
	ImageFormat string
	// ClassColumn, when set, puts each sample in a folder named by its value.
	ClassColumn string
	// Shards splits every version into that many shards (0 means 1).
	Shards int
	// Layout is how rows are split into shards: LayoutBalanced (the
	// default with a class column) or LayoutContiguous (the default
	// without). See package doc, "Shards".
	Layout string
	// SkipUnreadable leaves out the rows of data files that cannot be
	// indexed, with a warning, instead of failing the shards that need
	// them. Off by default: a loader then sees every live row of the
	// version or an error.
	SkipUnreadable bool
}

// Validate checks the spec on its own (columns are checked per version).
func (s *Spec) Validate() error {
	if s.Shards < 0 || s.Shards > 1<<16 {
		return fmt.Errorf("--shards %d: want 1..65536", s.Shards)
	}
	switch s.ImageFormat {
	case "", FormatPNG:
	case FormatPNM:
		if s.Image.H > 0 && s.Image.C != 1 && s.Image.C != 3 {
			return fmt.Errorf("--image-format pnm needs 1 or 3 channels, not %d", s.Image.C)
		}
	default:
		return fmt.Errorf("--image-format %q: want png or pnm", s.ImageFormat)
	}
	if s.ImageFormat != "" && s.Image.H == 0 {
		return errors.New("--image-format needs --image")
	}
	switch s.Layout {
	case "", LayoutBalanced, LayoutContiguous:
	default:
		return fmt.Errorf("--shard-layout %q: want %s or %s", s.Layout, LayoutBalanced, LayoutContiguous)
	}
	return nil
}

func (s *Spec) shards() int {
	if s.Shards <= 0 {
		return 1
	}
	return s.Shards
}

// mode is what a sample file holds.
type mode int

const (
	modeJSON  mode = iota // the row as JSON
	modeBytes             // the data column's bytes
	modeImage             // the data column's pixels, encoded
)

// column is a resolved column of one version's schema.
type column struct {
	name     string // logical
	phys     string // physical (in data files)
	typ      string // Delta type name
	numeric  bool
	partKey  bool // a partition column
	implicit bool // chosen by default, not by a flag
}

// resolved is a Spec applied to one version's schema.
type resolved struct {
	mode    mode
	layout  string  // LayoutBalanced or LayoutContiguous
	id      *column // nil: derived ids
	data    *column // nil in modeJSON
	path    *column // a `path` string column, for extensions in modeBytes
	class   *column // nil: no class folders
	image   Image
	format  string
	pngSize int64
	ext     string // fixed extension (image and JSON modes)
	key     string // identity of what a file's sample metadata depends on
}

// NoData as Spec.DataColumn asks for rows as JSON even when the table has
// a binary column.
const NoData = "-"

var numericTypes = map[string]bool{"byte": true, "short": true, "integer": true, "long": true, "float": true, "double": true}

func (s *Spec) resolve(snap *snapshot.Snapshot) (*resolved, error) {
	schema := snap.Schema
	if schema == nil {
		return nil, errors.New("version has no schema")
	}
	parts := map[string]bool{}
	for _, p := range snap.Metadata.PartitionColumns {
		parts[p] = true
	}
	col := func(flag, name string, implicit bool) (*column, error) {
		f := schema.Field(name)
		if f == nil {
			if implicit {
				return nil, nil
			}
			return nil, fmt.Errorf("%s %s: no such column (columns: %s)", flag, name, strings.Join(schema.Names(), ", "))
		}
		c := &column{name: f.Name, phys: f.PhysicalName(), partKey: parts[f.Name], implicit: implicit}
		if p, ok := f.Type.(*snapshot.PrimitiveType); ok {
			c.typ = p.Name
			_, scale, dec := p.Decimal()
			c.numeric = numericTypes[p.Name] || dec && scale == 0
		} else {
			c.typ = f.Type.String()
		}
		return c, nil
	}
	r := &resolved{}
	var err error
	if s.IDColumn != "" {
		r.id, err = col("--id-column", s.IDColumn, false)
	} else {
		r.id, err = col("", "id", true)
	}
	if err != nil {
		return nil, err
	}
	if s.DataColumn == NoData {
		if s.Image.H > 0 {
			return nil, errors.New("--image needs a data column")
		}
	} else if s.DataColumn != "" {
		if r.data, err = col("--data-column", s.DataColumn, false); err != nil {
			return nil, err
		}
	} else {
		var bins []string
		for _, f := range schema.Fields {
			if p, ok := f.Type.(*snapshot.PrimitiveType); ok && p.Name == "binary" {
				bins = append(bins, f.Name)
			}
		}
		if len(bins) == 1 {
			r.data, _ = col("", bins[0], true)
		} else if s.Image.H > 0 {
			if len(bins) == 0 {
				return nil, errors.New("--image: the table has no binary column; name one with --data-column")
			}
			return nil, fmt.Errorf("--image: the table has %d binary columns (%s); choose one with --data-column", len(bins), strings.Join(bins, ", "))
		}
	}
	if r.data != nil {
		if r.data.typ != "binary" && r.data.typ != "string" {
			return nil, fmt.Errorf("data column %s is %s; it must be binary (or string)", r.data.name, r.data.typ)
		}
		if r.data.partKey {
			return nil, fmt.Errorf("data column %s is a partition column", r.data.name)
		}
	}
	if s.ClassColumn != "" {
		if r.class, err = col("--class-column", s.ClassColumn, false); err != nil {
			return nil, err
		}
	}
	switch {
	case r.data == nil:
		r.mode, r.ext = modeJSON, ".json"
	case s.Image.H > 0:
		r.mode, r.image, r.format = modeImage, s.Image, s.ImageFormat
		if r.format == "" {
			r.format = FormatPNG
		}
		if r.format == FormatPNG {
			r.ext, r.pngSize = ".png", s.Image.PNGSize()
		} else {
			r.ext, r.pngSize = s.Image.pnmExt(), s.Image.PNMSize()
		}
	default:
		r.mode = modeBytes
		if f := schema.Field("path"); f != nil && f.Type.String() == "string" && r.data.name != "path" {
			r.path, _ = col("", "path", true)
		}
	}
	r.layout = s.Layout
	if r.layout == "" {
		r.layout = LayoutContiguous
		if r.class != nil {
			r.layout = LayoutBalanced
		}
	}
	r.key = r.identity()
	return r, nil
}

// identity is the part of a file's memo key that depends on the spec.
func (r *resolved) identity() string {
	name := func(c *column) string {
		if c == nil {
			return "-"
		}
		return strconv.Quote(c.phys) + "/" + strconv.Quote(c.name)
	}
	return fmt.Sprintf("m%d id=%s data=%s path=%s class=%s", r.mode, name(r.id), name(r.data), name(r.path), name(r.class))
}

// Describe is the spec as resolved against a version's schema, for the log
// line printed at mount.
func (s *Spec) Describe(snap *snapshot.Snapshot) (string, error) {
	r, err := s.resolve(snap)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if r.id != nil {
		fmt.Fprintf(&b, "id=%s", r.id.name)
	} else {
		b.WriteString("id=<hash of data file>-<row>")
	}
	switch r.mode {
	case modeJSON:
		b.WriteString(" data=<row as JSON>")
	case modeBytes:
		fmt.Fprintf(&b, " data=%s (bytes, extension sniffed)", r.data.name)
	case modeImage:
		fmt.Fprintf(&b, " data=%s (raw %s pixels as %s, %d bytes each)", r.data.name, r.image, r.format, r.pngSize)
	}
	if r.class != nil {
		fmt.Fprintf(&b, " class=%s", r.class.name)
	}
	fmt.Fprintf(&b, " shards=%d layout=%s", s.shards(), r.layout)
	return b.String(), nil
}
