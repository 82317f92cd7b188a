package manifesttable

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightns/flightns/nserror"
)

// The object types of __manifest rows.
const (
	TypeNamespace    = "namespace"
	TypeTable        = "table"
	TypeTableVersion = "table_version"
)

// Row is one row of __manifest. Empty strings and zero numbers are NULL
// (versions, sizes and read versions start at 1; a partition spec id is
// present when HasSpecID is set).
type Row struct {
	ObjectID     string    `json:"object_id"`
	ObjectType   string    `json:"object_type"`
	Location     string    `json:"location,omitempty"`
	Metadata     string    `json:"metadata,omitempty"` // JSON properties
	BaseObjects  []string  `json:"base_objects,omitempty"`
	TableVersion uint64    `json:"table_version,omitempty"`
	ManifestPath string    `json:"manifest_path,omitempty"`
	ManifestSize uint64    `json:"manifest_size,omitempty"`
	CommittedAt  time.Time `json:"committed_at,omitzero"`
	TxnID        string    `json:"txn_id,omitempty"`
	ReadVersion  uint64    `json:"read_version,omitempty"`
	ReadBranch   string    `json:"read_branch,omitempty"`
	ReadTag      string    `json:"read_tag,omitempty"`
	HasSpecID    bool      `json:"has_spec_id,omitempty"`
	SpecID       int32     `json:"partition_spec_id,omitempty"`
	// Branch is the Lance branch of a table_version row ("" for main,
	// NULL in storage).
	Branch string `json:"branch,omitempty"`
	// A table_version row's statistics, read from its Lance manifest
	// after the commit (see stats.go); zero and "" until then.
	NumRows      uint64 `json:"num_rows,omitempty"`
	NumFragments uint64 `json:"num_fragments,omitempty"`
	DataBytes    uint64 `json:"data_bytes,omitempty"`
	Schema       string `json:"schema,omitempty"` // the spec's JsonArrowSchema
	// What a table_version row's manifest says of its upkeep (see
	// maintenance.go), read with its statistics: the fragments under
	// SmallFragmentRows physical rows and the rows marked deleted (both
	// NULL unless HasFragmentStats: rows read before they were kept),
	// and the operation of the version's Lance transaction ("append",
	// "rewrite" for a compaction, …; "" when unknown).
	SmallFragments   uint64 `json:"small_fragments,omitempty"`
	DeletedRows      uint64 `json:"deleted_rows,omitempty"`
	HasFragmentStats bool   `json:"has_fragment_stats,omitempty"`
	Operation        string `json:"operation,omitempty"`
	// LastCleanupAt is, on a table row, when a catalog change last
	// removed version records of the table (delete_versions,
	// delete_version_ranges); zero when none did.
	LastCleanupAt time.Time `json:"last_cleanup_at,omitzero"`
	// Extra holds partition_field_<id> columns and columns found in storage
	// that this version does not know, by column name. A value's Go type
	// follows its column's type (see ColumnType); nil is NULL.
	Extra map[string]any `json:"extra,omitempty"`
}

// Key identifies a row: (type, id) for namespaces and tables, (type, id,
// branch, version) for table versions, whose id is their table's and
// whose branch is "" on main.
type Key struct {
	Type    string
	ID      string
	Branch  string
	Version uint64
}

// Key returns the row's key.
func (r *Row) Key() Key {
	return Key{Type: r.ObjectType, ID: r.ObjectID, Branch: r.Branch, Version: r.TableVersion}
}

func (k Key) String() string {
	if k.Type == TypeTableVersion && k.Branch != "" {
		return fmt.Sprintf("%s %s@%s:%d", k.Type, k.ID, k.Branch, k.Version)
	}
	if k.Type == TypeTableVersion {
		return fmt.Sprintf("%s %s@%d", k.Type, k.ID, k.Version)
	}
	return k.Type + " " + k.ID
}

// Less orders keys: by type, id, branch (main first), version.
func (k Key) Less(o Key) bool {
	if k.Type != o.Type {
		return k.Type < o.Type
	}
	if k.ID != o.ID {
		return k.ID < o.ID
	}
	if k.Branch != o.Branch {
		return k.Branch < o.Branch
	}
	return k.Version < o.Version
}

