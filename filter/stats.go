package filter

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// fileStats is the part of an add action's statistics a filter uses:
// numRecords, and minValues, maxValues and nullCount of its columns (by
// physical name; top-level columns only).
type fileStats struct {
	rows     int64
	min, max map[string]json.RawMessage
	nulls    map[string]json.RawMessage
}

// parseStats reads an add action's JSON statistics. nil when there are
// none or they do not parse: then nothing is skipped. (A checkpoint that
// keeps only stats_parsed has it rendered into this JSON by package
// snapshot, statsparsed.go.)
func parseStats(s string, cols []*Column) *fileStats {
	if s == "" {
		return nil
	}
	var raw struct {
		NumRecords *json.Number               `json:"numRecords"`
		Min        map[string]json.RawMessage `json:"minValues"`
		Max        map[string]json.RawMessage `json:"maxValues"`
		Nulls      map[string]json.RawMessage `json:"nullCount"`
	}
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return nil
	}
	st := &fileStats{rows: -1, min: raw.Min, max: raw.Max, nulls: raw.Nulls}
	if raw.NumRecords != nil {
		// A count of 0 skips nothing: a file that claims no rows is read
		// like any other, and its rows checked against the claim, as
		// without a filter (a file that truly has none costs one open).
		if n, err := raw.NumRecords.Int64(); err == nil && n > 0 {
			st.rows = n
		}
	}
	return st
}

// stringPrefix is the length (in characters) to which writers truncate
// string statistics (Spark's dataSkippingStringPrefixLength): a maximum
// of that length or more may be a truncated prefix, smaller than the
// values it stands for, so it bounds nothing.
const stringPrefix = 32

// summary is what the statistics say of column c (index i). Bounds are
// used only where they are exact for comparisons:
//
//   - integers, decimals, dates and booleans: as written;
//   - strings: the minimum always (a truncated minimum is a prefix, still
//     a lower bound); the maximum only when shorter than 32 characters;
//   - timestamps: widened by a millisecond each way (statistics are
//     written in milliseconds; values have microseconds);
//   - floats: the minimum only (NaN sorts above every value and writers
//     leave it out of the maximum);
//   - binary: none.
func (st *fileStats) summary(i int, c *Column) summary {
	s := summary{nulls: -1, rows: st.rows}
	if raw, ok := st.nulls[c.Phys]; ok {
		var n int64
		if err := json.Unmarshal(raw, &n); err == nil && n >= 0 {
			s.nulls = n
		}
	}
	if c.Type == "binary" {
		return s
	}
	if raw, ok := st.min[c.Phys]; ok {
		if v, ok := statValue(c, raw, false); ok {
			s.lo, s.hasLo = v, true
		}
	}
	if c.kind == kFloat {
		return s
	}
	if raw, ok := st.max[c.Phys]; ok {
		if v, ok := statValue(c, raw, true); ok {
			s.hi, s.hasHi = v, true
		}
	}
	return s
}

// statValue reads one bound of column c from its statistics JSON.
func statValue(c *Column, raw json.RawMessage, upper bool) (value, bool) {
	switch c.kind {
	case kInt, kFloat, kDec:
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil {
			return value{}, false
		}
		switch c.kind {
		case kInt:
			i, err := strconv.ParseInt(n.String(), 10, 64)
			return value{i: i}, err == nil
		case kFloat:
			return floatStat(c, n.String())
		}
		r, ok := new(big.Rat).SetString(n.String())
		return value{r: r}, ok
	case kBool:
		var b bool
		err := json.Unmarshal(raw, &b)
		return value{t: b}, err == nil
	case kBytes:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return value{}, false
		}
		if upper && utf8.RuneCountInString(s) >= stringPrefix {
			return value{}, false
		}
		return value{b: []byte(s)}, true
	case kTime:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return value{}, false
		}
		if c.Type == "date" {
			t, err := time.Parse("2006-01-02", s)
			return value{i: t.UnixMicro()}, err == nil
		}
		t, ok := statTime(s, c.Type == "timestamp_ntz")
		if !ok {
			return value{}, false
		}
		us := t.UnixMicro()
		if upper {
			us += 1000
		} else {
			us -= 1000
		}
		return value{i: us}, true
	}
	return value{}, false
}

// floatStat reads a float column's minimum in the column's own type. A
// float's statistic is a float32 written as its shortest decimal (Spark:
// 0.7 for the float nearest 0.7, which is below 0.7 as a double): read at
// float32 precision it is that float exactly. A double column may hold
// files written before the column was widened from float, whose minimum
// is such a decimal too: the bound is the lower of its two readings.
func floatStat(c *Column, s string) (value, bool) {
	f64, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return value{}, false
	}
	f32, err := strconv.ParseFloat(s, 32)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return value{}, false
	}
	if c.Type == "float" {
		return value{f: f32}, true
	}
	return value{f: math.Min(f64, f32)}, true
}

// statTime reads a timestamp statistic: ISO 8601 with a zone for a
// timestamp (one without a zone is ambiguous: no bound), without one for
// a timestamp_ntz (its wall clock, as UTC).
func statTime(s string, ntz bool) (time.Time, bool) {
	layouts := []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999Z0700"}
	if ntz {
		layouts = []string{"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999"}
	}
	for _, l := range layouts {
		if t, err := time.Parse(l, strings.TrimSpace(s)); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
