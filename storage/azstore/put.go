package azstore

import (
	"bytes"
	"context"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/remote"
)

// Put implements storage.Storage with Put Blob (one request; a block blob
// of up to 5000 MiB). With ifAbsent it sends If-None-Match: *, which the
// Blob service honours atomically: a blob that exists fails with 409
// BlobAlreadyExists (or 412), which wraps storage.ErrExist, so two writers
// never both commit one Delta version.
//
// A conditional put whose earlier attempt may have reached the service (a
// reset after sending, then 409 on the retry) reads the blob back: if it
// holds exactly data, the put is reported as done. A put forgets key's pin.
func (s *Store) Put(ctx context.Context, key string, data []byte, ifAbsent bool) error {
	if err := remote.CheckKey("azure", key); err != nil {
		return err
	}
	defer s.pins.Unpin(key)
	o := &blockblob.UploadOptions{}
	if ifAbsent {
		any := azcore.ETagAny
		o.AccessConditions = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: &any}}
	}
	octx, st, done := s.withOp(ctx, "PutBlob", key)
	_, err := s.client.NewBlockBlobClient(s.fullKey(key)).Upload(octx, streaming.NopCloser(bytes.NewReader(data)), o)
	done()
	n := int(st.Attempts.Load())
	s.st.CountRetries(n)
	if err == nil {
		return nil
	}
	status, code := respError(err)
	if ifAbsent && (code == "BlobAlreadyExists" || code == "ConditionNotMet" || status == http.StatusPreconditionFailed || status == http.StatusConflict) {
		if n > 1 {
			if same, _ := s.pinned(key).Holds(ctx, data); same {
				return nil
			}
		}
		return &Error{Location: s.loc, Op: "PutBlob", Key: key, Reason: reasonExists, Attempts: n, Err: err, Detail: describe(err), Kind: storage.ErrExist, Permanent: true}
	}
	return s.classify(ctx, "PutBlob", key, err, n)
}
