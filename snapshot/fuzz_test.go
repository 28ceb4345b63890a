package snapshot

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// Fuzz targets (the Makefile runs them by these names). Seed corpora come
// from the shared tables: every commit line, every deletion vector.

func FuzzParseCommit(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(testdataDir, "*", "_delta_log", "*.json"))
	if len(files) < 100 {
		f.Fatalf("found %d commit files for the seed corpus", len(files))
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		for _, l := range bytes.Split(data, []byte("\n")) {
			if len(l) > 0 {
				f.Add(l)
			}
		}
	}
	f.Add([]byte("{\"add\":{\"path\":\"a\",\"deletionVector\":{\"storageType\":\"i\",\"pathOrInlineDv\":\"x\",\"cardinality\":-1}}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := parseActions(data)
		if err != nil {
			if a != nil {
				t.Fatal("actions and an error")
			}
			return
		}
		for _, op := range a.Ops {
			if op.ID.Path == "" {
				t.Fatal("a file action without a path was accepted")
			}
			if op.Add != nil {
				if op.Add.id() != op.ID || op.Add.NumRecords < -1 {
					t.Fatalf("bad add %+v", op.Add)
				}
				// What the log said survives a round trip.
				b, err := json.Marshal(op.Add)
				if err != nil {
					t.Fatal(err)
				}
				var back AddFile
				if err := json.Unmarshal(b, &back); err != nil || back.Path != op.Add.Path {
					t.Fatalf("round trip: %v", err)
				}
			}
		}
		// commitInfo alone parses the same way.
		ci, err := parseCommitInfo(data)
		if err != nil {
			t.Fatalf("parseCommitInfo failed on a commit parseActions accepted: %v", err)
		}
		if (ci == nil) != (a.CommitInfo == nil) && bytes.Count(data, []byte(`"commitInfo"`)) == 1 {
			t.Fatalf("commitInfo found by one parser only")
		}
	})
}

func FuzzDecodeDeletionVector(f *testing.F) {
	// Real DV files with their descriptors.
	for _, name := range []string{"deltars-table-with-dv-small", "golden-dv-partitioned-with-checkpoint", "deltars-table_with_deletion_logs", "kernelrs-compacted-log-files-table"} {
		commits, _ := filepath.Glob(filepath.Join(testdataDir, name, "_delta_log", "*.json"))
		for _, p := range commits {
			data, _ := os.ReadFile(p)
			a, err := parseActions(data)
			if err != nil {
				f.Fatal(err)
			}
			for _, op := range a.Ops {
				dv := op.Add
				if dv == nil || dv.DeletionVector == nil {
					continue
				}
				key, err := deletionVectorKey("/t", dv.DeletionVector)
				if err != nil {
					f.Fatal(err)
				}
				file, err := os.ReadFile(filepath.Join(testdataDir, name, key))
				if err != nil {
					f.Fatal(err)
				}
				d := dv.DeletionVector
				f.Add(file, "", *d.Offset, d.SizeInBytes, d.Cardinality)
			}
		}
	}
	// PROTOCOL.md's inline example (native format).
	f.Add([]byte{}, "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", int32(0), int32(40), int64(6))
	// A portable inline vector with two buckets.
	raw := encodeDV(f, 3, 1<<33)
	for len(raw)%4 != 0 {
		raw = append(raw, 0)
	}
	enc, _ := z85Encode(raw)
	f.Add(frameDV(raw), enc, int32(1), int32(len(raw)), int64(2))

	f.Fuzz(func(t *testing.T, file []byte, inline string, off, size int32, card int64) {
		z85Decode(inline)
		dv := &DeletionVector{StorageType: "i", PathOrInlineDv: inline, SizeInBytes: size, Cardinality: card}
		if bm, err := decodeInlineDV(dv); err == nil {
			checkDecoded(t, bm, card)
		}
		dv = &DeletionVector{StorageType: "u", Offset: &off, SizeInBytes: size, Cardinality: card}
		if bm, err := decodeDVFile(file, dv); err == nil {
			checkDecoded(t, bm, card)
		}
		if bm, err := decodeDVBytes(file); err == nil {
			// A decoded vector re-encodes to one that decodes the same.
			var buf bytes.Buffer
			buf.Write([]byte{0xd1, 0xd3, 0x39, 0x64})
			if _, err := bm.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			again, err := decodeDVBytes(buf.Bytes())
			if err != nil || !again.Equals(bm) {
				t.Fatalf("re-encoded vector: %v", err)
			}
		}
	})
}

func checkDecoded(t *testing.T, bm *roaring64.Bitmap, card int64) {
	t.Helper()
	if bm == nil || bm.GetCardinality() != uint64(card) {
		t.Fatalf("accepted a vector whose cardinality is not %d", card)
	}
}
