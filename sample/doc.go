// Package sample decides which rows of a Delta table version are sample
// files, what they are called, where they live and what bytes they hold. The
// FUSE tree (package fs) only presents what this package decides.
//
// # Samples
//
// Every live row of a version is one sample. A Spec says what a sample file
// holds:
//
//   - the bytes of a data column (default: the table's only binary column),
//     with the extension sniffed from the content (PNG, JPEG, GIF, BMP, WebP,
//     TIFF), else taken from a `path` column, else ".bin";
//   - raw uint8 pixels of a data column encoded as an image (Spec.Image):
//     PNG, or PGM/PPM with FormatPNM;
//   - without a data column, the row as JSON: exactly what `deltafs cat`
//     prints for it (scan.AppendJSON) plus "\n".
//
// # Images
//
// PNGs are written with zlib *stored* (uncompressed) deflate blocks and
// filter type 0 on every row. The size of every sample is then a pure
// function of H, W and C (Image.PNGSize; 880 bytes for 28x28 gray), so stat
// sizes are exact without reading pixels and encoding is a copy plus two
// checksums. PNM sizes are fixed too. A row whose pixel bytes are not
// H*W*C long fails (SampleError, EIO in the mount): never a wrong image.
//
// # Names
//
// A sample is named <id><ext>: the id column's value (default `id` when
// the table has one), else "<8 hex of SHA-256 of the data file path>-<row>",
// which is stable across versions sharing the file. Ids are escaped
// reversibly by EscapeName (%XX for '%', '~', '/', NUL, control bytes and
// invalid UTF-8; a leading '.'; "" becomes "%"), and names longer than 255
// bytes keep a prefix plus "~h" and 16 hex digits of a hash. A null id is
// "__null__". Rows sharing an id in a shard are all kept: the first keeps
// the name, later ones become <id>~1<ext>, <id>~2<ext>, ... ('~' never
// appears in an escaped id), with one warning per version and shard.
//
// With a class column, samples live in <class>/<id><ext>. Integral floats
// print as integers; a numeric class column is zero-padded to the digits of
// the version's largest value (from the log's statistics or partition
// values when present, else a scan of that column alone), so every shard
// names classes alike and ImageFolder's sorted class_to_idx equals the
// label; negative classes are not padded. Nulls go to "__null__".
//
// # Shards
//
// A version's data files, in snapshot order (sorted by path), have their
// live rows concatenated; shard k of S holds the global range
// [k*N/S, (k+1)*N/S), so sizes differ by at most one and every sample is in
// exactly one shard. Live row counts come from the log (AddFile.LiveRows),
// else from the Parquet footer less the deletion vector's cardinality, so a
// shard reads only the data files it overlaps: about 1/S of them.
//
// # Laziness and sharing
//
// Nothing is read at construction. A version's snapshot is built on first
// use; a shard's index when first listed or looked up. The metadata of one
// data file (live rows, ids, classes, sizes) is memoised under (path,
// deletion vector id, spec) and shared by every version and shard that
// references it, as long as any of them is alive (weak pointers), so
// version N+1 that appends one file reads only that file.
//
// # Reading
//
// Reading a sample reads only its data column's value: the Fetcher
// (PageFetcher for Parquet) opens a data file once, finds the row's page
// through the offset index and keeps decoded pages in a BlobCache keyed by
// (file, size, column, row group/page). BlobCache is the seam for the
// persistent cache (cache.Cache fits through a small adapter); MemCache is
// the built-in strict LRU. Encoded images larger than 64 KiB (read by the
// kernel in several requests) are kept in a small LRU so each is encoded
// once; smaller ones are encoded per read, which is cheaper than caching.
//
// # Errors
//
// A data file that cannot be read (vacuumed away, corrupt) makes only its
// samples fail: they are still listed (with derived names, at the shard
// root), and reading them returns a FileError wrapping the cause
// (storage.ErrNotExist for a vacuumed file), logged with the file and
// version.
package sample
