package filter

import (
	"github.com/deltafs/deltafs/scan"
)

// tri is SQL's three-valued logic: a row is kept when its filter is TRUE.
type tri uint8

const (
	tFalse tri = iota
	tTrue
	tNull
)

func not3(a tri) tri {
	switch a {
	case tTrue:
		return tFalse
	case tFalse:
		return tTrue
	}
	return tNull
}

func and3(a, b tri) tri {
	switch {
	case a == tFalse || b == tFalse:
		return tFalse
	case a == tNull || b == tNull:
		return tNull
	}
	return tTrue
}

func or3(a, b tri) tri {
	switch {
	case a == tTrue || b == tTrue:
		return tTrue
	case a == tNull || b == tNull:
		return tNull
	}
	return tFalse
}

// opHolds applies a comparison operator to the order of two values.
func opHolds(op string, c int) bool {
	switch op {
	case "=":
		return c == 0
	case "<>":
		return c != 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	case ">=":
		return c >= 0
	}
	return false
}

// Match sets keep[i] to whether row i of batch b matches the filter (its
// expression is TRUE; FALSE and NULL rows are left out). at[k] is the
// index in b.Cols of the filter's column k (Columns order). The
// expression is evaluated a column at a time over the batch.
func (f *Filter) Match(b *scan.Batch, at []int, keep []bool) {
	n := len(b.Rows)
	vecs := make([]*scan.Vector, len(f.cols))
	for k, i := range at {
		vecs[k] = &b.Cols[i]
	}
	e := evaluator{f: f, vecs: vecs, n: n}
	out := e.eval(f.root)
	for i := range n {
		keep[i] = out[i] == tTrue
	}
}

// evaluator evaluates nodes over a batch, one result slice per node.
type evaluator struct {
	f    *Filter
	vecs []*scan.Vector
	n    int
}

func (e *evaluator) eval(n node) []tri {
	out := make([]tri, e.n)
	switch n := n.(type) {
	case *constNode:
		for i := range out {
			out[i] = n.v
		}
	case *notNode:
		x := e.eval(n.x)
		for i := range out {
			out[i] = not3(x[i])
		}
	case *andNode:
		for i := range out {
			out[i] = tTrue
		}
		for _, x := range n.xs {
			r := e.eval(x)
			for i := range out {
				out[i] = and3(out[i], r[i])
			}
		}
	case *orNode:
		for _, x := range n.xs {
			r := e.eval(x)
			for i := range out {
				out[i] = or3(out[i], r[i])
			}
		}
	case *nullNode:
		v := e.vecs[n.col]
		for i := range out {
			if v.IsNull(i) != n.not {
				out[i] = tTrue
			}
		}
	case *cmpNode:
		k, v := e.f.cols[n.col].kind, e.vecs[n.col]
		if v.Kind == scan.KindInt && k == kInt && n.lit.r == nil {
			// The common case, without a value per row.
			for i := range out {
				switch {
				case v.IsNull(i):
					out[i] = tNull
				case opHolds(n.op, cmpInt(v.Int[i], n.lit.i)):
					out[i] = tTrue
				}
			}
			break
		}
		for i := range out {
			x, ok := cell(k, v, i)
			switch {
			case !ok:
				out[i] = tNull
			case opHolds(n.op, compare(k, x, n.lit)):
				out[i] = tTrue
			}
		}
	case *inNode:
		k, v := e.f.cols[n.col].kind, e.vecs[n.col]
		for i := range out {
			x, ok := cell(k, v, i)
			switch {
			case !ok:
				out[i] = tNull
			case n.contains(k, x):
				out[i] = tTrue
			case n.hasNull:
				out[i] = tNull
			}
		}
	}
	return out
}

// MatchRow reports whether a row matches the filter: vals holds values as
// scan.Scan.File gives them, at[k] the index in vals of the filter's
// column k. It is Match for one row (for readers of rows, such as
// `deltafs cat`).
func (f *Filter) MatchRow(vals []any, at []int) bool {
	b := scan.Batch{Rows: []int64{0}, Cols: make([]scan.Vector, len(at))}
	idx := make([]int, len(at))
	for k, i := range at {
		b.Cols[k] = scan.Vector{Kind: scan.KindAny, Any: vals[i : i+1]}
		if vals[i] == nil {
			b.Cols[k].Nulls = []bool{true}
		}
		idx[k] = k
	}
	keep := []bool{false}
	f.Match(&b, idx, keep)
	return keep[0]
}
