package s3store

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/remote"
)

// List implements storage.Storage with ListObjectsV2 (Prefix, StartAfter,
// continuation pages). Keys are filtered again here, because some
// S3-compatible servers ignore StartAfter, and sorted if a server returns
// them out of order. Folder markers (keys ending in '/') are left out. A
// prefix with no objects lists as empty (S3 has no
// directories), never as storage.ErrNotExist; a missing bucket is
// ErrNotExist. List does not pin.
func (s *Store) List(ctx context.Context, prefix, startAfter string) ([]storage.ObjectInfo, error) {
	in := &s3.ListObjectsV2Input{Bucket: &s.bucket}
	if p := s.fullKey(prefix); p != "" {
		in.Prefix = aws.String(p)
	}
	if startAfter != "" {
		in.StartAfter = aws.String(s.fullKey(startAfter))
	}
	pager := s3.NewListObjectsV2Paginator(s.client, in, func(o *s3.ListObjectsV2PaginatorOptions) {
		o.StopOnDuplicateToken = true
	})
	var out remote.Listing
	for pager.HasMorePages() {
		// One operation per page: its attempts are the page's.
		octx, st, done := s.withOp(ctx, "ListObjectsV2", prefix)
		page, err := pager.NextPage(octx)
		done()
		n := int(st.Attempts.Load())
		s.st.CountRetries(n)
		if err != nil {
			return nil, s.classify(ctx, "ListObjectsV2", prefix, err, n)
		}
		for _, o := range page.Contents {
			full := aws.ToString(o.Key)
			key, ok := remote.ListedKey(full, s.prefix, prefix, startAfter)
			if !ok {
				continue
			}
			out.Add(storage.ObjectInfo{
				Key:     key,
				Size:    aws.ToInt64(o.Size),
				ModTime: aws.ToTime(o.LastModified),
				ETag:    normETag(aws.ToString(o.ETag)),
			})
		}
	}
	return out.Objects(), nil
}
