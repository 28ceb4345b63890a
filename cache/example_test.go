package cache_test

import (
	"context"
	"fmt"
	"os"

	"github.com/deltafs/deltafs/cache"
)

// A page of a data file, fetched once and then served from the cache; its
// bytes lie 4 KiB-aligned in the entry file for O_DIRECT readers.
func Example() {
	dir, _ := os.MkdirTemp("", "deltafs-cache-example")
	defer os.RemoveAll(dir)

	c, err := cache.New(cache.Options{MemBytes: 64 << 20, Dir: dir, DiskBytes: 1 << 30})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	key := cache.Key{Kind: "page", Table: "s3://bucket/mnist", File: "part-00000.parquet", Version: "19612345", Column: "features", Unit: "3"}
	fetches := 0
	fetch := func(ctx context.Context) ([]byte, error) {
		fetches++
		return []byte("decoded page bytes"), nil // a ranged GET in real life
	}
	for range 3 {
		b, err := c.Get(context.Background(), key, fetch)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s\n", b)
	}
	_, off, n, ok := c.Locate(key)
	fmt.Println("fetches:", fetches, "located:", ok, "offset:", off, "length:", n)
	// Output:
	// decoded page bytes
	// decoded page bytes
	// decoded page bytes
	// fetches: 1 located: true offset: 4096 length: 18
}
