package pqcheck

// The limits of what deltafs reads from a Parquet file. Each bounds an
// allocation by a number the file claims, at a size no real file comes
// near; a file over one fails with an error saying which.
const (
	// MaxFooterBytes bounds the footer (the Thrift FileMetaData).
	MaxFooterBytes = 64 << 20
	// MaxTailBytes bounds the footer and page index together: the end of
	// a data file read at open.
	MaxTailBytes = 256 << 20
	// MaxDecodeBytes bounds what one Thrift structure (a footer, one
	// column or offset index, one page header) decodes to in memory.
	MaxDecodeBytes = 256 << 20
	// MaxChunkBytes bounds a column chunk read whole into memory (a scan
	// reads each chunk it needs whole, and a file without an offset index
	// is read a chunk at a time).
	MaxChunkBytes = 1 << 30
	// MaxPageBytes bounds a page's uncompressed size.
	MaxPageBytes = 1 << 30
	// MaxPageExpansion bounds a page's uncompressed size by its compressed
	// size (with 1 MiB to spare): no codec reaches this ratio on real
	// pages.
	MaxPageExpansion = 1024
	// MaxPageValues bounds the values of one page: parquet-go allocates
	// levels and offsets for each, and deltafs a value slot each. Writers
	// cut pages at 20,000 rows or about 1 MiB; an all-null column of an
	// older writer may put a whole row group in one page.
	MaxPageValues = 1 << 24
)
