package snapshot

import "testing"

func TestParseLogPath(t *testing.T) {
	cases := []struct {
		key   string
		kind  fileKind
		ver   int64
		end   int64
		part  int
		parts int
		json  bool
	}{
		{"_delta_log/00000000000000000000.json", kindCommit, 0, 0, 0, 0, true},
		{"_delta_log/00000000000000000123.json", kindCommit, 123, 0, 0, 0, true},
		{"_delta_log/09223372036854775807.json", kindCommit, 9223372036854775807, 0, 0, 0, true},
		{"_delta_log/00000000000000000010.checkpoint.parquet", kindCheckpoint, 10, 0, 0, 0, false},
		{"_delta_log/00000000000000000001.checkpoint.0000000001.0000000002.parquet", kindMultiCheckpoint, 1, 0, 1, 2, false},
		{"_delta_log/00000000000000000001.checkpoint.0000000002.0000000002.parquet", kindMultiCheckpoint, 1, 0, 2, 2, false},
		{"_delta_log/00000000000000000002.checkpoint.e8fa2696-9728-4e9c-b285-634743fdd4fb.parquet", kindUUIDCheckpoint, 2, 0, 0, 0, false},
		{"_delta_log/00000000000000000006.checkpoint.2a15d0c6-8b11-4a98-bab4-957905d62f7f.json", kindUUIDCheckpoint, 6, 0, 0, 0, true},
		{"_delta_log/00000000000000000006.00000000000000000010.compacted.json", kindCompaction, 6, 10, 0, 0, true},
		{"_delta_log/00000000000000000003.crc", kindChecksum, 3, 0, 0, 0, false},
		// Not log files of this reader.
		{"_delta_log/_last_checkpoint", kindUnknown, -1, 0, 0, 0, false},
		{"_delta_log/_sidecars/00000000000000000002.checkpoint.0000000001.0000000002.055454d8.parquet", kindUnknown, -1, 0, 0, 0, false},
		{"_delta_log/_staged_commits/00000000000000000000.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.json", kindUnknown, -1, 0, 0, 0, false},
		{"_delta_log/0000000000000000000.json", kindUnknown, -1, 0, 0, 0, false},   // 19 digits
		{"_delta_log/000000000000000000001.json", kindUnknown, -1, 0, 0, 0, false}, // 21 digits
		{"_delta_log/0000000000000000000a.json", kindUnknown, -1, 0, 0, 0, false},
		{"_delta_log/00000000000000000001.json.tmp", kindUnknown, -1, 0, 0, 0, false},
		{"_delta_log/.00000000000000000001.json.crc", kindUnknown, -1, 0, 0, 0, false},
		{"_delta_log/00000000000000000001.checkpoint.0000000003.0000000002.parquet", kindUnknown, -1, 0, 0, 0, false}, // part > parts
		{"_delta_log/00000000000000000001.checkpoint.0000000000.0000000002.parquet", kindUnknown, -1, 0, 0, 0, false}, // part 0
		{"_delta_log/00000000000000000010.00000000000000000006.compacted.json", kindUnknown, -1, 0, 0, 0, false},      // end < start
		{"_delta_log/00000000000000000010.00000000000000000010.compacted.json", kindUnknown, -1, 0, 0, 0, false},      // end == start
		{"_delta_log/00000000000000000001.checkpoint..json", kindUnknown, -1, 0, 0, 0, false},
		{"_delta_log/99999999999999999999.json", kindUnknown, -1, 0, 0, 0, false}, // overflows int64
		{"other/00000000000000000000.json", kindUnknown, -1, 0, 0, 0, false},
	}
	for _, c := range cases {
		p := parseLogPath(c.key)
		if p.Kind != c.kind || p.Version != c.ver || p.End != c.end || p.Part != c.part || p.Parts != c.parts || p.JSON != c.json {
			t.Errorf("parseLogPath(%q) = %+v, want kind %v version %d end %d part %d/%d json %v", c.key, p, c.kind, c.ver, c.end, c.part, c.parts, c.json)
		}
	}
	if k := commitKey(7); k != "_delta_log/00000000000000000007.json" {
		t.Errorf("commitKey(7) = %q", k)
	}
	// Listing after versionPrefix(v) lists every file of v and later, none
	// of v-1.
	for _, k := range []string{commitKey(9), "_delta_log/00000000000000000009.checkpoint.parquet", "_delta_log/00000000000000000009.00000000000000000012.compacted.json"} {
		if k > versionPrefix(10) {
			t.Errorf("%s sorts after versionPrefix(10)", k)
		}
	}
	for _, k := range []string{commitKey(10), "_delta_log/00000000000000000010.checkpoint.0000000001.0000000002.parquet", "_delta_log/00000000000000000010.00000000000000000012.compacted.json"} {
		if k <= versionPrefix(10) {
			t.Errorf("%s does not sort after versionPrefix(10)", k)
		}
	}
}
