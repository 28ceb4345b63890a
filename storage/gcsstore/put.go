package gcsstore

import (
	"bytes"
	"context"
	"hash/crc32"

	gcs "cloud.google.com/go/storage"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/remote"
)

// maxChunk is the largest object Put sends in one request; larger ones are
// resumable uploads of chunks this size. Either way the SDK keeps the
// bytes, so that a failed attempt is sent again.
const maxChunk = 16 << 20

// Put implements storage.Storage: an upload of data with its CRC32C, which
// the server checks. With ifAbsent the upload carries ifGenerationMatch=0,
// so it fails with an error wrapping storage.ErrExist when the key exists,
// atomically with respect to other writers: two writers never both commit
// one Delta version.
//
// A conditional put whose earlier attempt may have reached the server (a
// reset after sending, then 412 on the retry) reads the object back: if
// it holds exactly data, the put is reported as done. A put forgets key's
// pin.
func (s *Store) Put(ctx context.Context, key string, data []byte, ifAbsent bool) error {
	if err := remote.CheckKey("gcs", key); err != nil {
		return err
	}
	defer s.pins.Unpin(key)
	octx, st, done := s.withOp(ctx, "put", key)
	obj := s.bucket.Object(s.fullKey(key))
	if ifAbsent {
		obj = obj.If(gcs.Conditions{DoesNotExist: true})
	}
	w := obj.NewWriter(octx)
	w.ChunkSize = min(len(data)+1, maxChunk)
	w.CRC32C = crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))
	w.SendCRC32C = true
	_, err := w.Write(data)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	done()
	if err == nil {
		return nil
	}
	n := int(st.Attempts.Load())
	if ifAbsent && httpCode(err) == 412 {
		if n > 1 {
			if same, _ := s.holds(ctx, key, data); same {
				return nil
			}
		}
		return &Error{Location: s.loc, Op: "put", Key: key, Reason: reasonExists, Attempts: n, Kind: storage.ErrExist, Permanent: true}
	}
	return s.classify(ctx, "put", key, err, n)
}

// holds reports whether key holds exactly data (read without pinning).
func (s *Store) holds(ctx context.Context, key string, data []byte) (bool, error) {
	octx, _, done := s.withOp(ctx, "read", key)
	defer done()
	a, err := s.bucket.Object(s.fullKey(key)).Attrs(octx)
	if err != nil || a.Size != int64(len(data)) {
		return false, err
	}
	if len(data) == 0 {
		return true, nil
	}
	r, err := s.bucket.Object(s.fullKey(key)).Generation(a.Generation).NewReader(octx)
	if err != nil {
		return false, err
	}
	defer r.Close()
	buf := bytes.NewBuffer(make([]byte, 0, len(data)))
	if _, err := buf.ReadFrom(r); err != nil {
		return false, err
	}
	return bytes.Equal(buf.Bytes(), data), nil
}
