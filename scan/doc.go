// Package scan decodes the live rows of a Delta snapshot from its Parquet
// data files.
//
// A Scan (New) projects a snapshot to some of its logical top-level
// columns; File visits the live rows of one data file in file order, All
// those of every file in snapshot order; FileColumns reads the live rows
// of one data file a batch at a time into typed vectors (see Columns). Each row comes with its physical
// index in the data file (what deletion vectors index); rows deleted by a
// deletion vector are skipped. A FileReader (OpenFile) is one data file
// opened once: it reads row ranges, finds the Parquet leaf column of a
// field, and reads single pages through the offset index, for the read
// path and its cache. AppendJSON renders a row as the JSON object that
// `deltafs cat` prints and the mount serves.
//
// # Values
//
// Rows are []any in the order of Scan.Fields, with Go values by Delta type:
//
//	null           nil
//	string         string
//	binary         []byte (aliases a page buffer: valid during the callback)
//	long           int64
//	integer        int32
//	short          int16
//	byte           int8
//	float          float32
//	double         float64
//	boolean        bool
//	decimal(p,s)   Decimal (exact; JSON: a number literal with s decimals)
//	date           time.Time, midnight UTC (JSON "2006-01-02")
//	timestamp      time.Time, UTC (JSON "2006-01-02T15:04:05.000000Z")
//	timestamp_ntz  time.Time, the wall clock as UTC (JSON without a zone)
//	struct         Struct (field names and values in schema order)
//	array          []any
//	map            Map (entries in file order)
//	void           nil
//
// The row slice is reused between rows: copy what you keep.
//
// # Columns
//
// FileColumns gives the rows and values File gives (the same conversions,
// partition values, missing columns, deletion vectors and errors), a
// Batch at a time: the physical indexes of a run of live rows, and a
// Vector per projected column whose storage follows the column's Delta
// type (KindOf): long, integer, short and byte as []int64; float and
// double as []float64; string and binary as one []byte with offsets;
// boolean as []bool; the other types (decimals, dates, timestamps, nested
// types, void) as []any holding what File gives. Nulls are flags, nil in a
// batch without one. Vector.Value boxes a value as File gives it.
//
// Integers, floats and byte arrays of primitive columns are read from the
// pages' typed values (parquet-go's Page.Data: the decoded page buffer, or
// dictionary indexes into the dictionary page's values, each index
// checked), with definition levels for nulls: no parquet.Value and no
// allocation per value. Without deleted rows in the batch, a required
// long column's vector is the page's own int64s, and a byte array
// column's bytes are the page's own (with a dictionary they are copied).
// Booleans and the types of []any go through parquet.Value and the
// converters of File. Deleted rows are found with the deletion vector's
// iterator, once per batch.
//
// A batch lies within a row group and within one page of each primitive
// column, and spans at most BatchRows rows; it is cut shorter, but never
// below one row, where its copied values would pass 64 MiB: the values of
// a dictionary-encoded string or binary column (a small dictionary and a
// page of indexes can stand for far more bytes), string and binary
// partition values, and nested values (assembled row by row, as File
// does; their byte arrays copied, since a nested column's rows may cross
// pages within a batch). Everything in a batch aliases buffers reused
// after the callback returns, some of them the pages' own.
//
// # Reading Parquet
//
// Values are decoded page by page from the column chunks of the projected
// columns only (parquet-go's page-level API, no reflection); byte arrays
// are not copied. Physical encodings read: INT32, INT64 (TIMESTAMP MILLIS,
// MICROS or NANOS; unannotated timestamps as MICROS), INT96 timestamps
// (old Spark), DATE, decimals as INT32, INT64, FIXED_LEN_BYTE_ARRAY or
// BYTE_ARRAY, booleans, floats, byte arrays; nested groups: structs, lists
// in the 3-level form and the legacy 2-level and bare-repeated forms, and
// maps. Codecs are those of parquet-go (uncompressed, snappy, gzip, zstd,
// lz4raw, brotli); another one is an error naming the column.
//
// Nothing is read that was not checked first (package internal/pqcheck):
// a file's footer and page index are read with one read of its end (more
// only for large ones) and checked before parquet-go parses them; each
// column chunk a read needs is read whole with one read (at most
// pqcheck.MaxChunkBytes, so a scan holds the chunks of one row group in
// memory), its page headers and compressed streams checked, and decoded
// from memory (reading one page of a column is package page's:
// page.Fetcher). A claim that fails a check is an error naming the column and the
// claim ("column pixels: a page claims 2147483647 bytes, 812 are left in
// its chunk").
//
// Columns are matched as the table's column mapping mode says: by logical
// name (none; case-insensitively when the exact name is absent), by
// physical name (name), by Parquet field id, else physical name (id),
// nested fields included. A column missing from a data file (added later)
// reads as null. A narrower type written before a type change is widened
// to the table's type (Type Widening: integers, float or integer to
// double, date to timestamp_ntz, decimal precision and scale, integer to
// decimal); a recorded type change outside those is refused.
//
// # Partition values
//
// Partition columns take their value from the add action
// (ParsePartitionValue): numbers, booleans, dates, timestamps as
// "{date} {time}[.fraction]" or ISO 8601 with a zone, decimals (plain or
// with an exponent), binary as the string's bytes. An empty string or a
// missing value is null, for every type as the protocol says. A timestamp
// without a zone is read in Options.PartitionTimeZone (UTC by default;
// the protocol says it is the writer's zone, which the log does not keep).
//
// # Errors
//
// Errors about a data file are *FileError values that print as
// "version N: PATH: cause". A data file missing from storage (vacuumed)
// has a cause wrapping storage.ErrNotExist. A data file whose footer row
// count differs from the log's numRecords is an error: row counts from the
// log place rows in shards and deletion vectors index them. A malformed file is an error,
// never a panic: parquet-go's panics are recovered (panics of the
// caller's callbacks are not).
package scan
