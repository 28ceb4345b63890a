package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/deltafs/deltafs/fusefs"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/table"
)

// runCatalogMount mounts a catalog location (table.OpenCatalog): its
// listings as directories above its tables (fusefs.Catalog), each table opened
// at first use by openStack, as a table mount opens its one, with the
// same sample and cache flags.
func runCatalogMount(ctx context.Context, o *mountOptions, location string, cat table.Catalog, mnt string, prefill int64) error {
	switch {
	case o.Xattrs:
		return usageError{errors.New("--xattrs is not served by a catalog mount: mount the table itself")}
	case o.MetricsAddr != "":
		return usageError{errors.New("--metrics-addr is not served by a catalog mount: mount the table itself")}
	}
	tables := &catalogTables{open: map[*stack]bool{}}
	c, err := fusefs.NewCatalog(ctx, fusefs.CatalogOptions{
		Table: fusefs.Options{Refresh: o.Refresh, Immutable: o.Immutable, KernelInodes: kernelInodes(o.KernelInodes), Prefill: prefill,
			Logger: slog.Default()},
		Name:     location,
		PathName: cat.Name,
		Levels:   cat.Levels(),
		List:     cat.List,
		Open: func(ctx context.Context, path []string) (*sample.Samples, io.Closer, error) {
			loc, err := cat.Table(path)
			if err != nil {
				return nil, nil, err
			}
			stk, err := openStack(ctx, loc, &o.specFlags, &o.cacheFlags)
			if err != nil {
				return nil, nil, err
			}
			return stk.Samples, tables.add(stk), nil
		},
	})
	if err != nil {
		return err
	}
	tables.cat = c
	server, err := fusefs.Mount(mnt, c, c.MountOptions(location, o.AllowOther, o.Debug))
	if err != nil {
		_ = c.Close()
		return fmt.Errorf("mount %s: %w", mnt, err)
	}
	slog.Info("mounted", "catalog", location, "mountpoint", mnt, "levels", cat.Levels(), "refresh", o.Refresh)
	return serveMount(ctx, mnt, server, c.Run, tables)
}

// catalogTables are the tables a catalog mount holds open, for stopMount.
type catalogTables struct {
	cat  *fusefs.Catalog
	mu   sync.Mutex
	open map[*stack]bool
}

// add holds stk until the Closer it returns is closed (the catalog
// releases a table it no longer lists, and every table at Close).
func (ts *catalogTables) add(stk *stack) io.Closer {
	ts.mu.Lock()
	ts.open[stk] = true
	ts.mu.Unlock()
	return closerFunc(func() error {
		ts.mu.Lock()
		delete(ts.open, stk)
		ts.mu.Unlock()
		return stk.Close()
	})
}

func (ts *catalogTables) each(f func(*stack)) {
	ts.mu.Lock()
	open := make([]*stack, 0, len(ts.open))
	for s := range ts.open {
		open = append(open, s)
	}
	ts.mu.Unlock()
	for _, s := range open {
		f(s)
	}
}

// CloseStorage closes every open table's storage (requests in flight fail
// at once).
func (ts *catalogTables) CloseStorage() error {
	var errs []error
	ts.each(func(s *stack) { errs = append(errs, s.CloseStorage()) })
	return errors.Join(errs...)
}

// InFlight is the storage calls in progress, over every open table.
func (ts *catalogTables) InFlight() int64 {
	var n int64
	ts.each(func(s *stack) { n += s.InFlight() })
	return n
}

// Close releases every table (fusefs.Catalog.Close).
func (ts *catalogTables) Close() error { return ts.cat.Close() }

type closerFunc func() error

func (f closerFunc) Close() error { return f() }
