package api

// JSONSchema is a schema in the Lance Namespace spec's JsonArrowSchema
// form, the one Lance's REST namespace gives for DescribeTable.
type JSONSchema struct {
	Fields   []JSONField       `json:"fields"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// JSONField is one field of a JSONSchema.
type JSONField struct {
	Name     string            `json:"name"`
	Nullable bool              `json:"nullable"`
	Type     JSONType          `json:"type"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// JSONType is a field's Arrow data type: its name as Lance's namespace
// writes it (e.g. "int64", "utf8", "list"), its children for nested
// types and its length for fixed-size ones (for decimals, precision ×
// 1000 + scale).
type JSONType struct {
	Type   string      `json:"type"`
	Fields []JSONField `json:"fields,omitempty"`
	Length *int64      `json:"length,omitempty"`
}
