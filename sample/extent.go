package sample

// SampleKey names the sample at pos by content identity, for caching each
// sample's bytes as one unit (the disk-cache extents of package extents):
// the data file and its size, the physical row, and what of the spec shapes
// the bytes (the data column; the image encoding and shape; for JSON samples
// the schema). Versions and shards sharing a data file share the keys. It
// never fails: the shard was built from readable files (the error is for
// callers that treat keys uniformly).
func (sh *Shard) SampleKey(pos int) (CacheKey, error) {
	sg, li := sh.seg(pos)
	col, unit := sh.r.mode.sampleKey(sh.v, sg.fs.row(li))
	return CacheKey{Kind: "sample", File: sg.ref.Path, Version: sg.ref.identity(), Column: col, Unit: unit}, nil
}

// ExtentsName is the name of a shard's extent manifest (package extents,
// gds.ManifestName); no sample takes it either.
const ExtentsName = "_extents.tsv"
