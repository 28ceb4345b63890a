package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/deltafs/deltafs/fusefs"
)

// metricsRegistry is a private registry with what a mount counts: the
// cache's collectors, the storage and page-fetch counters, the sample
// layer's counters, the prefill's, FUSE read latency, and the Go runtime.
func metricsRegistry(stk *stack, root *fusefs.Root) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(stk.Cache.Collectors()...)
	counter := func(name, help string, f func() float64) {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f))
	}
	t := stk.Table
	counter("deltafs_storage_read_bytes_total", "Bytes read from the table's storage (log and data files).", func() float64 { return float64(t.Counts().Bytes) })
	counter("deltafs_storage_reads_total", "Ranged reads of the table's storage.", func() float64 { return float64(t.Counts().Reads) })
	counter("deltafs_storage_data_file_read_bytes_total", "Bytes read from data files (everything outside _delta_log/).", func() float64 { return float64(t.Counts().DataFileBytes) })
	counter("deltafs_storage_data_file_reads_total", "Ranged reads of data files.", func() float64 { return float64(t.Counts().DataFileReads) })
	f := stk.Fetcher
	counter("deltafs_fetch_files_opened_total", "Data file tails (footer and page index) read from storage.", func() float64 { return float64(f.Stats().FilesOpened) })
	counter("deltafs_fetch_pages_decoded_total", "Parquet pages read and decoded (cache misses).", func() float64 { return float64(f.Stats().PagesDecoded) })
	counter("deltafs_fetch_pages_spilled_total", "Pages too large for the memory cache kept in spill files, read from there in part.", func() float64 { return float64(f.Stats().PagesSpilled) })
	counter("deltafs_fetch_pages_streamed_total", "Pages too large for memory decoded as a stream straight into spill files.", func() float64 { return float64(f.Stats().PagesStreamed) })
	counter("deltafs_fetch_read_ahead_total", "Pages handed to the cache's read-ahead.", func() float64 { return float64(f.Stats().ReadAhead) })
	sc := stk.Samples.Counters()
	counter("deltafs_sample_reads_total", "Sample file reads served.", func() float64 { return float64(sc.Reads.Load()) })
	counter("deltafs_sample_read_errors_total", "Sample file reads that failed.", func() float64 { return float64(sc.ReadErrors.Load()) })
	counter("deltafs_index_files_built_total", "Data files whose sample index was built (scanned).", func() float64 { return float64(sc.FilesIndexed.Load()) })
	counter("deltafs_index_files_cached_total", "Data files whose sample index came from the cache.", func() float64 { return float64(sc.FilesFromCache.Load()) })
	counter("deltafs_prefill_files_total", "Sample files pushed into the kernel's page cache ahead of the reader (--prefill).", func() float64 { f, _ := root.Prefilled(); return float64(f) })
	counter("deltafs_prefill_bytes_total", "Bytes pushed into the kernel's page cache ahead of the reader (--prefill).", func() float64 { _, b := root.Prefilled(); return float64(b) })
	reg.MustRegister(root.ReadLatency().Collector("deltafs_fuse_read_seconds", "Latency of FUSE reads of sample files."))
	return reg
}

// serveMetrics listens on addr and serves reg at /metrics until the
// returned stop is called. The listener is opened before it returns, so a
// bad or busy address fails the mount.
func serveMetrics(addr string, reg *prometheus.Registry) (stop func(), bound string, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("metrics server stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return func() { _ = srv.Close() }, ln.Addr().String(), nil
}
