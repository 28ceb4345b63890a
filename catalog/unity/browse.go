package unity

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/deltafs/deltafs/storage"
)

// ParseCatalog splits a catalog location, uc://CATALOG (its schemas, then
// their tables) or uc://CATALOG.SCHEMA (the schema's tables): ok is false
// for any other location (uc://catalog.schema.table is a table), err set
// when it is uc:// of one or two names but not a valid one.
func ParseCatalog(location string) (catalog, schema string, ok bool, err error) {
	name, isUC := strings.CutPrefix(location, "uc://")
	if !isUC {
		return "", "", false, nil
	}
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return "", "", false, nil
	}
	for _, p := range parts {
		if p == "" || strings.ContainsAny(p, "/?#@ ") {
			return "", "", true, fmt.Errorf("%s: want uc://catalog, uc://catalog.schema or uc://catalog.schema.table", location)
		}
	}
	if len(parts) == 2 {
		schema = parts[1]
	}
	return parts[0], schema, true, nil
}

// Browser lists a catalog's schemas and tables (ListSchemas, ListTables)
// for a mount of many tables, and names each table as a location that
// Open opens (each with its own client, credentials and renewal).
type Browser struct {
	location        string
	catalog, schema string
	cfg             Config
	c               *Client
}

// NewBrowser is the Browser of uc://CATALOG or uc://CATALOG.SCHEMA; the
// catalog is found as Open finds it (ResolveConfig).
func NewBrowser(location string, opts storage.Options) (*Browser, error) {
	catalog, schema, ok, err := ParseCatalog(location)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s: want uc://catalog or uc://catalog.schema", location)
	}
	cfg, err := ResolveConfig(opts.Catalog)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", location, err)
	}
	return &Browser{location: location, catalog: catalog, schema: schema, cfg: cfg, c: NewClient(cfg)}, nil
}

// Levels is the number of names from the mount to a table: 1 for a
// schema, 2 for a catalog.
func (b *Browser) Levels() int {
	if b.schema != "" {
		return 1
	}
	return 2
}

// List returns the names under path: a catalog's schemas, or a schema's
// Delta tables.
func (b *Browser) List(ctx context.Context, path []string) ([]string, error) {
	var names []string
	var err error
	switch {
	case b.schema != "" && len(path) == 0:
		names, err = b.c.ListTables(ctx, b.catalog, b.schema)
	case b.schema == "" && len(path) == 0:
		names, err = b.c.ListSchemas(ctx, b.catalog)
	case b.schema == "" && len(path) == 1:
		names, err = b.c.ListTables(ctx, b.catalog, path[0])
	default:
		return nil, fmt.Errorf("%s: no listing at depth %d", b.location, len(path))
	}
	if err != nil {
		what, missing := "listing the tables", "no such schema"
		if b.schema == "" && len(path) == 0 {
			what, missing = "listing the schemas", "no such catalog"
		}
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == 404 {
			return nil, fmt.Errorf("%s: %s (%w)", what, missing, err)
		}
		return nil, fmt.Errorf("%s (%w)", describeCall(what, b.cfg, err), err)
	}
	return names, nil
}

// Table is the location of the table at path (its names below the
// mount): uc://catalog.schema.table, checked to name that table back
// (a name holding '.' would name another one).
func (b *Browser) Table(path []string) (string, error) {
	full := append([]string{b.catalog}, path...)
	if b.schema != "" {
		full = append([]string{b.catalog, b.schema}, path...)
	}
	loc := "uc://" + strings.Join(full, ".")
	if len(full) != 3 {
		return "", fmt.Errorf("%s: not a table's path", b.location)
	}
	if _, err := ParseName(loc); err != nil {
		return "", fmt.Errorf("%s: a name holding '.', '/', '?', '#', '@' or a space cannot be opened as uc://catalog.schema.table", loc)
	}
	return loc, nil
}

// Name names the directory or table at path in log lines:
// uc://catalog.schema.table, as far as path goes.
func (b *Browser) Name(path []string) string {
	return strings.Join(append([]string{b.location}, path...), ".")
}
