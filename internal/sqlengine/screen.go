//go:build duckdb_arrow

package sqlengine

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/duckdb/duckdb-go/v2/mapping"

	"github.com/flightns/flightns/nserror"
)

// scopedFunctions are the built-in table functions a scoped query may
// call: they read no table.
var scopedFunctions = map[string]bool{"range": true, "generate_series": true, "unnest": true}

// screen refuses the text of a scoped request unless, by DuckDB's own
// parse tree (json_serialize_sql, which parses and runs nothing), it is
// exactly one SELECT that names no relation of the database but those of
// ScopedSchema (and its own CTEs), names no relation by catalog or
// schema, and calls no table function but the engine's registered ones
// and scopedFunctions. What it names then resolves in ScopedSchema or to
// a CTE of its own.
func (r *request) screen(q string) error {
	raw, err := r.conn.stringOf(`SELECT json_serialize_sql(?)`, q)
	if err != nil {
		return err
	}
	var tree struct {
		Error      bool              `json:"error"`
		Message    string            `json:"error_message"`
		Statements []json.RawMessage `json:"statements"`
	}
	if err := json.Unmarshal([]byte(raw), &tree); err != nil {
		return fmt.Errorf("sqlengine: the parse tree: %w", err)
	}
	if tree.Error || len(tree.Statements) != 1 {
		return scopedRefusal("a single plain SELECT")
	}
	hidden, err := r.hiddenRelations()
	if err != nil {
		return err
	}
	funcs := r.e.functionNames()
	var walk func(v any) error
	walk = func(v any) error {
		switch n := v.(type) {
		case []any:
			for _, c := range n {
				if err := walk(c); err != nil {
					return err
				}
			}
		case map[string]any:
			switch n["type"] {
			case "BASE_TABLE":
				if str(n["catalog_name"]) != "" || str(n["schema_name"]) != "" {
					return scopedRefusal("a relation named with its catalog or schema")
				}
				if hidden[strings.ToLower(str(n["table_name"]))] {
					return scopedRefusal(fmt.Sprintf("the relation %q", str(n["table_name"])))
				}
			case "SHOW_REF":
				if name := str(n["table_name"]); name != "" {
					return scopedRefusal("SHOW " + name)
				}
			case "TABLE_FUNCTION":
				f, _ := n["function"].(map[string]any)
				name := strings.ToLower(str(f["function_name"]))
				if str(f["catalog"]) != "" || str(f["schema"]) != "" || (!scopedFunctions[name] && !funcs[name]) {
					return scopedRefusal(fmt.Sprintf("the table function %q", name))
				}
			}
			for _, c := range n {
				if err := walk(c); err != nil {
					return err
				}
			}
		}
		return nil
	}
	var stmt any
	if err := json.Unmarshal(tree.Statements[0], &stmt); err != nil {
		return fmt.Errorf("sqlengine: the parse tree: %w", err)
	}
	return walk(stmt)
}

func str(v any) string { s, _ := v.(string); return s }

func scopedRefusal(what string) error {
	return nserror.New(nserror.PermissionDenied,
		"your access is limited to some namespaces: SQL then takes a single SELECT over __manifest, namespaces, tables, table_versions, dropped and plan_scan, which show only what you may read; not %s", what)
}

// hiddenRelations are the lower-cased names of every table and view of
// the database (DuckDB's catalog views too: their sizes count rows) and
// the main schema's macros, but those of ScopedSchema.
func (r *request) hiddenRelations() (map[string]bool, error) {
	raw, err := r.conn.stringOf(`SELECT coalesce(string_agg(lower(name), chr(10)), '') FROM (
		SELECT table_name AS name FROM duckdb_tables()
		UNION SELECT view_name FROM duckdb_views()
		UNION SELECT function_name FROM duckdb_functions() WHERE database_name = ? AND schema_name = 'main'
		EXCEPT SELECT view_name FROM duckdb_views() WHERE database_name = ? AND schema_name = ?)`,
		DatabaseName, DatabaseName, ScopedSchema)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, n := range strings.Split(raw, "\n") {
		if n != "" {
			out[n] = true
		}
	}
	return out, nil
}

// functionNames are the lower-cased names of the registered table
// functions.
func (e *DB) functionNames() map[string]bool {
	e.fmu.Lock()
	defer e.fmu.Unlock()
	out := make(map[string]bool, len(e.funcs))
	for _, f := range e.funcs {
		out[strings.ToLower(f.f.Name)] = true
	}
	return out
}

// stringOf runs a query of flightns's own, with args bound, whose first
// value is a non-NULL VARCHAR.
func (c *duckConn) stringOf(q string, args ...any) (string, error) {
	ps, err := c.prepare(q)
	if err != nil {
		return "", err
	}
	defer mapping.DestroyPrepare(&ps)
	if err := bindArgs(ps, args); err != nil {
		return "", err
	}
	var res mapping.Result
	defer mapping.DestroyResult(&res)
	if mapping.ExecutePrepared(ps, &res) == mapping.StateError {
		return "", duckError(mapping.ResultError(&res), mapping.ResultErrorType(&res))
	}
	chunk := mapping.FetchChunk(res)
	if chunk.Ptr == nil || mapping.DataChunkGetSize(chunk) == 0 {
		return "", fmt.Errorf("sqlengine: %s: no row", q)
	}
	defer mapping.DestroyDataChunk(&chunk)
	return mapping.StringTData((*mapping.StringT)(mapping.VectorGetData(mapping.DataChunkGetVector(chunk, 0)))), nil
}
