package sample

import (
	"errors"
	"testing"
)

// A data file's error names the file once, whichever way a lower layer
// named it in the cause: the storage key, the path as the log spells it
// (escaped or not), or the object's whole location.
func TestFileErrorNamesTheFileOnce(t *testing.T) {
	const want = "s3://train/mnist version 0: data file a%20b/part-7.parquet: read 16951 bytes at 0: request timed out (GetObject)"
	for _, cause := range []string{
		"read 16951 bytes at 0: s3://train/mnist/a%20b/part-7.parquet: request timed out (GetObject)",
		"read 16951 bytes at 0: s3://train/mnist/a b/part-7.parquet: request timed out (GetObject)",
		"a b/part-7.parquet: read 16951 bytes at 0: request timed out (GetObject)",
		"a%20b/part-7.parquet: read 16951 bytes at 0: a%20b/part-7.parquet: request timed out (GetObject)",
	} {
		e := &FileError{Table: "s3://train/mnist", Version: 0, Path: "a%20b/part-7.parquet", Err: errors.New(cause)}
		if got := e.Error(); got != want {
			t.Errorf("cause %q:\n got %s\nwant %s", cause, got, want)
		}
	}
	// A store's error about the whole table names it: once is enough.
	e := &FileError{Table: "s3://train/mnist", Path: "part-7.parquet", Err: errors.New("read 9 bytes at 0: s3://train/mnist: endpoint http://h unreachable")}
	if got := e.Error(); got != "s3://train/mnist version 0: data file part-7.parquet: read 9 bytes at 0: endpoint http://h unreachable" {
		t.Errorf("got %s", got)
	}
	// A file name that is part of another one's is left alone.
	e = &FileError{Table: "t", Path: "7.parquet", Err: errors.New("part-7.parquet: gone")}
	if got := e.Error(); got != "t version 0: data file 7.parquet: part-7.parquet: gone" {
		t.Errorf("got %s", got)
	}
}