// Validate checks a row before it is written.
func (r *Row) Validate() error {
	switch r.ObjectType {
	case TypeNamespace, TypeTable:
		if r.TableVersion != 0 {
			return nserror.New(nserror.InvalidInput, "a %s row has no table_version", r.ObjectType)
		}
	case TypeTableVersion:
		if r.TableVersion == 0 {
			return nserror.New(nserror.InvalidInput, "a table_version row needs table_version >= 1")
		}
	default:
		return nserror.New(nserror.InvalidInput, "object_type %q is not namespace, table or table_version", r.ObjectType)
	}
	if r.ObjectID == "" && r.ObjectType != TypeNamespace {
		return nserror.New(nserror.InvalidInput, "a %s row needs an object_id", r.ObjectType)
	}
	if r.Metadata != "" && !json.Valid([]byte(r.Metadata)) {
		return nserror.New(nserror.InvalidInput, "metadata of %s is not JSON", r.Key())
	}
	for name, v := range r.Extra {
		if !extraColumn.MatchString(name) || baseColumns[name] {
			return nserror.New(nserror.InvalidInput, "extra column %q is not a valid column name", name)
		}
		if v == nil {
			continue
		}
		if _, ok := TypeOfValue(v); !ok {
			return nserror.New(nserror.InvalidInput, "column %s: unsupported value %T", name, v)
		}
	}
	return nil
}

var extraColumn = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// ColumnType is the type of an extra column, by name: "bool", "int32",
// "int64", "uint64", "float64", "utf8", "binary", "date32" (days since the
// epoch) and "timestamp" (microseconds, UTC). Their Go values are bool,
// int32, int64, uint64, float64, string, []byte, arrow.Date32 and
// time.Time.
type ColumnType string

// The extra column types.
const (
	ColBool      ColumnType = "bool"
	ColInt32     ColumnType = "int32"
	ColInt64     ColumnType = "int64"
	ColUint64    ColumnType = "uint64"
	ColFloat64   ColumnType = "float64"
	ColUtf8      ColumnType = "utf8"
	ColBinary    ColumnType = "binary"
	ColDate32    ColumnType = "date32"
	ColTimestamp ColumnType = "timestamp"
)

// ArrowType is the column's Arrow type.
func (c ColumnType) ArrowType() (arrow.DataType, bool) {
	switch c {
	case ColBool:
		return arrow.FixedWidthTypes.Boolean, true
	case ColInt32:
		return arrow.PrimitiveTypes.Int32, true
	case ColInt64:
		return arrow.PrimitiveTypes.Int64, true
	case ColUint64:
		return arrow.PrimitiveTypes.Uint64, true
	case ColFloat64:
		return arrow.PrimitiveTypes.Float64, true
	case ColUtf8:
		return arrow.BinaryTypes.String, true
	case ColBinary:
		return arrow.BinaryTypes.Binary, true
	case ColDate32:
		return arrow.FixedWidthTypes.Date32, true
	case ColTimestamp:
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, true
	}
	return nil, false
}

// columnTypeOf is the ColumnType of an Arrow type, if it is one.
func columnTypeOf(t arrow.DataType) (ColumnType, bool) {
	if ts, ok := t.(*arrow.TimestampType); ok && ts.Unit == arrow.Microsecond && (ts.TimeZone == "UTC" || ts.TimeZone == "Etc/UTC") {
		return ColTimestamp, true
	}
	for _, c := range []ColumnType{ColBool, ColInt32, ColInt64, ColUint64, ColFloat64, ColUtf8, ColBinary, ColDate32, ColTimestamp} {
		if at, _ := c.ArrowType(); arrow.TypeEqual(at, t) {
			return c, true
		}
	}
	return "", false
}

// TypeOfValue is the ColumnType of a Go value.
func TypeOfValue(v any) (ColumnType, bool) {
	switch v.(type) {
	case bool:
		return ColBool, true
	case int32:
		return ColInt32, true
	case int64:
		return ColInt64, true
	case uint64:
		return ColUint64, true
	case float64:
		return ColFloat64, true
	case string:
		return ColUtf8, true
	case []byte:
		return ColBinary, true
	case arrow.Date32:
		return ColDate32, true
	case time.Time:
		return ColTimestamp, true
	}
	return "", false
}

// Columns maps extra column names to their types.
type Columns map[string]ColumnType

