package scan

import (
	"encoding/json"
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/deltafs/deltafs/snapshot"
)

func TestAppendJSON(t *testing.T) {
	schema, err := snapshot.ParseSchema(schemaJSON(
		"s:string", "b:binary", "l:long", "i:integer", "sh:short", "by:byte",
		"f:float", "d:double", "dn:double", "dp:double", "dm:double", "tiny:double", "big:double",
		"bo:boolean", "dec:decimal(10,2)", "decn:decimal(5,3)", "dec0:decimal(38,0)",
		"date:date", "ts:timestamp", "ntz:timestamp_ntz", "nul:string",
		`st:{"type":"struct","fields":[{"name":"x","type":"integer","nullable":true,"metadata":{}},{"name":"d","type":"date","nullable":true,"metadata":{}}]}`,
		`arr:{"type":"array","elementType":"timestamp","containsNull":true}`,
		`ms:{"type":"map","keyType":"string","valueType":"binary","valueContainsNull":true}`,
		`mi:{"type":"map","keyType":"integer","valueType":"long","valueContainsNull":true}`,
	))
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2021, 1, 1, 0, 0, 0, 123456789, time.UTC)
	bigU, _ := new(big.Int).SetString("-12345678901234567890123456789", 10)
	row := []any{
		"q\"\\\n\t\x01<>&\u2028é\xff", []byte{0, 1, 2, 250}, int64(math.MaxInt64), int32(-7), int16(300), int8(-1),
		float32(0.1), 1.0, math.NaN(), math.Inf(1), math.Inf(-1), 1e-7, 1e21,
		true, DecimalFromInt64(12345, 2), DecimalFromInt64(-5, 3), NewDecimal(bigU, 0),
		time.Date(2021, 9, 8, 0, 0, 0, 0, time.UTC), ts, ts, nil,
		Struct{Names: []string{"x", "d"}, Values: []any{int32(1), time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)}},
		[]any{ts, nil},
		Map{{Key: "k", Value: []byte("v")}, {Key: "n", Value: nil}},
		Map{{Key: int32(1), Value: int64(2)}},
	}
	got := string(AppendJSON([]byte("prefix "), schema.Fields, row))
	want := `prefix {"s":"q\"\\\n\t\u0001<>&\u2028é\ufffd","b":"AAEC+g==","l":9223372036854775807,"i":-7,"sh":300,"by":-1,` +
		`"f":0.1,"d":1,"dn":"NaN","dp":"Infinity","dm":"-Infinity","tiny":1e-7,"big":1e+21,` +
		`"bo":true,"dec":123.45,"decn":-0.005,"dec0":-12345678901234567890123456789,` +
		`"date":"2021-09-08","ts":"2021-01-01T00:00:00.123456Z","ntz":"2021-01-01T00:00:00.123456","nul":null,` +
		`"st":{"x":1,"d":"1970-01-01"},"arr":["2021-01-01T00:00:00.123456Z",null],` +
		`"ms":{"k":"dg==","n":null},"mi":[{"key":1,"value":2}]}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if !json.Valid([]byte(got[len("prefix "):])) {
		t.Error("not valid JSON")
	}
	// Missing trailing values are null; a timestamp not in UTC is shown in UTC.
	f, _ := snapshot.ParseSchema(schemaJSON("a:timestamp", "b:long"))
	if got := string(AppendJSON(nil, f.Fields, []any{time.Date(2021, 1, 1, 2, 0, 0, 0, time.FixedZone("x", 7200))})); got != `{"a":"2021-01-01T00:00:00.000000Z","b":null}` {
		t.Errorf("got %s", got)
	}
}

func TestAppendJSONFloats(t *testing.T) {
	f, _ := snapshot.ParseSchema(schemaJSON("d:double", "f:float"))
	for _, c := range []struct {
		d    float64
		f    float32
		want string
	}{
		{0, 0, `{"d":0,"f":0}`},
		{-0.5, 3.4, `{"d":-0.5,"f":3.4}`},
		{1.234567890123, 1e-7, `{"d":1.234567890123,"f":1e-7}`},
		{123456789012345678, 16777216, `{"d":123456789012345680,"f":16777216}`},
		{float64(float32(3.4)), float32(math.Inf(1)), `{"d":3.4000000953674316,"f":"Infinity"}`},
	} {
		if got := string(AppendJSON(nil, f.Fields, []any{c.d, c.f})); got != c.want {
			t.Errorf("%v %v: got %s, want %s", c.d, c.f, got, c.want)
		}
	}
}

func TestDecimal(t *testing.T) {
	for _, c := range []struct {
		d    Decimal
		want string
	}{
		{DecimalFromInt64(0, 0), "0"},
		{DecimalFromInt64(0, 2), "0.00"},
		{DecimalFromInt64(5, 1), "0.5"},
		{DecimalFromInt64(-12345, 2), "-123.45"},
		{DecimalFromInt64(7, 0).Rescale(3), "7.000"},
		{DecimalFromInt64(math.MaxInt64, 0).Rescale(2), "9223372036854775807.00"},
		{decimalFromBytes([]byte{0xff, 0xfe}, 1), "-0.2"},
		{decimalFromBytes([]byte{0x80, 0, 0, 0, 0, 0, 0, 0, 0}, 0), "-2361183241434822606848"},
		{decimalFromBytes([]byte{0x01, 0, 0, 0, 0, 0, 0, 0, 0}, 3), "18446744073709551.616"},
	} {
		if got := c.d.String(); got != c.want {
			t.Errorf("got %s, want %s", got, c.want)
		}
	}
	if r := DecimalFromInt64(-12345, 2).Rat(); r.RatString() != "-2469/20" {
		t.Errorf("Rat = %s", r.RatString())
	}
	if b, _ := json.Marshal(map[string]any{"x": DecimalFromInt64(150, 2)}); string(b) != `{"x":1.50}` {
		t.Errorf("json.Marshal = %s", b)
	}
}
