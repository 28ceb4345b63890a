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
// Each of these modes is one type behind the mode interface (mode.go):
// bytesMode (mode_bytes.go), imageMode (mode_image.go) and jsonMode
// (mode_json.go). The Spec is resolved against each version's schema to
// one of them, which checks that the spec fits the schema; from then on
// the index, names, sizes, cache keys and reads ask the mode what a
// sample's extension and size are, what a data file's index must measure
// (value lengths and first bytes; nothing for images, whose size is
// fixed; the rendered rows for JSON) and what bytes a sample holds.
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
// "__null__"; the text "__null__" escapes its first byte ("%5F_null__"), so
// the two never meet. Names deltafs gives its own entries (_samples.tsv,
// _extents.tsv) are never given to a sample or a class folder: a value that
// would take one escapes its first byte too. Rows sharing an id in a shard
// are all kept: the first keeps the name, later ones become <id>~1<ext>,
// <id>~2<ext>, ... ('~' never appears in an escaped id), with one warning
// per version and shard.
//
// With a class column, samples live in <class>/<id><ext>. Integral floats
// print as integers; a numeric class column is zero-padded to the digits of
// the version's largest value, so every shard names classes alike and
// ImageFolder's sorted class_to_idx equals the label; negative classes are
// not padded. Nulls go to "__null__".
//
// # Shards
//
// A version's data files are taken in append order: by the add action's
// modificationTime, then path, so that files added by a later commit come
// after the ones already there. Two layouts split their live rows into S
// shards whose sizes differ by at most one, every sample in exactly one
// shard:
//
//   - balanced (the default with a class column): each class's rows are
//     dealt round-robin across the shards, the remainders of all classes
//     dealt evenly after them (see deal). Every shard holds every class
//     with at least S samples, so every rank's ImageFolder numbers the
//     classes alike; an append moves only remainder rows (fewer than S per
//     class). The cost: every shard indexes every data file, and reads the
//     pages its rows lie in, which for samples smaller than a page is
//     nearly every page (ranks of one node share the mount's cache).
//     Classes with fewer than S samples are missing from some shards: a
//     warning says so.
//   - contiguous (the default without a class column; --shard-layout
//     contiguous): shard k holds the global range [k*N/S, (k+1)*N/S) of the
//     rows in append order, placed by the live row counts of the log (else
//     of the Parquet footer less the deletion vector), so a shard reads
//     only the data files it overlaps: about 1/S of them. With a class
//     column, shards may hold different classes (a warning says so).
//
// Within a shard, samples are in append order (file, then row), and
// Shard.Global numbers them uniquely within the version.
//
// # Filters
//
// Spec.Where (--where) keeps only the live rows a SQL condition holds
// TRUE for (package filter). A version's data files are decided from the
// log first (where.go): those whose partition values or statistics
// exclude the filter are left out of the layout and never opened (not
// even identified); those the log shows to match wholly are indexed as
// without a filter; the others are indexed reading the filter's columns
// with the id and class columns, keeping only the matching rows (as a
// deletion vector keeps the live ones: fileSamples.rows), and then the
// data column only at the rows kept (one page each, through the cache).
// The live rows read are checked against the log as without a filter.
// Shards, class folders, _samples.tsv, the tar view and the extents are
// computed over the rows kept. A contiguous layout places shards by row
// counts, so it indexes the filtered files when the version is first
// used; a balanced one indexes every file anyway. The filter (its bound
// form: Filter.Key) is part of the key of a file's index and of a JSON
// rendering of its kept rows; page keys do not depend on it, so mounts of
// one table with different filters share a disk cache's pages.
// _commit.json says the filter and how many files it pruned, skipped and
// read (FilterCounts), and so does Describe (the mount's start line).
//
// # Laziness, sharing and memory
//
// Nothing is read at construction. A version's snapshot is built on first
// use; a shard's index when first listed or looked up. The metadata of one
// data file (live rows, ids, classes, sizes) is memoised under (path,
// store identity, deletion vector id, spec) and shared by every version
// and shard that references it, as long as any of them is alive (weak
// pointers), so version N+1 that appends one file reads only that file.
// The most recently used versions (Options.KeepVersions) stay; others go
// when nothing references them.
//
// The index holds no string per sample. A data file keeps its ids as a
// typed column (integers as int64s, other ids as one byte arena with
// offsets, derived ids as nothing but the file's path hash), physical
// rows only when a deletion vector leaves gaps, sizes as uint32s and
// extensions as bytes: about 13 bytes a sample for integer ids and raw
// bytes. A shard keeps, besides its segments (ranges of its files' rows,
// or the rows dealt to it), a hash table of name stems (4 bytes a slot,
// 0.7 full; none when the ids are integers increasing in shard order, as
// `deltafs import` writes them: names are then found by binary search),
// the few renamed duplicates, its class folders' members (4 bytes a
// sample, with a class column), and the offset of every 1024th line of
// _samples.tsv, which is generated for the range read. Names are
// formatted when asked for. Ten million samples of one shard: about 40
// bytes a sample in all, built at about ten million samples a second
// (the id column read as typed vectors, scan.Scan.FileColumns; the data
// column's lengths and first bytes from typed page data), files in
// parallel.
//
// # Reading
//
// Reading a sample reads only its data column's value: the Fetcher
// (page.Fetcher for Parquet; package page owns reading a page) opens a
// data file once, finds the row's page through the offset index and keeps
// decoded pages in a page.Cache keyed by (file, size, column, row
// group/page). page.Cache is the seam for the persistent cache
// (cache.Cache fits through a small adapter); page.MemCache is the
// built-in strict LRU. Encoded images larger than 64 KiB (read by the
// kernel in several requests) are kept in a small LRU so each is encoded
// once; smaller ones are encoded per read, which is cheaper than caching.
//
// # Errors
//
// A shard is served whole or not at all. A data file it needs that cannot
// be indexed — vacuumed away, truncated, corrupt, its deletion vector
// missing or damaged, or holding another number of live rows than the log
// (or footer) claims — fails the shard with a FileError naming the table,
// the version, the file and the cause ("TABLE version N: data file F:
// cause"); the mount answers EIO to its listing and lookups. Nothing is
// sized by a claim before it is checked against what the file holds.
// Failures are not remembered: a later listing tries again. With
// Spec.SkipUnreadable (--skip-unreadable) such files are left out instead,
// with one warning each: the shards are then smaller, and with a balanced
// layout nodes that see different failures would deal differently.
//
// A file that fails after its shard was built (vacuumed since, a corrupt
// page) fails the samples read from it with a FileError; a row whose raw
// pixels have the wrong length fails with a SampleError: never a wrong
// image.
//
// Every cache key of a data file carries its store identity
// (page.FileRef.ID: the ETag, else size and modification time), so a file
// replaced by another of the same name and size is never served from the
// old one's entries.
package sample
