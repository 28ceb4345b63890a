package snapshot

import (
	"fmt"
	"slices"
)

// Protocol checks: which table protocols this reader can read.

const (
	minSupportedReaderVersion = 1
	maxSupportedReaderVersion = 3
)

// SupportedReaderFeatures are the reader table features deltafs reads. It
// is the one place that decides: log replay refuses a version whose
// protocol lists a reader feature missing here. The scan package reads
// widened types, hence typeWidening and its preview name.
var SupportedReaderFeatures = map[string]bool{
	"columnMapping":        true,
	"deletionVectors":      true,
	"timestampNtz":         true,
	"v2Checkpoint":         true,
	"vacuumProtocolCheck":  true,
	"typeWidening":         true,
	"typeWidening-preview": true,
}

// CatalogManagedFeature is the reader feature of a table whose newest
// commits live in its catalog (the Delta protocol's "Catalog-managed
// tables"): its log alone is not the table, so a reader that has only its
// path must refuse it and say to open it through its catalog.
const CatalogManagedFeature = "catalogManaged"

// catalogManagedHint is the Detail of a refusal of a catalog-managed table.
const catalogManagedHint = "the table's newest commits live in its catalog: open it through its catalog (uc://CATALOG.SCHEMA.TABLE)"

// CheckProtocol returns nil when p can be read, else an
// *UnsupportedFeatureError naming the reader version or features. Reader
// versions 1 and 2 (column mapping) need nothing more; version 3 must list
// its reader features, and each must be supported. A catalog-managed table
// is refused with a hint to open it by its catalog name.
func CheckProtocol(p *Protocol) error { return checkProtocol(p, Options{}) }

// checkProtocol is CheckProtocol with a table's options: the
// catalogManaged feature is accepted with o.CatalogManaged, else refused
// with o.CatalogManagedHint (default: open it through its catalog).
func checkProtocol(p *Protocol, o Options) error {
	if p == nil {
		return corruptf("no protocol action")
	}
	e := &UnsupportedFeatureError{ReaderVersion: p.MinReaderVersion}
	for _, f := range p.ReaderFeatures {
		if o.CatalogManaged && f == CatalogManagedFeature {
			continue
		}
		if !SupportedReaderFeatures[f] && !slices.Contains(e.Features, f) {
			e.Features = append(e.Features, f)
		}
	}
	switch {
	case p.MinReaderVersion < minSupportedReaderVersion || p.MinReaderVersion > maxSupportedReaderVersion:
		return e
	case p.MinReaderVersion == 3 && p.ReaderFeatures == nil:
		e.Detail = "reader version 3 without a readerFeatures list"
		return e
	case len(e.Features) > 0:
		if slices.Contains(e.Features, CatalogManagedFeature) {
			e.Detail = catalogManagedHint
			if o.CatalogManagedHint != "" {
				e.Detail = o.CatalogManagedHint
			}
		}
		return e
	}
	return nil
}

func (p *Protocol) String() string {
	s := fmt.Sprintf("reader %d, writer %d", p.MinReaderVersion, p.MinWriterVersion)
	if len(p.ReaderFeatures) > 0 {
		s += fmt.Sprintf(", reader features %v", p.ReaderFeatures)
	}
	return s
}
