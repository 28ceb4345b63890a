package snapshot

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The table schema (PROTOCOL.md, "Schema Serialization Format"). A DataType is
// one of *PrimitiveType, *StructType, *ArrayType or *MapType.

// DataType is a Delta data type.
type DataType interface {
	// String is the type as Delta writes it: "long", "decimal(10,2)",
	// "struct<...>" and so on.
	String() string
}

// PrimitiveType is a non-nested type: string, long, integer, short, byte,
// float, double, decimal(p,s), boolean, binary, date, timestamp,
// timestamp_ntz, variant.
type PrimitiveType struct {
	Name string
}

func (p *PrimitiveType) String() string { return p.Name }

// Decimal returns the precision and scale of a decimal type.
func (p *PrimitiveType) Decimal() (precision, scale int, ok bool) {
	if !strings.HasPrefix(p.Name, "decimal(") || !strings.HasSuffix(p.Name, ")") {
		return 0, 0, false
	}
	parts := strings.Split(p.Name[len("decimal("):len(p.Name)-1], ",")
	if len(parts) != 2 {
		return 0, 0, false
	}
	pr, err1 := strconv.Atoi(strings.TrimSpace(parts[0]))
	sc, err2 := strconv.Atoi(strings.TrimSpace(parts[1]))
	return pr, sc, err1 == nil && err2 == nil
}

// StructField is one field of a struct.
type StructField struct {
	Name     string
	Type     DataType
	Nullable bool
	Metadata map[string]any
}

// Column-mapping metadata keys.
const (
	MetaPhysicalName = "delta.columnMapping.physicalName"
	MetaColumnID     = "delta.columnMapping.id"
)

// PhysicalName is the name of the field in data files and partitionValues:
// its delta.columnMapping.physicalName under column mapping, else its name.
func (f *StructField) PhysicalName() string {
	if s, ok := f.Metadata[MetaPhysicalName].(string); ok && s != "" {
		return s
	}
	return f.Name
}

// FieldID is the delta.columnMapping.id of the field, if set.
func (f *StructField) FieldID() (int64, bool) {
	switch v := f.Metadata[MetaColumnID].(type) {
	case float64:
		return int64(v), true
	case json.Number:
		n, err := v.Int64()
		return n, err == nil
	}
	return 0, false
}

// StructType is a struct, and the top level of a schema.
type StructType struct {
	Fields []StructField
}

func (s *StructType) String() string {
	parts := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		parts[i] = f.Name + ":" + f.Type.String()
	}
	return "struct<" + strings.Join(parts, ",") + ">"
}

// Field returns the field with the given logical name, or nil.
func (s *StructType) Field(name string) *StructField {
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return &s.Fields[i]
		}
	}
	return nil
}

// Names lists the top-level logical field names in order.
func (s *StructType) Names() []string {
	out := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		out[i] = f.Name
	}
	return out
}

// ArrayType is an array.
type ArrayType struct {
	ElementType  DataType
	ContainsNull bool
}

func (a *ArrayType) String() string { return "array<" + a.ElementType.String() + ">" }

// MapType is a map.
type MapType struct {
	KeyType           DataType
	ValueType         DataType
	ValueContainsNull bool
}

func (m *MapType) String() string {
	return "map<" + m.KeyType.String() + "," + m.ValueType.String() + ">"
}

// ParseSchema parses a metaData schemaString.
func ParseSchema(schemaString string) (*StructType, error) {
	dec := json.NewDecoder(strings.NewReader(schemaString))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	t, err := parseType(raw)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	st, ok := t.(*StructType)
	if !ok {
		return nil, fmt.Errorf("schema: top level is %s, not a struct", t)
	}
	return st, nil
}

