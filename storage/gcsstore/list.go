package gcsstore

import (
	"context"
	"errors"
	"strconv"

	gcs "cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/remote"
)

// List implements storage.Storage with the JSON API's objects.list
// (prefix, startOffset, every page; only name, size, update time and
// generation are asked for). startOffset is inclusive, so keys are filtered
// again here, and sorted if a server returns them out of order. Folder
// markers (names ending in '/') are left out. A prefix with no objects
// lists as empty, never as storage.ErrNotExist; a missing bucket is
// ErrNotExist. List does not pin.
func (s *Store) List(ctx context.Context, prefix, startAfter string) ([]storage.ObjectInfo, error) {
	q := &gcs.Query{Prefix: s.fullKey(prefix)}
	if startAfter != "" {
		q.StartOffset = s.fullKey(startAfter)
	}
	if err := q.SetAttrSelection([]string{"Name", "Size", "Updated", "Generation"}); err != nil {
		return nil, err
	}
	octx, st, done := s.withOp(ctx, "list", prefix)
	defer done()
	it := s.bucket.Objects(octx, q)
	var out remote.Listing
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return nil, s.classify(ctx, "list", prefix, err, int(st.Attempts.Load()))
		}
		key, ok := remote.ListedKey(a.Name, s.prefix, prefix, startAfter)
		if !ok {
			continue
		}
		out.Add(storage.ObjectInfo{Key: key, Size: a.Size, ModTime: a.Updated, ETag: strconv.FormatInt(a.Generation, 10)})
	}
	return out.Objects(), nil
}
