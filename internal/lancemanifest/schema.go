package lancemanifest

import (
	"strconv"
	"strings"

	"github.com/flightns/flightns/api"
)

// Schema is the manifest's schema as a JSONSchema: its top-level fields
// (parent -1) in order, each with its children. A malformed field tree
// (cycles, shared ids) yields at most one JSON field per manifest field.
func (m *Manifest) Schema() api.JSONSchema {
	kids := map[int32][]Field{}
	for _, f := range m.Fields {
		kids[f.ParentID] = append(kids[f.ParentID], f)
	}
	budget := len(m.Fields)
	var build func(f Field, depth int) api.JSONField
	build = func(f Field, depth int) api.JSONField {
		budget--
		var children []api.JSONField
		if depth < 64 && f.ID != f.ParentID {
			for _, k := range kids[f.ID] {
				if budget <= 0 {
					break
				}
				children = append(children, build(k, depth+1))
			}
		}
		return api.JSONField{Name: f.Name, Nullable: f.Nullable, Type: jsonType(f.LogicalType, children)}
	}
	s := api.JSONSchema{Fields: []api.JSONField{}}
	for _, f := range kids[-1] {
		if budget <= 0 {
			break
		}
		s.Fields = append(s.Fields, build(f, 0))
	}
	return s
}

// scalarTypes maps Lance's logical type names to Arrow's, where they
// differ only in name.
var scalarTypes = map[string]string{
	"halffloat": "float16", "float": "float32", "double": "float64",
	"string": "utf8", "large_string": "large_utf8",
	"date32:day": "date32", "date64:ms": "date64",
}

// jsonType converts a Lance logical type (protos/file.proto, Field) to a
// JSONType; children are the field's child fields.
func jsonType(logical string, children []api.JSONField) api.JSONType {
	if t, ok := scalarTypes[logical]; ok {
		return api.JSONType{Type: t}
	}
	parts := strings.Split(logical, ":")
	length := func(s string) *int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil
		}
		return &n
	}
	switch parts[0] {
	case "struct":
		return api.JSONType{Type: "struct", Fields: children}
	case "list", "list.struct":
		return api.JSONType{Type: "list", Fields: children}
	case "large_list", "large_list.struct":
		return api.JSONType{Type: "large_list", Fields: children}
	case "fixed_size_list":
		// fixed_size_list:<item type>:<n>
		t := api.JSONType{Type: "fixed_size_list", Fields: children}
		if len(parts) >= 3 {
			t.Length = length(parts[len(parts)-1])
			if len(children) == 0 {
				inner := jsonType(strings.Join(parts[1:len(parts)-1], ":"), nil)
				t.Fields = []api.JSONField{{Name: "item", Nullable: true, Type: inner}}
			}
		}
		return t
	case "fixed_size_binary":
		t := api.JSONType{Type: "fixed_size_binary"}
		if len(parts) == 2 {
			t.Length = length(parts[1])
		}
		return t
	case "decimal":
		// decimal:<bits>:<precision>:<scale>
		if len(parts) == 4 {
			p, perr := strconv.ParseInt(parts[2], 10, 64)
			s, serr := strconv.ParseInt(parts[3], 10, 64)
			if perr == nil && serr == nil {
				n := p*1000 + s
				return api.JSONType{Type: "decimal" + parts[1], Length: &n}
			}
		}
		return api.JSONType{Type: "decimal128"}
	case "time":
		if len(parts) == 2 && (parts[1] == "s" || parts[1] == "ms") {
			return api.JSONType{Type: "time32"}
		}
		return api.JSONType{Type: "time64"}
	case "timestamp", "duration":
		return api.JSONType{Type: parts[0]}
	case "dict":
		// dict:<value type>:<index type>:<ordered>: the value type.
		if len(parts) >= 4 {
			return jsonType(strings.Join(parts[1:len(parts)-2], ":"), children)
		}
	}
	return api.JSONType{Type: logical, Fields: children}
}
