package scan

import (
	"fmt"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/snapshot"
)

// Resolving a Delta field against the Parquet schema of one data file: the
// result is a tree of nodes that knows, for every part of the value, which
// leaf column holds it and at which definition and repetition levels it is
// present, so that values can be assembled from the leaves' levels.

type nodeKind uint8

const (
	kindNull   nodeKind = iota // absent from the file: always null
	kindLeaf                   // a primitive value
	kindStruct                 // a group of named fields
	kindList                   // a LIST (3-level, 2-level or a bare repeated field)
	kindMap                    // a MAP of key_value groups
)

// node reads one part of a value.
type node struct {
	kind nodeKind
	def  int // definition level at and above which the value is not null
	// lo and hi delimit the leaves under this node in the field's leaf list;
	// the first of them tells whether the node is null.
	lo, hi int

	conv converter // leaf

	names    []string // struct: logical field names
	children []*node  // struct: in schema order

	rep      int   // list, map: repetition level of the repeated group
	repDef   int   // list, map: definition level at which an element exists
	elem     *node // list
	key, val *node // map
}

var nullNode = &node{kind: kindNull}

// resolver builds the nodes of one top-level field, collecting the leaf
// columns they read.
type resolver struct {
	mode   string // column mapping: "none", "name" or "id"
	leaves []*parquet.Column
}

// child finds the column of field f among the children of group, per the
// column mapping mode; nil when the file has none (a column added later).
func (r *resolver) child(group *parquet.Column, f *snapshot.StructField) *parquet.Column {
	cols := group.Columns()
	switch r.mode {
	case "id":
		// By field id; by physical name only in a group whose columns
		// carry no ids at all (a file that has ids but not this one lacks
		// the column: null, as the protocol says).
		hasIDs := false
		id, ok := f.FieldID()
		for _, c := range cols {
			if c.ID() != 0 {
				hasIDs = true
				if ok && int64(c.ID()) == id {
					return c
				}
			}
		}
		if hasIDs {
			return nil
		}
		return byName(cols, f.PhysicalName(), false)
	case "name":
		return byName(cols, f.PhysicalName(), false)
	}
	return byName(cols, f.Name, true)
}

// byName finds a column by exact name, else (with fold) by the only
// case-insensitive match.
func byName(cols []*parquet.Column, name string, fold bool) *parquet.Column {
	for _, c := range cols {
		if c.Name() == name {
			return c
		}
	}
	if !fold {
		return nil
	}
	var found *parquet.Column
	for _, c := range cols {
		if strings.EqualFold(c.Name(), name) {
			if found != nil {
				return nil
			}
			found = c
		}
	}
	return found
}

