package writer

import (
	"encoding/json"
	"math"
	"time"
	"unicode/utf8"
)

// statsPrefix is the length, in characters, string min/max values are cut to
// (as Delta's Spark writer does by default).
const statsPrefix = 32

// colStats accumulates the statistics of one column of one data file.
type colStats struct {
	nulls      int64
	has        bool // min/max seen
	minI, maxI int64
	minF, maxF float64
	minS, maxS string
}

func (s *colStats) int(n int64) {
	if !s.has {
		s.minI, s.maxI, s.has = n, n, true
		return
	}
	s.minI = min(s.minI, n)
	s.maxI = max(s.maxI, n)
}

func (s *colStats) float(f float64) {
	if math.IsNaN(f) {
		return
	}
	if !s.has {
		s.minF, s.maxF, s.has = f, f, true
		return
	}
	s.minF = min(s.minF, f)
	s.maxF = max(s.maxF, f)
}

func (s *colStats) string(b []byte) {
	if !s.has {
		s.minS, s.maxS, s.has = string(b), string(b), true
		return
	}
	if string(b) < s.minS {
		s.minS = string(b)
	}
	if string(b) > s.maxS {
		s.maxS = string(b)
	}
}

// bounds returns the JSON min and max of the column, or nil for none.
func (s *colStats) bounds(k kind) (lo, hi any) {
	if !s.has {
		return nil, nil
	}
	switch k {
	case kLong, kInteger, kShort, kByte:
		return s.minI, s.maxI
	case kFloat, kDouble:
		if math.IsInf(s.minF, 0) || math.IsInf(s.maxF, 0) {
			return nil, nil // JSON has no infinities
		}
		return s.minF, s.maxF
	case kString:
		lo, cut := truncate(s.minS)
		_ = cut // a cut prefix of the minimum is still a lower bound
		if hi, cut := truncate(s.maxS); !cut {
			return lo, hi
		}
		return lo, nil // a cut maximum would not be an upper bound
	case kDate:
		return formatDate(s.minI), formatDate(s.maxI)
	case kTimestamp:
		return formatTimestamp(s.minI), formatTimestamp(s.maxI)
	}
	return nil, nil // binary, boolean
}

func truncate(s string) (string, bool) {
	if utf8.RuneCountInString(s) <= statsPrefix {
		return s, false
	}
	n := 0
	for i := range s {
		if n == statsPrefix {
			return s[:i], true
		}
		n++
	}
	return s, false
}

func formatDate(days int64) string {
	return time.Unix(days*86400, 0).UTC().Format("2006-01-02")
}

// formatTimestamp writes microseconds since the epoch truncated down to
// milliseconds, as PROTOCOL.md's statistics allow.
func formatTimestamp(us int64) string {
	ms := us / 1000
	if us < 0 && us%1000 != 0 {
		ms--
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

// statsJSON is the stats string of an add action.
func statsJSON(cols []column, stats []colStats, numRecords int64) string {
	type js struct {
		NumRecords int64            `json:"numRecords"`
		MinValues  map[string]any   `json:"minValues"`
		MaxValues  map[string]any   `json:"maxValues"`
		NullCount  map[string]int64 `json:"nullCount"`
	}
	out := js{NumRecords: numRecords, MinValues: map[string]any{}, MaxValues: map[string]any{}, NullCount: map[string]int64{}}
	for i, c := range cols {
		out.NullCount[c.name] = stats[i].nulls
		lo, hi := stats[i].bounds(c.kind)
		if lo != nil {
			out.MinValues[c.name] = lo
		}
		if hi != nil {
			out.MaxValues[c.name] = hi
		}
	}
	b, err := json.Marshal(out)
	if err != nil { // cannot happen: only numbers and strings
		panic(err)
	}
	return string(b)
}
