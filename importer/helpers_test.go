package importer

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/snapshot/snaptest"

	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/writer"
)

// writeNpy writes a version 1.0 .npy file with the given header dict and
// record bytes, gzipped when the name ends in .gz.
func writeNpy(t *testing.T, path, dict string, data []byte) {
	t.Helper()
	out := append(testkit.NPYHeader(dict), data...)
	if strings.HasSuffix(path, ".gz") {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write(out)
		zw.Close()
		out = z.Bytes()
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// importPath opens src and imports it into the table at dir.
func importPath(t *testing.T, src, dir string, opts writer.Options) (*writer.Result, error) {
	t.Helper()
	s, err := Open(context.Background(), src, Options{})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return Import(context.Background(), snaptest.Local(t, dir), s, opts)
}

// schemaString prints a schema as name:type,...
func schemaString(s *snapshot.StructType) string {
	var parts []string
	for _, f := range s.Fields {
		parts = append(parts, fmt.Sprintf("%s:%s", f.Name, f.Type))
	}
	return strings.Join(parts, ",")
}