// build makes the node reading Delta type dt from column col. asElement
// is set when col is the repeated group of a 2-level list, whose
// repetition the list node already accounts for.
func (r *resolver) build(dt snapshot.DataType, col *parquet.Column, asElement bool) (*node, error) {
	if col.Repeated() && !asElement {
		if _, ok := dt.(*snapshot.ArrayType); !ok {
			if _, ok := dt.(*snapshot.MapType); !ok {
				return nil, fmt.Errorf("column %s is repeated in the file, but the table type is %s", colPath(col), dt)
			}
		}
	}
	switch t := dt.(type) {
	case *snapshot.PrimitiveType:
		if !col.Leaf() {
			return nil, fmt.Errorf("column %s is a group in the file, but the table type is %s", colPath(col), t)
		}
		if t.Name == "variant" {
			return nil, fmt.Errorf("column %s: type variant is not supported", colPath(col))
		}
		conv, err := newConverter(t, physicalOf(col))
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", colPath(col), err)
		}
		n := &node{kind: kindLeaf, def: col.MaxDefinitionLevel(), conv: conv, lo: len(r.leaves)}
		r.leaves = append(r.leaves, col)
		n.hi = len(r.leaves)
		return n, nil

	case *snapshot.StructType:
		if col.Leaf() {
			return nil, fmt.Errorf("column %s is primitive in the file, but the table type is a struct", colPath(col))
		}
		n := &node{kind: kindStruct, def: col.MaxDefinitionLevel(), lo: len(r.leaves)}
		n.names = make([]string, len(t.Fields))
		n.children = make([]*node, len(t.Fields))
		for i := range t.Fields {
			f := &t.Fields[i]
			n.names[i] = f.Name
			c := r.child(col, f)
			if c == nil {
				n.children[i] = nullNode
				continue
			}
			cn, err := r.build(f.Type, c, false)
			if err != nil {
				return nil, err
			}
			n.children[i] = cn
		}
		if len(r.leaves) == n.lo {
			// No field of the struct is in the file: read one leaf of the
			// group anyway, for its levels (is the struct null?).
			if l := firstLeaf(col); l != nil {
				r.leaves = append(r.leaves, l)
			}
		}
		n.hi = len(r.leaves)
		return n, nil

	case *snapshot.ArrayType:
		n := &node{kind: kindList, lo: len(r.leaves)}
		var elem *parquet.Column
		if col.Repeated() && !asElement {
			// A bare repeated field: a list that is never null.
			n.def, n.rep, n.repDef = col.MaxDefinitionLevel()-1, col.MaxRepetitionLevel(), col.MaxDefinitionLevel()
			elem = col
		} else {
			rpt, err := repeatedChild(col, "list")
			if err != nil {
				return nil, err
			}
			n.def, n.rep, n.repDef = col.MaxDefinitionLevel(), rpt.MaxRepetitionLevel(), rpt.MaxDefinitionLevel()
			// Parquet's backward-compatibility rules for lists: the
			// repeated field is the element when it is primitive, has
			// several fields, or is named "array" or "<list>_tuple";
			// otherwise its only field is (3-level lists).
			kids := rpt.Columns()
			if rpt.Leaf() || len(kids) != 1 || rpt.Name() == "array" || rpt.Name() == col.Name()+"_tuple" {
				elem = rpt
			} else {
				elem = kids[0]
			}
		}
		en, err := r.build(t.ElementType, elem, elem.Repeated())
		if err != nil {
			return nil, err
		}
		n.elem = en
		n.hi = len(r.leaves)
		return n, nil

	case *snapshot.MapType:
		n := &node{kind: kindMap, lo: len(r.leaves)}
		kv := col
		if col.Repeated() && !asElement {
			n.def = col.MaxDefinitionLevel() - 1
		} else {
			var err error
			if kv, err = repeatedChild(col, "map"); err != nil {
				return nil, err
			}
			n.def = col.MaxDefinitionLevel()
		}
		if kv.Leaf() || len(kv.Columns()) == 0 {
			return nil, fmt.Errorf("column %s is not a map in the file", colPath(col))
		}
		n.rep, n.repDef = kv.MaxRepetitionLevel(), kv.MaxDefinitionLevel()
		kids := kv.Columns()
		keyCol, valCol := kids[0], (*parquet.Column)(nil)
		if len(kids) > 1 {
			valCol = kids[1]
		}
		if c := kv.Column("key"); c != nil {
			keyCol = c
		}
		if c := kv.Column("value"); c != nil {
			valCol = c
		}
		kn, err := r.build(t.KeyType, keyCol, false)
		if err != nil {
			return nil, err
		}
		n.key, n.val = kn, nullNode
		if valCol != nil && valCol != keyCol {
			if n.val, err = r.build(t.ValueType, valCol, false); err != nil {
				return nil, err
			}
		}
		n.hi = len(r.leaves)
		return n, nil
	}
	return nil, fmt.Errorf("column %s: unsupported table type %v", colPath(col), dt)
}

// repeatedChild returns the only child of a LIST or MAP group, which must
// be repeated.
func repeatedChild(col *parquet.Column, what string) (*parquet.Column, error) {
	kids := col.Columns()
	if col.Leaf() || len(kids) != 1 || !kids[0].Repeated() {
		return nil, fmt.Errorf("column %s is not a %s in the file", colPath(col), what)
	}
	return kids[0], nil
}

// firstLeaf is the first leaf column under col, or nil for an empty group.
func firstLeaf(col *parquet.Column) *parquet.Column {
	for !col.Leaf() {
		kids := col.Columns()
		if len(kids) == 0 {
			return nil
		}
		col = kids[0]
	}
	return col
}

func colPath(col *parquet.Column) string {
	return strings.Join(col.Path(), ".")
}
