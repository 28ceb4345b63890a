package scan

import "github.com/parquet-go/parquet-go"

// Assembling nested values (Dremel record assembly) from the values of one
// row of every leaf under a field. Each parquet.Value carries its
// repetition and definition levels:
//
//   - a node is null when the first value of its first leaf has a
//     definition level below the node's;
//   - a list or map has no elements when that level is below the level of
//     its repeated group; otherwise each value whose repetition level equals
//     the group's starts a new element, in every leaf alike.
//
// Malformed levels never panic: a leaf with fewer elements than its
// siblings gives nulls.

// value assembles the value of n from ent, which holds for each leaf of the
// field the values of the instance being assembled.
func (n *node) value(ent [][]parquet.Value) any {
	if n.kind == kindNull || n.lo >= n.hi || n.lo >= len(ent) {
		return nil
	}
	es := ent[n.lo]
	if len(es) == 0 {
		return nil
	}
	d := es[0].DefinitionLevel()
	if d < n.def {
		return nil
	}
	switch n.kind {
	case kindLeaf:
		return n.conv(es[0])
	case kindStruct:
		vals := make([]any, len(n.children))
		for i, c := range n.children {
			vals[i] = c.value(ent)
		}
		return Struct{Names: n.names, Values: vals}
	case kindList:
		if d < n.repDef {
			return []any{}
		}
		elems := n.split(ent)
		out := make([]any, len(elems))
		for i, e := range elems {
			out[i] = n.elem.value(e)
		}
		return out
	case kindMap:
		if d < n.repDef {
			return Map{}
		}
		elems := n.split(ent)
		out := make(Map, len(elems))
		for i, e := range elems {
			out[i] = MapEntry{Key: n.key.value(e), Value: n.val.value(e)}
		}
		return out
	}
	return nil
}

// split cuts the values of n's leaves into the instances of n's elements.
// The result holds, per element, a slice indexed like ent in which only
// n's leaves are set.
func (n *node) split(ent [][]parquet.Value) [][][]parquet.Value {
	count := 0
	for i, v := range ent[n.lo] {
		if i == 0 || v.RepetitionLevel() <= n.rep {
			count++
		}
	}
	width := len(ent)
	flat := make([][]parquet.Value, count*width)
	out := make([][][]parquet.Value, count)
	for k := range out {
		out[k] = flat[k*width : (k+1)*width]
	}
	for leaf := n.lo; leaf < n.hi && leaf < width; leaf++ {
		es := ent[leaf]
		k, start := 0, 0
		for i := 1; i <= len(es); i++ {
			if i < len(es) && es[i].RepetitionLevel() > n.rep {
				continue
			}
			if k < count {
				out[k][leaf] = es[start:i]
			}
			k++
			start = i
		}
	}
	return out
}
