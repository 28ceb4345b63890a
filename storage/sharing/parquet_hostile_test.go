package sharing

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Hostile answers in the parquet response format: missing or wrong
// fields, a protocol too new, a delta-format line inside, and what the
// format cannot express. Each fails the open in one line naming the
// cause; the control opens.
func TestHostileParquetAnswers(t *testing.T) {
	h := startHostile(t)
	const schema = `"{\"type\":\"struct\",\"fields\":[{\"name\":\"a\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}},{\"name\":\"p\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}}]}"`
	protocol := `{"protocol":{"minReaderVersion":1}}`
	metadata := func(fields string) string {
		return `{"metaData":{"id":"m1","format":{"provider":"parquet"},"schemaString":` + schema + `,"partitionColumns":["p"]` + fields + `}}`
	}
	file := func(fields string) string {
		return `{"file":{"id":"f1"` + fields + `}}`
	}
	url := h.srv.URL + "/files/t/f1.parquet"
	good := file(fmt.Sprintf(`,"url":%q,"size":10,"partitionValues":{"p":"x"},"stats":"{\"numRecords\":1}"`, url))
	cases := map[string]struct {
		body string
		want string
	}{
		"protocol too new":         {`{"protocol":{"minReaderVersion":2}}` + "\n" + metadata("") + "\n" + good, "parquet-format protocol is version 2"},
		"protocol without version": {`{"protocol":{}}` + "\n" + metadata("") + "\n" + good, "protocol without minReaderVersion"},
		"metaData without id":      {protocol + "\n" + strings.Replace(metadata(""), `"id":"m1",`, "", 1) + "\n" + good, "metaData without an id"},
		"metaData of orc":          {protocol + "\n" + strings.Replace(metadata(""), `"parquet"`, `"orc"`, 1) + "\n" + good, `metaData format "orc"`},
		"metaData without schema":  {protocol + "\n" + `{"metaData":{"id":"m1","format":{"provider":"parquet"},"partitionColumns":[]}}` + "\n" + good, "without a schemaString"},
		"schema not a struct":      {protocol + "\n" + strings.Replace(metadata(""), schema, `"\"long\""`, 1) + "\n" + good, "not a struct schema"},
		"schemaString a number":    {protocol + "\n" + strings.Replace(metadata(""), schema, `5`, 1) + "\n" + good, "schemaString is a JSON number"},
		"column mapping":           {protocol + "\n" + metadata(`,"configuration":{"delta.columnMapping.mode":"name"}`) + "\n" + good, "column mapping"},
		"delta metaData inside":    {protocol + "\n" + `{"metaData":{"deltaMetadata":{"id":"x"}}}` + "\n" + good, "a delta-format metaData in a parquet-format answer"},
		"delta file inside":        {protocol + "\n" + metadata("") + "\n" + fileLine("f1", url, 10), "a delta-format file in a parquet-format answer"},
		"file without url":         {protocol + "\n" + metadata("") + "\n" + file(`,"size":10,"partitionValues":{}`), "a file without a url"},
		"file without size":        {protocol + "\n" + metadata("") + "\n" + file(fmt.Sprintf(`,"url":%q,"partitionValues":{}`, url)), "a file without a size"},
		"size a string":            {protocol + "\n" + metadata("") + "\n" + file(fmt.Sprintf(`,"url":%q,"size":"10","partitionValues":{}`, url)), "file.size is a JSON string"},
		"negative size":            {protocol + "\n" + metadata("") + "\n" + file(fmt.Sprintf(`,"url":%q,"size":-1,"partitionValues":{"p":"x"}`, url)), "size -1"},
		"partitionValues missing":  {protocol + "\n" + metadata("") + "\n" + file(fmt.Sprintf(`,"url":%q,"size":10`, url)), "a file without partitionValues"},
		"partitionValues a list":   {protocol + "\n" + metadata("") + "\n" + file(fmt.Sprintf(`,"url":%q,"size":10,"partitionValues":["x"]`, url)), "a file without partitionValues"},
		"stats not a string":       {protocol + "\n" + metadata("") + "\n" + file(fmt.Sprintf(`,"url":%q,"size":10,"partitionValues":{},"stats":{"numRecords":1}`, url)), "file.stats is a JSON object"},
		"file URL":                 {protocol + "\n" + metadata("") + "\n" + file(`,"url":"file:///etc/passwd","size":10,"partitionValues":{}`), `a "file" URL`},
		"fewer files than said":    {protocol + "\n" + metadata(`,"numFiles":2`) + "\n" + good, "the answer lists 1 files, its metaData says the version has 2"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h.query = func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, tc.body+"\n") }
			st, err := h.open(h.client(0))
			if st != nil {
				t.Fatalf("the table opened, want an error with %q", tc.want)
			}
			checkLine(t, err, tc.want)
		})
	}
	h.query = func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, protocol+"\n"+metadata("")+"\n"+good+"\n")
	}
	if _, err := h.open(h.client(0)); err != nil {
		t.Fatalf("the control: %v", err)
	}
}
