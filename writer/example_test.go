package writer_test

import (
	"context"
	"fmt"
	"os"

	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/writer"
)

// Create a table of two rows, numbered by the writer, then append one.
func Example() {
	dir, _ := os.MkdirTemp("", "table")
	defer os.RemoveAll(dir)
	st, _ := storage.NewLocal(dir)
	schema := &snapshot.StructType{Fields: []snapshot.StructField{
		{Name: "id", Type: &snapshot.PrimitiveType{Name: "long"}},
		{Name: "label", Type: &snapshot.PrimitiveType{Name: "string"}},
		{Name: "content", Type: &snapshot.PrimitiveType{Name: "binary"}},
	}}
	ctx := context.Background()
	opts := writer.Options{IDColumn: "id"}
	res, err := writer.Write(ctx, st, schema, writer.SliceRows([]writer.Row{
		{nil, "cat", []byte("meow")},
		{nil, "dog", []byte("woof")},
	}), opts)
	if err != nil {
		panic(err)
	}
	fmt.Println("version", res.Version, "created", res.Created, "rows", res.Rows, "first id", res.FirstID)
	res, err = writer.Write(ctx, st, schema, writer.SliceRows([]writer.Row{{nil, "bird", []byte("tweet")}}), opts)
	if err != nil {
		panic(err)
	}
	fmt.Println("version", res.Version, "created", res.Created, "rows", res.Rows, "first id", res.FirstID)
	// Output:
	// version 0 created true rows 2 first id 0
	// version 1 created false rows 1 first id 2
}
