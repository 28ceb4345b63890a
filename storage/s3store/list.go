package s3store

import (
	"context"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/deltafs/deltafs/storage"
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
	var out []storage.ObjectInfo
	sorted := true
	for pager.HasMorePages() {
		// One operation per page: its attempts are the page's.
		octx, st, done := s.withOp(ctx, "ListObjectsV2", prefix)
		page, err := pager.NextPage(octx)
		done()
		n := int(st.attempts.Load())
		s.countRetries(n)
		if err != nil {
			return nil, s.classify(ctx, "ListObjectsV2", prefix, err, n)
		}
		for _, o := range page.Contents {
			full := aws.ToString(o.Key)
			key, ok := strings.CutPrefix(full, s.prefix)
			// "dir/" keys are folder markers (S3 console, Hadoop): not
			// objects of the table, as directories are not for storage.Local.
			if !ok || !strings.HasPrefix(key, prefix) || key <= startAfter || key == "" || strings.HasSuffix(key, "/") {
				continue
			}
			if len(out) > 0 && key <= out[len(out)-1].Key {
				sorted = false
			}
			out = append(out, storage.ObjectInfo{
				Key:     key,
				Size:    aws.ToInt64(o.Size),
				ModTime: aws.ToTime(o.LastModified),
				ETag:    normETag(aws.ToString(o.ETag)),
			})
		}
	}
	if !sorted {
		sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
		// A server that repeats keys across pages: keep one of each.
		w := 0
		for i := range out {
			if w > 0 && out[w-1].Key == out[i].Key {
				continue
			}
			out[w] = out[i]
			w++
		}
		out = out[:w]
	}
	return out, nil
}
