//go:build !unix

package cache

import (
	"errors"
	"io"
	"os"
)

func diskSpace(path string) (avail, total uint64, err error) {
	return 0, 0, errors.New("free space unknown on this platform")
}

// pidAlive cannot tell; temp files are then only removed by age.
func pidAlive(pid int) bool { return true }

type rfile struct{ f *os.File }

func openRead(path string) (rfile, error) {
	f, err := os.Open(path)
	return rfile{f}, err
}

func (f rfile) size() (int64, error) {
	fi, err := f.f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (f rfile) readAt(b []byte, off int64) error {
	n, err := f.f.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil {
		err = io.EOF
	}
	return err
}

func (f rfile) close() { f.f.Close() }

// isReadOnlyFS: permission errors cover read-only media here.
func isReadOnlyFS(err error) bool { return false }
