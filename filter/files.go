package filter

import (
	"github.com/deltafs/deltafs/scan"
	"github.com/deltafs/deltafs/snapshot"
)

// Decision is what the log says of a data file under a filter.
type Decision uint8

const (
	// Some: some rows may match; the file's rows are filtered.
	Some Decision = iota
	// All: every row matches, by its partition values; the file is read
	// without filtering its rows.
	All
	// Pruned: its partition values match no row; never opened.
	Pruned
	// Skipped: its statistics say no row matches; never opened.
	Skipped
)

func (d Decision) String() string {
	switch d {
	case All:
		return "all"
	case Pruned:
		return "pruned"
	case Skipped:
		return "skipped"
	}
	return "some"
}

// outcomes is a set of the values a (sub)expression may take over the
// rows of one file.
type outcomes uint8

const (
	oTrue  outcomes = 1 << tTrue
	oFalse outcomes = 1 << tFalse
	oNull  outcomes = 1 << tNull
	oAny            = oTrue | oFalse | oNull
)

// summary is what the log says of one column over one file's rows.
type summary struct {
	// exact: every row holds val (null when isNull): a partition value.
	exact  bool
	isNull bool
	val    value
	// Otherwise, from statistics: non-null values lie in [lo, hi] where
	// hasLo / hasHi; nulls counts the nulls (-1: unknown) of rows rows
	// (-1: unknown).
	hasLo, hasHi bool
	lo, hi       value
	nulls, rows  int64
}

var unknown = summary{nulls: -1, rows: -1}

// Decide says what the log tells of file f: whether its partition values
// exclude it (Pruned) or show that every row matches (All), else whether
// its statistics exclude it (Skipped); else Some. Partition values are
// exact: the data file holds no copy to contradict them. Statistics only
// ever skip: a file whose statistics say every row matches is still
// Some, its rows evaluated one by one, so statistics that lie in that
// direction cannot admit a row. In the other they are trusted, as Delta
// readers trust them (a file whose statistics wrongly exclude it is
// skipped all the same), and used only where they bound the values
// exactly (see stats.go). Deletion vectors need nothing: they
// only remove rows, and statistics cover a file's rows before deletion.
func (f *Filter) Decide(snap *snapshot.Snapshot, a *snapshot.AddFile) Decision {
	sums := make([]summary, len(f.cols))
	anyPart := false
	for i, c := range f.cols {
		sums[i] = unknown
		if c.Partition {
			if s, ok := partitionSummary(snap, a, c); ok {
				sums[i], anyPart = s, true
			}
		}
	}
	if anyPart {
		o := f.outcomes(f.root, sums)
		if o&oTrue == 0 {
			return Pruned
		}
		if o == oTrue {
			return All
		}
	}
	st := parseStats(a.Stats, f.cols)
	if st == nil {
		return Some
	}
	for i, c := range f.cols {
		if !c.Partition || !sums[i].exact {
			sums[i] = st.summary(i, c)
		}
	}
	if f.outcomes(f.root, sums)&oTrue == 0 {
		return Skipped
	}
	return Some
}

// partitionSummary is the partition value of column c for file a.
func partitionSummary(snap *snapshot.Snapshot, a *snapshot.AddFile, c *Column) (summary, bool) {
	raw, ok := a.PartitionValues[c.Phys]
	if !ok && c.Phys != c.Name {
		// Some writers key by logical name even under column mapping
		// (as snapshot.PartitionValue reads them).
		raw, ok = a.PartitionValues[c.Name]
	}
	if !ok {
		return summary{exact: true, isNull: true}, true
	}
	x, err := scan.ParsePartitionValue(&snapshot.PrimitiveType{Name: c.Type}, raw)
	if err != nil {
		// The scan fails this file; the filter does not decide for it.
		return unknown, false
	}
	v, ok := fromGo(c.kind, x)
	if !ok {
		return summary{exact: true, isNull: true}, true
	}
	return summary{exact: true, val: v}, true
}