func parseType(raw any) (DataType, error) {
	switch v := raw.(type) {
	case string:
		return &PrimitiveType{Name: v}, nil
	case map[string]any:
		switch v["type"] {
		case "struct":
			fields, _ := v["fields"].([]any)
			st := &StructType{Fields: make([]StructField, 0, len(fields))}
			for i, rf := range fields {
				fm, ok := rf.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("field %d is not an object", i)
				}
				name, _ := fm["name"].(string)
				ft, err := parseType(fm["type"])
				if err != nil {
					return nil, fmt.Errorf("field %q: %w", name, err)
				}
				nullable, _ := fm["nullable"].(bool)
				meta, _ := fm["metadata"].(map[string]any)
				st.Fields = append(st.Fields, StructField{Name: name, Type: ft, Nullable: nullable, Metadata: normaliseNumbers(meta)})
			}
			return st, nil
		case "array":
			et, err := parseType(v["elementType"])
			if err != nil {
				return nil, fmt.Errorf("array element: %w", err)
			}
			cn, _ := v["containsNull"].(bool)
			return &ArrayType{ElementType: et, ContainsNull: cn}, nil
		case "map":
			kt, err := parseType(v["keyType"])
			if err != nil {
				return nil, fmt.Errorf("map key: %w", err)
			}
			vt, err := parseType(v["valueType"])
			if err != nil {
				return nil, fmt.Errorf("map value: %w", err)
			}
			vcn, _ := v["valueContainsNull"].(bool)
			return &MapType{KeyType: kt, ValueType: vt, ValueContainsNull: vcn}, nil
		}
		return nil, fmt.Errorf("unknown type %v", v["type"])
	}
	return nil, fmt.Errorf("unexpected type value %v", raw)
}

// normaliseNumbers turns json.Number values into float64, so metadata reads
// like encoding/json's default.
func normaliseNumbers(m map[string]any) map[string]any {
	for k, v := range m {
		if n, ok := v.(json.Number); ok {
			f, _ := n.Float64()
			m[k] = f
		}
	}
	return m
}

// JSONDepth is how deeply the schema nests as Delta's JSON (objects and
// arrays, the fields' metadata included): 2 for a struct without fields.
func (s *StructType) JSONDepth() int { return typeDepth(s) }

// typeDepth is the JSON nesting depth of t as typeJSON writes it.
func typeDepth(t DataType) int {
	switch v := t.(type) {
	case *StructType:
		d := 1 // the fields array
		for _, f := range v.Fields {
			d = max(d, 2+max(typeDepth(f.Type), valueDepth(f.Metadata))) // the array, the field's object
		}
		return 1 + d
	case *ArrayType:
		return 1 + typeDepth(v.ElementType)
	case *MapType:
		return 1 + max(typeDepth(v.KeyType), typeDepth(v.ValueType))
	}
	return 0
}

// valueDepth is the nesting depth of a decoded JSON value (metadata).
func valueDepth(v any) int {
	d := 0
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			d = max(d, valueDepth(x))
		}
	case []any:
		for _, x := range v {
			d = max(d, valueDepth(x))
		}
	default:
		return 0
	}
	return 1 + d
}

// MarshalJSON writes the schema in Delta's format.
func (s *StructType) MarshalJSON() ([]byte, error) { return json.Marshal(typeJSON(s)) }

func typeJSON(t DataType) any {
	switch v := t.(type) {
	case *PrimitiveType:
		return v.Name
	case *StructType:
		fields := make([]any, len(v.Fields))
		for i, f := range v.Fields {
			meta := f.Metadata
			if meta == nil {
				meta = map[string]any{}
			}
			fields[i] = map[string]any{"name": f.Name, "type": typeJSON(f.Type), "nullable": f.Nullable, "metadata": meta}
		}
		return map[string]any{"type": "struct", "fields": fields}
	case *ArrayType:
		return map[string]any{"type": "array", "elementType": typeJSON(v.ElementType), "containsNull": v.ContainsNull}
	case *MapType:
		return map[string]any{"type": "map", "keyType": typeJSON(v.KeyType), "valueType": typeJSON(v.ValueType), "valueContainsNull": v.ValueContainsNull}
	}
	return nil
}
