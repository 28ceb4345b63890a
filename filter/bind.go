package filter

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/deltafs/deltafs/snapshot"
)

// Expr is a parsed expression, not yet bound to a schema: what Parse
// checks before anything is opened. Bind it to each version's schema.
type Expr struct {
	text string
	tree sexpr
}

// Parse parses a --where expression. Its errors are *Error values naming
// the part at fault.
func Parse(text string) (*Expr, error) {
	t, err := parse(text)
	if err != nil {
		return nil, err
	}
	return &Expr{text: strings.TrimSpace(text), tree: t}, nil
}

// String is the expression as the user wrote it (trimmed).
func (e *Expr) String() string { return e.text }

// Column is a column a filter reads.
type Column struct {
	Name      string // logical name (what scans project)
	Phys      string // physical name (data files, statistics, partition values)
	Type      string // Delta type name
	Partition bool   // a partition column
	kind      kind
}

// Filter is an expression bound to one version's schema: columns resolved
// to their logical and physical names and types, literals converted to
// the columns' types.
type Filter struct {
	expr *Expr
	cols []*Column
	root node
	key  string
}

// node is a bound expression.
type node interface{}

type (
	// andNode / orNode: SQL's three-valued AND / OR of their terms.
	andNode struct{ xs []node }
	orNode  struct{ xs []node }
	notNode struct{ x node }
	// cmpNode compares column col with a literal: col OP lit.
	cmpNode struct {
		col int
		op  string // = <> < <= > >=
		lit value
	}
	// inNode: col IN (list...) (a NULL in the list makes a miss NULL).
	inNode struct {
		col     int
		list    []value
		hasNull bool
		set     map[setKey]struct{} // the list as a set (long lists)
	}
	// nullNode: col IS NULL (not: IS NOT NULL).
	nullNode struct {
		col int
		not bool
	}
	// constNode: TRUE, FALSE or NULL.
	constNode struct{ v tri }
)

// Bind resolves e against snap's schema. Columns are found by logical
// name (exactly, else case-insensitively when only one matches); errors
// name the column or literal at fault.
func Bind(e *Expr, snap *snapshot.Snapshot) (*Filter, error) {
	if snap.Schema == nil {
		return nil, &Error{"the version has no schema"}
	}
	b := &binder{snap: snap, byName: map[string]int{}, parts: map[string]bool{}}
	for _, p := range snap.Metadata.PartitionColumns {
		b.parts[p] = true
	}
	root, err := b.bind(e.tree)
	if err != nil {
		return nil, err
	}
	f := &Filter{expr: e, cols: b.cols, root: root}
	var sb strings.Builder
	for _, c := range f.cols {
		fmt.Fprintf(&sb, "%q:%q:%s;", c.Name, c.Phys, c.Type)
	}
	writeNode(&sb, f, root)
	sum := sha256.Sum256([]byte(sb.String()))
	f.key = hex.EncodeToString(sum[:16])
	return f, nil
}

// String is the expression as the user wrote it.
func (f *Filter) String() string { return f.expr.text }

// Key identifies what the filter selects: its columns (logical and
// physical names, types) and its bound expression. Two filters with the
// same key select the same rows of any data file.
func (f *Filter) Key() string { return f.key }

// Columns are the columns the filter reads, in a fixed order.
func (f *Filter) Columns() []*Column { return f.cols }

// ColumnNames are the logical names of Columns.
func (f *Filter) ColumnNames() []string {
	out := make([]string, len(f.cols))
	for i, c := range f.cols {
		out[i] = c.Name
	}
	return out
}

type binder struct {
	snap   *snapshot.Snapshot
	cols   []*Column
	byName map[string]int
	parts  map[string]bool
}

func (b *binder) column(id *sIdent) (int, error) {
	schema := b.snap.Schema
	f := schema.Field(id.name)
	if f == nil {
		var match []*snapshot.StructField
		for i := range schema.Fields {
			if strings.EqualFold(schema.Fields[i].Name, id.name) {
				match = append(match, &schema.Fields[i])
			}
		}
		switch len(match) {
		case 0:
			names := schema.Names()
			list := strings.Join(names, ", ")
			if len(list) > 200 {
				list = list[:200] + "..."
			}
			return 0, &Error{fmt.Sprintf("no column %q (columns: %s)", id.name, list)}
		case 1:
			f = match[0]
		default:
			return 0, &Error{fmt.Sprintf("column %q matches %q and %q: quote the exact name", id.name, match[0].Name, match[1].Name)}
		}
	}
	if i, ok := b.byName[f.Name]; ok {
		return i, nil
	}
	p, ok := f.Type.(*snapshot.PrimitiveType)
	if !ok {
		return 0, &Error{fmt.Sprintf("column %s is %s: only columns of primitive types can be filtered", f.Name, f.Type)}
	}
	k, ok := kindOf(p.Name)
	if !ok {
		return 0, &Error{fmt.Sprintf("column %s is %s, which cannot be filtered", f.Name, p.Name)}
	}
	c := &Column{Name: f.Name, Phys: f.PhysicalName(), Type: p.Name, Partition: b.parts[f.Name], kind: k}
	if c.Partition {
		// Partition values are keyed as the snapshot says.
		for _, pc := range b.snap.PartitionColumns() {
			if pc.Name == f.Name {
				c.Phys = pc.PhysicalName
			}
		}
	}
	b.cols = append(b.cols, c)
	b.byName[f.Name] = len(b.cols) - 1
	return len(b.cols) - 1, nil
}

