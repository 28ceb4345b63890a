package sample

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/deltafs/deltafs/filter"
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
	// Where, when set, is a SQL boolean expression over the table's
	// columns (package filter), parsed once by whoever reads it
	// (filter.Parse: the command line's --where): only the rows it holds
	// TRUE for are samples. Data files whose partition values or
	// statistics exclude it are never opened. Each version binds it to
	// its schema once (where.go).
	Where *filter.Expr
}

// Validate checks the spec on its own (columns are checked per version).
func (s *Spec) Validate() error {
	if s.Shards < 0 || s.Shards > 1<<16 {
		return fmt.Errorf("--shards %d: want 1..65536", s.Shards)
	}
	if err := s.validateImage(); err != nil {
		return err
	}
	switch s.Layout {
	case "", LayoutBalanced, LayoutContiguous:
	default:
		return fmt.Errorf("--shard-layout %q: want %s or %s", s.Layout, LayoutBalanced, LayoutContiguous)
	}
	return nil
}

// bindWhere binds Spec.Where to a version's schema (nil without one).
func (s *Spec) bindWhere(snap *snapshot.Snapshot) (*filter.Filter, error) {
	if s.Where == nil {
		return nil, nil
	}
	return filter.Bind(s.Where, snap)
}

func (s *Spec) shards() int {
	if s.Shards <= 0 {
		return 1
	}
	return s.Shards
}

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
	mode   mode    // what a sample holds (mode.go)
	layout string  // LayoutBalanced or LayoutContiguous
	id     *column // nil: derived ids
	data   *column // nil: none (rows as JSON)
	class  *column // nil: no class folders
	// filter selects the samples among the live rows (nil: all of them).
	filter *filter.Filter
	key    string // identity of what a file's sample metadata depends on
}

// NoData as Spec.DataColumn asks for rows as JSON even when the table has
// a binary column.
const NoData = "-"

var numericTypes = map[string]bool{"byte": true, "short": true, "integer": true, "long": true, "float": true, "double": true}

// resolve applies the spec to snap's schema; where is Spec.Where bound to
// it (Version.bound: the version binds it once).
func (s *Spec) resolve(snap *snapshot.Snapshot, where func() (*filter.Filter, error)) (*resolved, error) {
	schema := snap.Schema
	if schema == nil {
		return nil, errors.New("version has no schema")
	}
	parts := map[string]bool{}
	for _, p := range snap.Metadata.PartitionColumns {
		parts[p] = true
	}
	var col colFunc = func(flag, name string, implicit bool) (*column, error) {
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
	switch s.DataColumn {
	case NoData:
	case "":
		if bins := binaryColumns(schema); len(bins) == 1 {
			r.data, _ = col("", bins[0], true)
		}
	default:
		if r.data, err = col("--data-column", s.DataColumn, false); err != nil {
			return nil, err
		}
	}
	if r.mode, err = s.newMode(schema, r.data, col); err != nil {
		return nil, err
	}
	if s.ClassColumn != "" {
		if r.class, err = col("--class-column", s.ClassColumn, false); err != nil {
			return nil, err
		}
	}
	if err := r.checkRoles(); err != nil {
		return nil, err
	}
	if r.filter, err = where(); err != nil {
		return nil, err
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

// checkRoles refuses the roles a column cannot serve. A column may serve
// several (`--id-column path --class-column label` with the mode's `path`,
// `--id-column label --class-column label`): they are read once
// (buildFile). What cannot be served is bytes as names: a binary id or
// class column, or a class column that is the data column (each sample's
// bytes would name its folder, one folder a sample).
func (r *resolved) checkRoles() error {
	if r.id != nil && !r.id.implicit && r.id.typ == "binary" {
		return fmt.Errorf("--id-column %s is binary: file names are not made of bytes; use a string or integer column, or leave --id-column out for ids derived from the row", r.id.name)
	}
	if r.class == nil {
		return nil
	}
	if r.data != nil && r.class.name == r.data.name {
		return fmt.Errorf("--class-column %s is the data column: each sample's bytes would name its folder; use a column of labels (or --data-column with another column)", r.class.name)
	}
	if r.class.typ == "binary" {
		return fmt.Errorf("--class-column %s is binary: folder names are not made of bytes; use a string or integer column of labels", r.class.name)
	}
	return nil
}

// identity is the part of a file's memo key that depends on the spec.
func (r *resolved) identity() string {
	name := func(c *column) string {
		if c == nil {
			return "-"
		}
		return strconv.Quote(c.phys) + "/" + strconv.Quote(c.name)
	}
	var path *column // the mode's column (only bytesMode has one: a `path`)
	if cs := r.mode.columns(); len(cs) > 0 {
		path = cs[0]
	}
	id := fmt.Sprintf("%s id=%s data=%s path=%s class=%s", r.mode.identity(), name(r.id), name(r.data), name(path), name(r.class))
	if r.filter != nil {
		// Only with a filter, so that the keys of unfiltered indexes
		// (and the disk caches holding them) stay as they were.
		id += " where=" + r.filter.Key()
	}
	return id
}

// fileSpec is what a file's sample metadata depends on besides the file
// itself: the resolved spec and what the mode adds.
func (r *resolved) fileSpec(v *Version) string { return r.key + r.mode.fileKey(v) }

// Describe is the spec as resolved against the version's schema, for the
// log line printed at mount, with what its filter made of the data files
// (FilterCounts). Its error is the cause alone, as the spec's resolution
// gives it: the caller names the table and version.
func (v *Version) Describe() (string, error) {
	v.mu.Lock()
	err := v.resolveLocked()
	r := v.spec
	v.mu.Unlock()
	if err != nil {
		if se := (*SpecError)(nil); errors.As(err, &se) {
			return "", se.Err
		}
		return "", err
	}
	s := &v.s.opts.Spec
	var b strings.Builder
	if r.id != nil {
		fmt.Fprintf(&b, "id=%s", r.id.name)
	} else {
		b.WriteString("id=<hash of data file>-<row>")
	}
	b.WriteString(" " + r.mode.describe())
	if r.class != nil {
		fmt.Fprintf(&b, " class=%s", r.class.name)
	}
	fmt.Fprintf(&b, " shards=%d layout=%s", s.shards(), r.layout)
	if r.filter != nil {
		c := v.where().counts
		fmt.Fprintf(&b, " where=%q files_pruned=%d files_skipped=%d files_read=%d", filter.Brief(r.filter.String()), c.Pruned, c.Skipped, c.Read)
	}
	return b.String(), nil
}
