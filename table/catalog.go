package table

import (
	"context"

	"github.com/deltafs/deltafs/catalog/unity"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/sharing"
)

// A Catalog is a location naming many tables rather than one: a catalog
// or a schema of Unity Catalog (uc://CATALOG, uc://CATALOG.SCHEMA), a
// Delta Sharing profile or one of its shares (PROFILE.share,
// PROFILE.share#SHARE). It
// lists the names from the mount down to its tables (fusefs.Catalog shows
// them as directories) and names each table as a location Open opens, so
// every table of a catalog is opened as a single table would be, with its
// own credentials and their renewal.
type Catalog interface {
	// Levels is the number of names from the catalog to a table (1 to 3).
	Levels() int
	// List returns the names under path (len(path) < Levels).
	List(ctx context.Context, path []string) ([]string, error)
	// Table is the location of the table at path (len(path) == Levels),
	// or why its names cannot make one.
	Table(path []string) (string, error)
	// Name names the directory or table at path in log lines, as its
	// location would (uc://c.s.t, PROFILE.share#share.schema.table).
	Name(path []string) string
}

// OpenCatalog returns the catalog location names, and ok false when it
// names a single table (or anything else Open opens). It makes no
// request: the first listing is the caller's.
func OpenCatalog(location string, opts storage.Options) (c Catalog, ok bool, err error) {
	if _, _, isUC, perr := unity.ParseCatalog(location); isUC {
		if perr != nil {
			return nil, true, perr
		}
		b, err := unity.NewBrowser(location, opts)
		if err != nil {
			return nil, true, err
		}
		return b, true, nil
	}
	if _, _, isShare := sharing.ParseCatalog(location); isShare {
		b, err := sharing.NewBrowser(location, opts.Sharing.Timeout)
		if err != nil {
			return nil, true, err
		}
		return b, true, nil
	}
	return nil, false, nil
}
