package sample

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/deltafs/deltafs/scan"
	"github.com/deltafs/deltafs/snapshot"
)

// classRange is the range of a numeric class column's values in a file.
type classRange struct {
	min, max float64
	any      bool // some non-null value was seen
}

func (c *classRange) add(f float64) {
	if !c.any {
		c.min, c.max, c.any = f, f, true
		return
	}
	c.min, c.max = math.Min(c.min, f), math.Max(c.max, f)
}

// classWidth is the zero-padding width of a version's numeric class names:
// the digits of the largest class value of the whole version, so that every
// shard names classes alike and ImageFolder's sorted class_to_idx equals the
// numeric label. It comes from the log (partition values, then the files'
// min/max statistics) and only for files without either from a scan of the
// class column alone. Negative classes are not padded (width 0).
func (v *Version) classWidth(ctx context.Context, r *resolved, l *layout) (int, error) {
	if r.class == nil || !r.class.numeric {
		return 0, nil
	}
	v.mu.Lock()
	if v.width != nil {
		w := v.width
		v.mu.Unlock()
		return widthOf(w), nil
	}
	v.mu.Unlock()
	var total classRange
	exact := r.filter == nil // total is the range of the live rows' classes (a filter keeps fewer)
	for i, f := range l.files {
		if l.cum[i+1] == l.cum[i] {
			continue // no live rows
		}
		cr, ok := rangeFromLog(f, r.class)
		if ok && f.DeletionVector != nil && !r.class.partKey {
			exact = false // statistics count the deleted rows too
		}
		if !ok {
			key := f.Path + "\x00" + f.DeletionVector.UniqueID() + "\x00" + r.class.phys
			got, err := v.s.widths.get(ctx, key, func(ctx context.Context) (*classRange, error) {
				var cr classRange
				err := v.s.opts.Rows.Columns(ctx, v.snap, f, []string{r.class.name}, func(b *scan.Batch) error {
					col := &b.Cols[0]
					for i := range b.Rows {
						if col.IsNull(i) {
							continue
						}
						if x, ok := numericValue(col.Value(i)); ok {
							cr.add(x)
						}
					}
					return nil
				})
				return &cr, err
			})
			if err != nil {
				// Unreadable: its samples fail anyway; widths come from
				// the others.
				exact = false
				continue
			}
			cr = *got
		}
		if cr.any {
			total.add(cr.min)
			total.add(cr.max)
		}
	}
	v.mu.Lock()
	v.width = &total
	v.widthExact = exact
	v.mu.Unlock()
	return widthOf(&total), nil
}

// lacksExtremes reports, for a numeric class column whose version-wide
// range is exact, whether shard sh lacks the version's smallest or largest
// class: then its ImageFolder class_to_idx differs from another shard's.
// No I/O: the range is the one classWidth computed, the shard's classes
// are its folder names. Called with v.mu held.
func (v *Version) lacksExtremes(sh *Shard) (lo, hi float64, shLo, shHi float64, lacks bool) {
	if sh.r.class == nil || !sh.r.class.numeric || v.width == nil || !v.width.any || !v.widthExact {
		return 0, 0, 0, 0, false
	}
	var cr classRange
	for _, name := range sh.classes {
		if name == NullName {
			continue
		}
		x, err := strconv.ParseFloat(name, 64)
		if err != nil {
			return 0, 0, 0, 0, false // not a plain number: no claim
		}
		cr.add(x)
	}
	if !cr.any {
		return 0, 0, 0, 0, false
	}
	return v.width.min, v.width.max, cr.min, cr.max, cr.min > v.width.min || cr.max < v.width.max
}

func widthOf(c *classRange) int {
	if !c.any || c.min < 0 {
		return 0
	}
	return digits(c.max)
}

// rangeFromLog reads a file's class range from its partition value or its
// statistics.
func rangeFromLog(f *snapshot.AddFile, c *column) (classRange, bool) {
	var cr classRange
	if c.partKey {
		p, ok := f.PartitionValues[c.phys]
		if !ok {
			return cr, false
		}
		if p != nil {
			x, err := strconv.ParseFloat(*p, 64)
			if err != nil {
				return cr, false
			}
			cr.add(x)
		}
		return cr, true
	}
	if f.Stats == "" {
		return cr, false
	}
	var st struct {
		NumRecords int64                      `json:"numRecords"`
		Min        map[string]json.RawMessage `json:"minValues"`
		Max        map[string]json.RawMessage `json:"maxValues"`
		Nulls      map[string]json.RawMessage `json:"nullCount"`
	}
	if err := json.Unmarshal([]byte(f.Stats), &st); err != nil {
		return cr, false
	}
	lo, ok1 := statNumber(st.Min[c.phys])
	hi, ok2 := statNumber(st.Max[c.phys])
	if ok1 && ok2 {
		cr.add(lo)
		cr.add(hi)
		return cr, true
	}
	// All null: nullCount equals numRecords and there is no min/max.
	if n, ok := statNumber(st.Nulls[c.phys]); ok && int64(n) == st.NumRecords && st.NumRecords > 0 {
		return cr, true
	}
	return cr, false
}

func statNumber(raw json.RawMessage) (float64, bool) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return 0, false
	}
	s = strings.Trim(s, `"`)
	x, err := strconv.ParseFloat(s, 64)
	return x, err == nil && !math.IsNaN(x) && !math.IsInf(x, 0)
}

// className is the folder name of a class value under a version's width.
func className(cv classVal, numeric bool, width int) string {
	if cv.null {
		return NullName
	}
	s := cv.s
	if numeric && width > 0 {
		s = padNumeric(s, width)
	}
	name := fitName(EscapeName(s), "")
	if reserved(name) {
		name = escapeFirst(name)
	}
	return name
}

// numericString is a class value's number, if it has one.
func numericString(cv classVal) (float64, bool) {
	if cv.null {
		return 0, false
	}
	x, err := strconv.ParseFloat(cv.s, 64)
	return x, err == nil && !math.IsNaN(x) && !math.IsInf(x, 0)
}
