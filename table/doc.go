// Package table opens a Delta table for reading: the storage with its
// decorators (counting; the S3 store's retries and circuit breaker, set by
// storage.Options), the log, the cache handle, the sample layer. It is the
// one place where these layers are put together, so that the mount, `deltafs
// warm`, `deltafs cat` and `deltafs log`, tests and benchmarks read a table
// through the same stack:
//
//	t, err := table.Open(ctx, table.Options{Location: "s3://lake/mnist", Spec: &spec, Cache: cacheOpts})
//	defer t.Close()
//	ver, err := t.Samples.Version(ctx, t.Latest.Version)
//
// Data flows one way: storage, log (package snapshot), samples (package
// sample, whose page fetcher reads through the cache handle), cache
// (package cache). Without a Spec, Open stops after the log (cat, log).
//
// # Counting
//
// Every read of the table's storage is counted once, here, whoever reads
// (page fetches, file tails, index scans, deletion vectors, the log):
// Table.Counts. Reads of data files (every key outside _delta_log/) are
// counted apart as well.
//
// # Cancellation
//
// The context of a read reaches storage: a FUSE request that is
// interrupted (the reader got a signal) cancels the page and tail reads it
// waits for, unless another request waits for the same page (the cache
// shares one fetch and cancels it when its last waiter leaves).
package table