// outcomes is the set of values n may take on the rows the summaries
// describe. It over-approximates (terms are taken as independent), which
// only ever keeps a file that could have been left out.
func (f *Filter) outcomes(n node, sums []summary) outcomes {
	switch n := n.(type) {
	case *constNode:
		return 1 << n.v
	case *notNode:
		x := f.outcomes(n.x, sums)
		var o outcomes
		for _, t := range []tri{tTrue, tFalse, tNull} {
			if x&(1<<t) != 0 {
				o |= 1 << not3(t)
			}
		}
		return o
	case *andNode, *orNode:
		xs, op := []node(nil), and3
		if a, ok := n.(*andNode); ok {
			xs = a.xs
		} else {
			xs, op = n.(*orNode).xs, or3
		}
		var acc outcomes
		for i, x := range xs {
			o := f.outcomes(x, sums)
			if i == 0 {
				acc = o
				continue
			}
			var next outcomes
			for _, a := range []tri{tTrue, tFalse, tNull} {
				if acc&(1<<a) == 0 {
					continue
				}
				for _, b := range []tri{tTrue, tFalse, tNull} {
					if o&(1<<b) != 0 {
						next |= 1 << op(a, b)
					}
				}
			}
			acc = next
		}
		return acc
	case *nullNode:
		s := sums[n.col]
		var o outcomes
		isNull, notNull := s.mayBeNull(), s.mayBeNonNull()
		if isNull {
			o |= 1 << boolTri(!n.not)
		}
		if notNull {
			o |= 1 << boolTri(n.not)
		}
		return o
	case *cmpNode:
		k, s := f.cols[n.col].kind, sums[n.col]
		if s.exact {
			if s.isNull {
				return oNull
			}
			return 1 << boolTri(opHolds(n.op, compare(k, s.val, n.lit)))
		}
		var o outcomes
		if s.mayBeNull() {
			o |= oNull
		}
		if s.mayBeNonNull() {
			o |= s.cmpOutcomes(k, n.op, n.lit)
		}
		return o
	case *inNode:
		k, s := f.cols[n.col].kind, sums[n.col]
		miss := oFalse
		if n.hasNull {
			miss = oNull
		}
		if s.exact {
			switch {
			case s.isNull:
				return oNull
			case n.contains(k, s.val):
				return oTrue
			}
			return miss
		}
		var o outcomes
		if s.mayBeNull() {
			o |= oNull
		}
		if s.mayBeNonNull() {
			for _, v := range n.list {
				if s.inRange(k, v) {
					o |= oTrue
					break
				}
			}
			// A miss is possible unless every row holds one listed value.
			if !(s.single(k) && n.contains(k, s.lo)) {
				o |= miss
			}
		}
		return o
	}
	return oAny
}

func boolTri(b bool) tri {
	if b {
		return tTrue
	}
	return tFalse
}

func (s *summary) mayBeNull() bool {
	if s.exact {
		return s.isNull
	}
	return s.nulls != 0 && s.rows != 0
}

func (s *summary) mayBeNonNull() bool {
	if s.exact {
		return !s.isNull
	}
	if s.rows == 0 {
		return false
	}
	return s.nulls < 0 || s.rows < 0 || s.nulls < s.rows
}

// inRange reports whether v may be a value of the column.
func (s *summary) inRange(k kind, v value) bool {
	return (!s.hasLo || compare(k, s.lo, v) <= 0) && (!s.hasHi || compare(k, v, s.hi) <= 0)
}

// single reports whether every non-null value is the same one.
func (s *summary) single(k kind) bool {
	return s.hasLo && s.hasHi && compare(k, s.lo, s.hi) == 0
}

// cmpOutcomes is what col OP lit may give for the non-null values of
// the column, bounded by [lo, hi] where known.
func (s *summary) cmpOutcomes(k kind, op string, lit value) outcomes {
	var lo, hi int // order of lo and hi against lit; unknown bounds are ∓inf
	lo, hi = -2, 2
	if s.hasLo {
		lo = compare(k, s.lo, lit)
	}
	if s.hasHi {
		hi = compare(k, s.hi, lit)
	}
	var t, f bool // may be TRUE, may be FALSE
	switch op {
	case "=":
		t = lo <= 0 && hi >= 0
		f = !(lo == 0 && hi == 0)
	case "<>":
		t = !(lo == 0 && hi == 0)
		f = lo <= 0 && hi >= 0
	case "<":
		t, f = lo < 0, hi >= 0
	case "<=":
		t, f = lo <= 0, hi > 0
	case ">":
		t, f = hi > 0, lo <= 0
	case ">=":
		t, f = hi >= 0, lo < 0
	}
	var o outcomes
	if t {
		o |= oTrue
	}
	if f {
		o |= oFalse
	}
	return o
}