// Names returns the column names in order.
func (c Columns) Names() []string {
	out := make([]string, 0, len(c))
	for n := range c {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// merge adds the extra columns of rows, failing if a column would change
// type.
func (c Columns) merge(rows []Row) error {
	for i := range rows {
		for name, v := range rows[i].Extra {
			if v == nil {
				continue
			}
			t, ok := TypeOfValue(v)
			if !ok {
				return nserror.New(nserror.InvalidInput, "column %s: unsupported value %T", name, v)
			}
			if have, ok := c[name]; ok && have != t {
				return nserror.New(nserror.InvalidInput, "column %s is %s, not %s", name, have, t)
			}
			c[name] = t
		}
	}
	return nil
}

// typedValue is an extra value in JSON: its type and its value.
type typedValue struct {
	T ColumnType      `json:"t"`
	V json.RawMessage `json:"v"`
}

// MarshalRow encodes a row for the commit log; extra values carry their
// types so that the row decodes to the same Go values.
func MarshalRow(r Row) ([]byte, error) {
	type plain Row
	aux := struct {
		plain
		Extra map[string]typedValue `json:"extra,omitempty"`
	}{plain: plain(r)}
	if len(r.Extra) > 0 {
		aux.Extra = map[string]typedValue{}
		for k, v := range r.Extra {
			if v == nil {
				continue
			}
			t, ok := TypeOfValue(v)
			if !ok {
				return nil, nserror.New(nserror.InvalidInput, "column %s: unsupported value %T", k, v)
			}
			switch x := v.(type) {
			case arrow.Date32:
				v = int32(x)
			case time.Time:
				// Microseconds: every int64 timestamp, where RFC 3339 text
				// stops at year 9999.
				v = x.UnixMicro()
			}
			raw, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			aux.Extra[k] = typedValue{T: t, V: raw}
		}
	}
	return json.Marshal(aux)
}

// UnmarshalRow decodes MarshalRow's encoding.
func UnmarshalRow(b []byte) (Row, error) {
	type plain Row
	aux := struct {
		plain
		Extra map[string]typedValue `json:"extra,omitempty"`
	}{}
	if err := json.Unmarshal(b, &aux); err != nil {
		return Row{}, fmt.Errorf("manifesttable: bad row %q: %w", b, err)
	}
	r := Row(aux.plain)
	r.Extra = nil
	if len(aux.Extra) > 0 {
		r.Extra = map[string]any{}
		for k, tv := range aux.Extra {
			v, err := decodeTyped(tv)
			if err != nil {
				return Row{}, fmt.Errorf("manifesttable: column %s: %w", k, err)
			}
			r.Extra[k] = v
		}
	}
	return r, nil
}

func decodeTyped(tv typedValue) (any, error) {
	var err error
	switch tv.T {
	case ColBool:
		var v bool
		err = json.Unmarshal(tv.V, &v)
		return v, err
	case ColInt32:
		var v int32
		err = json.Unmarshal(tv.V, &v)
		return v, err
	case ColInt64:
		var v int64
		err = json.Unmarshal(tv.V, &v)
		return v, err
	case ColUint64:
		var v uint64
		err = json.Unmarshal(tv.V, &v)
		return v, err
	case ColFloat64:
		var v float64
		err = json.Unmarshal(tv.V, &v)
		return v, err
	case ColUtf8:
		var v string
		err = json.Unmarshal(tv.V, &v)
		return v, err
	case ColBinary:
		var v []byte
		err = json.Unmarshal(tv.V, &v)
		return v, err
	case ColDate32:
		var v int32
		err = json.Unmarshal(tv.V, &v)
		return arrow.Date32(v), err
	case ColTimestamp:
		if len(tv.V) > 0 && tv.V[0] == '"' { // RFC 3339, as logs before microseconds held
			var v time.Time
			err = json.Unmarshal(tv.V, &v)
			return v.UTC(), err
		}
		var us int64
		err = json.Unmarshal(tv.V, &us)
		return time.UnixMicro(us).UTC(), err
	}
	return nil, fmt.Errorf("unknown column type %q", tv.T)
}

func sortStrings(s []string) { sort.Strings(s) }

func sortSlice[T any](s []T, less func(a, b T) bool) {
	sort.Slice(s, func(i, j int) bool { return less(s[i], s[j]) })
}
