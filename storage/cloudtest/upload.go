package cloudtest

import (
	"io/fs"
	"os"
	"path/filepath"
)

// WalkFiles calls put for every regular file under localDir (a table
// directory such as testdata/delta/<table>) with its path relative to
// localDir, slash-separated (_delta_log/0.json), and its bytes, and
// returns the number of files put. It stops at the first error.
func WalkFiles(localDir string, put func(rel string, data []byte) error) (int, error) {
	n := 0
	err := filepath.WalkDir(localDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(localDir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := put(filepath.ToSlash(rel), data); err != nil {
			return err
		}
		n++
		return nil
	})
	return n, err
}
