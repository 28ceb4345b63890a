package snapshot

import (
	"bytes"
	"context"
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

// FuzzCheckpointCrossCheck feeds arbitrary _last_checkpoint contents and
// damaged parts of golden-multi-part-checkpoint (copied, swapped,
// flipped, truncated, missing), with or without the commits, to Open and
// Snapshot. They must never panic, never give a snapshot with two files
// of one key, and, when the snapshot can only come from the checkpoint, a
// trusted hint's numOfAddFiles must be its file count (with the commits,
// the commits' 10 files are the other possible answer).
func FuzzCheckpointCrossCheck(f *testing.F) {
	dir := filepath.Join(testdataDir, "golden-multi-part-checkpoint")
	base := loadDir(f, dir)
	hint, err := os.ReadFile(filepath.Join(dir, "_delta_log", "_last_checkpoint"))
	if err != nil {
		f.Fatal(err)
	}
	parts := []string{"_delta_log/" + multiPart1, "_delta_log/" + multiPart2}
	for op := uint8(0); op < 7; op++ {
		f.Add(hint, op, uint32(1000), byte(0x5a), false)
		f.Add(hint, op, uint32(20000), byte(0x01), true)
	}
	f.Add([]byte(`{"version":1,"size":12,"parts":2,"numOfAddFiles":10}`), uint8(1), uint32(0), byte(0), true)
	f.Add([]byte(`{"version":1,"numOfAddFiles":5}`), uint8(1), uint32(0), byte(0), true)
	f.Add([]byte(`{"version":1,"size":14,"parts":2,"numOfAddFiles":10}`), uint8(1), uint32(0), byte(0), true)
	f.Add([]byte(`not json`), uint8(0), uint32(0), byte(0), true)
	f.Fuzz(func(t *testing.T, lastCheckpoint []byte, op uint8, at uint32, val byte, dropCommits bool) {
		st := base.Clone()
		p := parts[val&1]
		data := st.Data(p)
		switch op % 7 {
		case 1:
			st.Set(parts[1], st.Data(parts[0]), f0())
		case 2:
			st.Set(parts[0], st.Data(parts[1]), f0())
		case 3:
			a, b := st.Data(parts[0]), st.Data(parts[1])
			st.Set(parts[0], b, f0())
			st.Set(parts[1], a, f0())
		case 4:
			b := bytes.Clone(data)
			b[int(at)%len(b)] ^= val | 1
			st.Set(p, b, f0())
		case 5:
			st.Set(p, data[:int(at)%len(data)], f0())
		case 6:
			st.Remove(parts[1])
		}
		st.Set(lastCheckpointKey, lastCheckpoint, f0())
		if dropCommits {
			st.Remove(commitKey(0))
			st.Remove(commitKey(1))
		}
		ctx := context.Background()
		tbl, err := Open(ctx, st)
		if err != nil {
			return
		}
		s, err := tbl.Snapshot(ctx, 1)
		if err != nil {
			return
		}
		seen := map[fileID]bool{}
		for _, a := range s.Files {
			if seen[a.id()] {
				t.Fatalf("two files of key %v", a.id())
			}
			seen[a.id()] = true
		}
		if s.NumRows() < -1 {
			t.Fatalf("%d rows", s.NumRows())
		}
		h, ok := parseLastCheckpoint(lastCheckpoint)
		if !ok || h.Version != 1 || h.NumOfAddFiles == nil {
			return
		}
		n := int64(len(s.Files))
		if n != *h.NumOfAddFiles && (dropCommits || n != 10) {
			t.Fatalf("%d files; _last_checkpoint says numOfAddFiles %d (commits dropped: %v)", n, *h.NumOfAddFiles, dropCommits)
		}
	})
}
