package unity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/deltafs/deltafs/internal/httpjson"
	"github.com/deltafs/deltafs/storage"
)

func init() { storage.RegisterCatalog("uc", Open) }

// ParseName splits uc://catalog.schema.table into its full name.
func ParseName(location string) (string, error) {
	name := strings.TrimPrefix(location, "uc://")
	parts := strings.Split(name, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" || strings.ContainsAny(name, "/?#@ ") {
		return "", fmt.Errorf("%s: want uc://catalog.schema.table", location)
	}
	return name, nil
}

// Open resolves a table by name and opens its storage location with
// vended read credentials (storage.Options.Credentials), renewed as they
// near expiry. The Storage it returns names the table as uc://... in
// messages; Close stops the renewals and closes the storage.
func Open(ctx context.Context, location string, opts storage.Options) (storage.Storage, error) {
	full, err := ParseName(location)
	if err != nil {
		return nil, err
	}
	cfg, err := ResolveConfig(opts.Catalog)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", location, err)
	}
	c := NewClient(cfg)
	ti, err := c.GetTable(ctx, full)
	if err != nil {
		return nil, fmt.Errorf("%s: %s (%w)", location, describeCall("looking up the table", cfg, err), err)
	}
	if f := strings.ToUpper(ti.DataSourceFormat); f != "" && f != "DELTA" {
		return nil, fmt.Errorf("%s: not a Delta table (data_source_format %s)", location, httpjson.Quote(ti.DataSourceFormat, 64))
	}
	if ti.TableID == "" || ti.StorageLocation == "" {
		return nil, fmt.Errorf("%s: the catalog gave no table_id or storage_location (a view?)", location)
	}
	// Table discovery (the Delta protocol's "Table Discovery"): the Delta
	// REST API's loadTable says whether the table is catalog-managed and
	// gives its ratified commits. A catalog without that API serves
	// tables from their logs alone (a catalog-managed log is then
	// refused by log replay, naming the feature).
	load := func(ctx context.Context) (LoadTableResponse, error) { return c.LoadTable(ctx, full) }
	describeLoad := func(err error) string {
		return fmt.Sprintf("%s (%v)", describeCall("loading the table's commits", cfg, err), err)
	}
	lctx, cancel := context.WithTimeout(ctx, LoadTimeout)
	lt, err := load(lctx)
	cancel()
	managed, unmanaged := false, ""
	switch {
	case err == nil:
		managed = lt.CatalogManaged()
		unmanaged = "its catalog does not say it is catalog-managed (no delta.feature.catalogManaged in the Delta REST API's loadTable), so it gives none of the table's newest commits"
	case NoDeltaAPI(err):
		unmanaged = "its catalog has no Delta REST API (loadTable) to give the table's newest commits"
		slog.Debug("unity catalog: no Delta REST API (loadTable): reading the table's log alone", "table", location, "err", err)
	default:
		return nil, fmt.Errorf("%s: %s", location, describeLoad(err))
	}
	loc := normalizeLocation(ti.StorageLocation)
	if err := storage.CheckStorageLocation(loc); err != nil {
		// A table stored at uc://itself would open itself without end.
		return nil, fmt.Errorf("%s: the catalog's storage_location %s is refused: %v", location, httpjson.Quote(ti.StorageLocation, 256), err)
	}
	vended, err := NewVended(ctx, location, slog.Default(), func(ctx context.Context) (storage.Credentials, error) {
		tc, err := c.TemporaryTableCredentials(ctx, ti.TableID)
		if err != nil {
			return storage.Credentials{}, err
		}
		return tc.Storage()
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %s (%w)", location, describeCall("vending read credentials", cfg, err), err)
	}
	opts.Credentials = vended
	st, err := storage.Open(ctx, loc, opts)
	if err != nil {
		vended.Close()
		return nil, fmt.Errorf("%s: storage location %s: %w", location, loc, err)
	}
	if managed {
		cl, err := newCatalogLog(ctx, st, location, lt, load, describeLoad)
		if err != nil {
			vended.Close()
			if c, ok := st.(io.Closer); ok {
				c.Close()
			}
			return nil, err
		}
		st = cl
	}
	slog.Debug("unity catalog: table resolved", "table", location, "storage_location", loc, "table_id", ti.TableID, "catalog_managed", managed)
	return &Table{Storage: st, loc: location, vended: vended, managed: managed, unmanaged: unmanaged}, nil
}

// describeCall says what failed and, for a refusal, what to check.
func describeCall(what string, cfg Config, err error) string {
	var ae *APIError
	if errors.As(err, &ae) {
		switch ae.Status {
		case 401:
			return what + ": the catalog refuses the token from " + cfg.Source
		case 403:
			return what + ": permission denied"
		case 404:
			return what + ": no such table"
		}
	}
	return what + " at " + cfg.BaseURL()
}

// normalizeLocation maps the Hadoop spellings of S3 (s3a://, s3n://) to
// s3://, and of a local path (file:/path) to the path.
func normalizeLocation(loc string) string {
	if strings.HasPrefix(loc, "file:/") && !strings.HasPrefix(loc, "file://") {
		return strings.TrimPrefix(loc, "file:")
	}
	for _, p := range []string{"s3a://", "s3n://"} {
		if strings.HasPrefix(loc, p) {
			return "s3://" + strings.TrimPrefix(loc, p)
		}
	}
	return loc
}

// Table is a table opened by name: its storage, named uc://... .
type Table struct {
	storage.Storage
	loc     string
	vended  *Vended
	managed bool // catalog-managed: Storage is its catalogLog
	// unmanaged says why the catalog gives no commits, when it does not.
	unmanaged string
}

// CatalogLog reports whether the table is catalog-managed, its log
// presented as the catalog has it, and else why its catalog gives no
// commits (storage.CatalogLog).
func (t *Table) CatalogLog() (bool, string) { return t.managed, t.unmanaged }

// Location is uc://catalog.schema.table.
func (t *Table) Location() string { return t.loc }

// ReadRanges keeps the backend's coalescing reads (storage.RangeReader).
func (t *Table) ReadRanges(ctx context.Context, key string, ranges []storage.Range) ([][]byte, error) {
	return storage.ReadRanges(ctx, t.Storage, key, ranges)
}

// Close stops the renewals and closes the storage.
func (t *Table) Close() error {
	t.vended.Close()
	if c, ok := t.Storage.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// Unwrap is the table's storage backend (for its statistics: the mount
// looks for s3store's Stats on the storage it holds).
func (t *Table) Unwrap() storage.Storage { return t.Storage }
