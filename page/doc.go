// Package page reads a page of a column of a data file: it owns the fetch
// (the file's tail, the page's byte range, read-ahead of the pages after
// it), the checks (every claim of the footer, the page index and the page
// headers, by package pqcheck, before parquet-go sees the bytes), the
// decode (parquet-go on bytes held in memory; a page too large for memory
// decoded as a stream into a spill file, stream.go) and the cache key of
// what it reads (Key, kept in a Cache: decoded pages as kind "page", file
// tails as kind "tail").
//
// Fetcher is the reader; package sample reads its samples' values through
// it (as a sample.Fetcher and sample.RangeFetcher) and keeps its own units
// (file indexes, rendered JSON, encoded images, samples) in the same Cache
// under keys of the same shape. A Key names a unit of one data file
// (FileRef.CacheKey makes every one); the table it belongs to is added by
// cache.KeyIn, the one place a persistent cache key (cache.Key) is made
// from it, so that this package and sample stand below the cache.
//
// Not every read of Parquet is a page read. Package scan reads the id,
// class and filter columns a whole column chunk of a row group at a time
// (pqcheck.File.StageChunk, then parquet-go's row and typed-vector
// readers), and package snapshot reads a checkpoint file whole into memory
// and decodes its columns with parquet-go: both check what they read with
// pqcheck as this package does, but neither locates single pages through
// the offset index, caches them, or reads ahead, so they do not go through
// Fetcher.
package page
