package main

import (
	"fmt"
	"math"

	"github.com/dustin/go-humanize"
)

// parseSize reads the value of a size flag (--cache-size, --mem-cache,
// --read-ahead-bytes): a number of bytes with an optional binary or decimal
// unit (4096, 256MiB, 10GiB, 1.5GB, "10 GiB"). Every size flag goes
// through it, so that all of them take the same forms and say the same
// thing when they cannot be read.
func parseSize(flag, s string) (int64, error) {
	n, err := humanize.ParseBytes(s)
	if err != nil || n > math.MaxInt64 {
		return 0, fmt.Errorf("%s %q: want a size such as 10GiB or 500MB", flag, s)
	}
	return int64(n), nil
}
