package scan

import "fmt"

// colBuffers are the buffers of one column's vectors, reused from batch
// to batch. A Vector points into them, or (without copying) into a page.
type colBuffers struct {
	ints   []int64
	floats []float64
	offs   []uint32
	data   []byte
	bools  []bool
	anys   []any
	nulls  []bool
	ns     nullSet
}

// grow returns (*buf)[:n], reallocating when its capacity is smaller.
// Every n is a batch's row count (at most BatchRows, plus one).
func grow[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n)
	}
	return (*buf)[:n]
}

// nullSet collects the nulls of one vector.
type nullSet struct {
	b   []bool
	any bool
}

func (s *nullSet) set(i int) {
	s.b[i] = true
	s.any = true
}

// startNulls prepares the null flags of a vector of n values; without
// may, no value can be null (set must not be called).
func (cb *colBuffers) startNulls(may bool, n int) *nullSet {
	cb.ns = nullSet{}
	if may {
		cb.ns.b = grow(&cb.nulls, n)
		clear(cb.ns.b)
	}
	return &cb.ns
}

// endNulls is the Nulls of the vector: nil when none was set.
func (cb *colBuffers) endNulls() []bool {
	if cb.ns.any {
		return cb.ns.b
	}
	return nil
}

// start prepares v's storage for n values set one by one with store.
func (cb *colBuffers) start(v *Vector, n int) {
	cb.startNulls(true, n)
	switch v.Kind {
	case KindInt:
		v.Int = grow(&cb.ints, n)
	case KindFloat:
		v.Float = grow(&cb.floats, n)
	case KindBytes:
		v.Offsets = grow(&cb.offs, n+1)
		v.Offsets[0] = 0
		cb.data = cb.data[:0]
	case KindBool:
		v.Bool = grow(&cb.bools, n)
	default:
		v.Any = grow(&cb.anys, n)
	}
}

// store sets value o of v to x, a value as Scan.File gives it.
func (cb *colBuffers) store(v *Vector, o int, x any) error {
	if x == nil {
		cb.ns.set(o)
		switch v.Kind {
		case KindInt:
			v.Int[o] = 0
		case KindFloat:
			v.Float[o] = 0
		case KindBytes:
			v.Offsets[o+1] = uint32(len(cb.data))
		case KindBool:
			v.Bool[o] = false
		default:
			v.Any[o] = nil
		}
		return nil
	}
	ok := true
	switch v.Kind {
	case KindInt:
		switch t := x.(type) {
		case int64:
			v.Int[o] = t
		case int32:
			v.Int[o] = int64(t)
		case int16:
			v.Int[o] = int64(t)
		case int8:
			v.Int[o] = int64(t)
		default:
			ok = false
		}
	case KindFloat:
		switch t := x.(type) {
		case float64:
			v.Float[o] = t
		case float32:
			v.Float[o] = float64(t)
		default:
			ok = false
		}
	case KindBytes:
		switch t := x.(type) {
		case string:
			cb.data = append(cb.data, t...)
		case []byte:
			cb.data = append(cb.data, t...)
		default:
			ok = false
		}
		v.Offsets[o+1] = uint32(len(cb.data))
	case KindBool:
		v.Bool[o], ok = x.(bool)
	default:
		v.Any[o] = x
	}
	if !ok {
		return fmt.Errorf("a value of type %T in a column of type %s", x, v.Type)
	}
	return nil
}

// end finishes a vector filled with store.
func (cb *colBuffers) end(v *Vector) {
	if v.Kind == KindBytes {
		v.Data = cb.data
	}
	v.Nulls = cb.endNulls()
}
