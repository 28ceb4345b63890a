package storagetest_test

import (
	"testing"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/storagetest"
)

func TestLocal(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Storage {
		st, err := storage.NewLocal(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
}

func TestMem(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Storage { return storagetest.NewMem() })
}
