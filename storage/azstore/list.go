package azstore

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/remote"
)

// List implements storage.Storage with List Blobs (flat, Prefix, every
// page). The Blob API has no start-after: keys at or before startAfter
// are filtered here, as are keys ending in '/' (folder markers of tools
// that emulate directories, and the directories of a hierarchical
// namespace seen through the Blob API). Keys are sorted if a server
// returns them out of order. A prefix with no blobs lists as empty; a
// missing container is ErrNotExist. List does not pin.
func (s *Store) List(ctx context.Context, prefix, startAfter string) ([]storage.ObjectInfo, error) {
	o := &container.ListBlobsFlatOptions{}
	if p := s.fullKey(prefix); p != "" {
		o.Prefix = &p
	}
	pager := s.client.NewListBlobsFlatPager(o)
	var out remote.Listing
	for pager.More() {
		// One operation per page: its attempts are the page's.
		octx, st, done := s.withOp(ctx, "ListBlobs", prefix)
		page, err := pager.NextPage(octx)
		done()
		n := int(st.Attempts.Load())
		s.st.CountRetries(n)
		if err != nil {
			return nil, s.classify(ctx, "ListBlobs", prefix, err, n)
		}
		if page.Segment == nil {
			continue
		}
		for _, b := range page.Segment.BlobItems {
			if b == nil || b.Name == nil {
				continue
			}
			key, ok := remote.ListedKey(*b.Name, s.where.Prefix, prefix, startAfter)
			if !ok {
				continue
			}
			oi := storage.ObjectInfo{Key: key}
			if pr := b.Properties; pr != nil {
				if pr.ContentLength != nil {
					oi.Size = *pr.ContentLength
				}
				if pr.LastModified != nil {
					oi.ModTime = *pr.LastModified
				}
				oi.ETag = normETag(pr.ETag)
			}
			out.Add(oi)
		}
	}
	return out.Objects(), nil
}
