package table

// Every backend deltafs opens by URL registers its schemes with
// storage.Register when its package is loaded; this is the one place that
// loads them, so table.Open (and every command, which opens through it or
// through storage.Open after importing table) knows each of them. A new
// backend is one more line here.
import (
	_ "github.com/deltafs/deltafs/catalog/unity"    // uc://catalog.schema.table
	_ "github.com/deltafs/deltafs/storage/azstore"  // abfss://, abfs://, az://, wasbs://, wasb://
	_ "github.com/deltafs/deltafs/storage/gcsstore" // gs://
	_ "github.com/deltafs/deltafs/storage/s3store"  // s3://
	_ "github.com/deltafs/deltafs/storage/sharing"  // PROFILE.share#share.schema.table
)
