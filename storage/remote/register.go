package remote

import (
	"context"

	"github.com/deltafs/deltafs/storage"
)

// Register registers open for scheme with storage.Register. A failed open
// gives a nil storage.Storage, never an interface holding a nil *Store.
func Register[S storage.Storage](scheme string, open func(ctx context.Context, location string, opts storage.Options) (S, error)) {
	storage.Register(scheme, func(ctx context.Context, location string, opts storage.Options) (storage.Storage, error) {
		s, err := open(ctx, location, opts)
		if err != nil {
			return nil, err
		}
		return s, nil
	})
}
