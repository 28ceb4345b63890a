// Package samplelist reads a mount's _samples.tsv for the benchmark
// programs (bench/run, bench/readloop): the relative paths of a
// directory's samples, its first column, without the comment lines.
package samplelist

import (
	"bufio"
	"io"
	"strings"
)

// Parse returns the relative sample paths of a _samples.tsv read from r.
func Parse(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rel, _, _ := strings.Cut(sc.Text(), "\t")
		if rel != "" && !strings.HasPrefix(rel, "#") {
			out = append(out, rel)
		}
	}
	return out, sc.Err()
}