var flipOp = map[string]string{"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

func (b *binder) bind(x sexpr) (node, error) {
	switch x := x.(type) {
	case *sBool:
		xs := make([]node, len(x.xs))
		for i, y := range x.xs {
			n, err := b.bind(y)
			if err != nil {
				return nil, err
			}
			xs[i] = n
		}
		if x.and {
			return &andNode{xs: xs}, nil
		}
		return &orNode{xs: xs}, nil
	case *sNot:
		n, err := b.bind(x.x)
		if err != nil {
			return nil, err
		}
		return &notNode{x: n}, nil
	case *sCmp:
		return b.cmp(x.op, x.l, x.r, x.at)
	case *sBetween:
		lo, err := b.cmp(">=", x.x, x.lo, x.at)
		if err != nil {
			return nil, err
		}
		hi, err := b.cmp("<=", x.x, x.hi, x.at)
		if err != nil {
			return nil, err
		}
		var n node = &andNode{xs: []node{lo, hi}}
		if x.not {
			n = &notNode{x: n}
		}
		return n, nil
	case *sIn:
		id, ok := x.x.(*sIdent)
		if !ok {
			return nil, &Error{fmt.Sprintf("IN at offset %d needs a column on its left", x.at)}
		}
		ci, err := b.column(id)
		if err != nil {
			return nil, err
		}
		c := b.cols[ci]
		n := &inNode{col: ci}
		for _, l := range x.list {
			if l.kind == litNull {
				n.hasNull = true
				continue
			}
			v, err := literal(c, l)
			if err != nil {
				return nil, err
			}
			n.list = append(n.list, v)
		}
		n.index(c.kind)
		var out node = n
		if x.not {
			out = &notNode{x: n}
		}
		return out, nil
	case *sIsNull:
		id, ok := x.x.(*sIdent)
		if !ok {
			return nil, &Error{fmt.Sprintf("IS NULL at offset %d needs a column on its left", x.at)}
		}
		ci, err := b.column(id)
		if err != nil {
			return nil, err
		}
		return &nullNode{col: ci, not: x.not}, nil
	case *sIdent:
		// A bare boolean column: col = TRUE.
		ci, err := b.column(x)
		if err != nil {
			return nil, err
		}
		if b.cols[ci].kind != kBool {
			return nil, &Error{fmt.Sprintf("column %s is %s, not a condition: compare it with a value", b.cols[ci].Name, b.cols[ci].Type)}
		}
		return &cmpNode{col: ci, op: "=", lit: value{t: true}}, nil
	case *sLit:
		switch x.kind {
		case litTrue:
			return &constNode{v: tTrue}, nil
		case litFalse:
			return &constNode{v: tFalse}, nil
		case litNull:
			return &constNode{v: tNull}, nil
		}
		return nil, &Error{fmt.Sprintf("%s at offset %d is not a condition", litText(x), x.at)}
	}
	return nil, &Error{fmt.Sprintf("unsupported expression at offset %d", x.pos())}
}

// cmp binds l OP r, where one side is a column and the other a literal.
func (b *binder) cmp(op string, l, r sexpr, at int) (node, error) {
	id, lit := asIdent(l), asLit(r)
	if id == nil {
		id, lit = asIdent(r), asLit(l)
		op = flipOp[op]
	}
	if id == nil || lit == nil {
		switch {
		case asIdent(l) != nil && asIdent(r) != nil:
			return nil, &Error{fmt.Sprintf("the comparison at offset %d compares two columns: only a column with a literal is supported", at)}
		case asLit(l) != nil && asLit(r) != nil:
			return nil, &Error{fmt.Sprintf("the comparison at offset %d compares two literals: compare a column with a literal", at)}
		}
		return nil, &Error{fmt.Sprintf("the comparison at offset %d must compare a column with a literal", at)}
	}
	ci, err := b.column(id)
	if err != nil {
		return nil, err
	}
	if lit.kind == litNull {
		// SQL: a comparison with NULL is NULL, whatever the column holds.
		return &constNode{v: tNull}, nil
	}
	v, err := literal(b.cols[ci], lit)
	if err != nil {
		return nil, err
	}
	return &cmpNode{col: ci, op: op, lit: v}, nil
}

func asIdent(x sexpr) *sIdent { i, _ := x.(*sIdent); return i }
func asLit(x sexpr) *sLit     { l, _ := x.(*sLit); return l }

// index builds the set of a long IN list, for every kind: a row's value
// is then looked up once, whatever the list's length. (A short list is
// searched: fewer than 16 comparisons cost less than a hash.)
func (n *inNode) index(k kind) {
	if len(n.list) < 16 {
		return
	}
	n.set = make(map[setKey]struct{}, len(n.list))
	for _, v := range n.list {
		if key, ok := keyOf(k, v); ok {
			n.set[key] = struct{}{}
		}
	}
}

// setKey is a value as the key of an IN list's set: equal keys for
// values that compare equal, and only for them.
type setKey struct {
	i int64
	s string
}

// keyOf is v's set key; ok is false for a literal no column value of
// kind k can equal (an integer column's 2.5 or 2^70), left out of the set.
func keyOf(k kind, v value) (setKey, bool) {
	switch k {
	case kInt:
		return setKey{i: v.i}, v.r == nil
	case kTime:
		return setKey{i: v.i}, true
	case kFloat:
		f := v.f
		switch {
		case math.IsNaN(f):
			f = math.NaN() // NaN equals NaN: one key for every NaN
		case f == 0:
			f = 0 // -0.0 equals 0.0
		}
		return setKey{i: int64(math.Float64bits(f))}, true
	case kDec:
		return setKey{s: v.r.RatString()}, true // big.Rat is kept normalised
	case kBytes:
		return setKey{s: string(v.b)}, true
	case kBool:
		if v.t {
			return setKey{i: 1}, true
		}
		return setKey{}, true
	}
	return setKey{}, false
}

// contains reports whether the list holds x.
func (n *inNode) contains(k kind, x value) bool {
	if n.set != nil {
		key, ok := keyOf(k, x)
		if !ok {
			return false
		}
		_, ok = n.set[key]
		return ok
	}
	for _, v := range n.list {
		if compare(k, x, v) == 0 {
			return true
		}
	}
	return false
}

// writeNode writes the canonical form of a bound node (for Key).
func writeNode(sb *strings.Builder, f *Filter, n node) {
	switch n := n.(type) {
	case *andNode, *orNode:
		xs, op := []node(nil), ""
		if a, ok := n.(*andNode); ok {
			xs, op = a.xs, "and"
		} else {
			xs, op = n.(*orNode).xs, "or"
		}
		sb.WriteString("(" + op)
		for _, x := range xs {
			sb.WriteByte(' ')
			writeNode(sb, f, x)
		}
		sb.WriteByte(')')
	case *notNode:
		sb.WriteString("(not ")
		writeNode(sb, f, n.x)
		sb.WriteByte(')')
	case *cmpNode:
		fmt.Fprintf(sb, "(%s c%d %s)", n.op, n.col, valueText(f.cols[n.col].kind, n.lit))
	case *inNode:
		fmt.Fprintf(sb, "(in c%d null=%v", n.col, n.hasNull)
		vals := make([]string, len(n.list))
		for i, v := range n.list {
			vals[i] = valueText(f.cols[n.col].kind, v)
		}
		sort.Strings(vals)
		for _, v := range vals {
			sb.WriteString(" " + v)
		}
		sb.WriteByte(')')
	case *nullNode:
		fmt.Fprintf(sb, "(null c%d %v)", n.col, n.not)
	case *constNode:
		fmt.Fprintf(sb, "(const %d)", n.v)
	}
}

func valueText(k kind, v value) string {
	switch k {
	case kInt:
		if v.r != nil {
			return v.r.RatString()
		}
		return strconv.FormatInt(v.i, 10)
	case kTime:
		return strconv.FormatInt(v.i, 10)
	case kFloat:
		return strconv.FormatFloat(v.f, 'g', -1, 64)
	case kDec:
		return v.r.RatString()
	case kBytes:
		return strconv.Quote(string(v.b))
	case kBool:
		return strconv.FormatBool(v.t)
	}
	return "?"
}

// briefLen is the most of an expression's text that logs and
// _commit.json print.
const briefLen = 200

// Brief is an expression's text as logs and _commit.json print it: whole
// when short, else its first 200 bytes (cut at a character), "...", and
// its length. (Its Key tells filters apart whatever their length.)
func Brief(text string) string {
	text = strings.TrimSpace(text)
	if len(text) <= briefLen {
		return text
	}
	cut := briefLen
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", text[:cut], len(text))
}
