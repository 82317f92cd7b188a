//go:build duckdb_arrow

package manifesttable

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The queries a catalog answers most — a table's newest version, a
// table's newest versions — read through the ART index on object_id, with
// history present (rows retired by later changes, kept for time travel):
// DuckDB scans an index only when exactly one filter reaches the scan, so
// neither history nor a Top-N's dynamic filter may add one. Time travel
// still sees the retired rows.
func TestPointQueriesAndNewestVersionsAreIndexScans(t *testing.T) {
	e := newTenv(t)
	tb := e.open()
	defer func() { _ = tb.Close() }()
	var changes []Change
	for i := range 40 {
		id := fmt.Sprintf("ns$t%02d", i)
		changes = append(changes, put(Row{ObjectType: TypeTable, ObjectID: id, Location: id}))
		for v := uint64(1); v <= 60; v++ {
			changes = append(changes, put(Row{ObjectType: TypeTableVersion, ObjectID: id, TableVersion: v,
				ManifestPath: fmt.Sprintf("%s/_versions/%d.manifest", id, v)}))
		}
	}
	before := commit(t, tb, changes...)
	// History: versions retired, a table's row replaced.
	commit(t, tb, del(TypeTableVersion, "ns$t07", 60), del(TypeTableVersion, "ns$t07", 59),
		put(Row{ObjectType: TypeTable, ObjectID: "ns$t03", Location: "ns$t03", Metadata: `{"k":"v"}`}))

	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`SELECT MAX(table_version) FROM __manifest WHERE object_id = 'ns$t07' AND object_type = 'table_version'`, nil},
		{`SELECT version, manifest_path FROM table_versions WHERE table_id = 'ns$t07' ORDER BY version DESC LIMIT 1000`, nil},
		{`SELECT version FROM table_versions WHERE table_id = 'ns$t07' ORDER BY version DESC LIMIT 5`, nil},
		// A prepared statement's parameter, bound before it runs.
		{`SELECT MAX(table_version) FROM __manifest WHERE object_id = ? AND object_type = 'table_version'`, []any{"ns$t07"}},
		{`SELECT version FROM table_versions WHERE table_id = ? ORDER BY version DESC LIMIT 1000`, []any{"ns$t07"}},
	} {
		plan := strings.Join(rowsOf(t, tb, "EXPLAIN ANALYZE "+q.sql, q.args...), "\n")
		if !strings.Contains(plan, "Index Scan") || strings.Contains(plan, "Sequential Scan") {
			t.Errorf("%s: not read through the index:\n%s", q.sql, plan)
		}
	}
	if got := rowsOf(t, tb, `SELECT MAX(table_version) FROM __manifest WHERE object_id = 'ns$t07' AND object_type = 'table_version'`); !slices.Equal(got, []string{"58"}) {
		t.Fatalf("newest version after two were retired: %v", got)
	}
	if got := rowsOf(t, tb, `SELECT version FROM table_versions WHERE table_id = 'ns$t07' ORDER BY version DESC LIMIT 3`); !slices.Equal(got, []string{"58", "57", "56"}) {
		t.Fatalf("newest versions: %v", got)
	}
	if got := rowsOf(t, tb, `SELECT MAX(table_version) FROM manifest_at(?) WHERE object_id = 'ns$t07' AND object_type = 'table_version'`, before); !slices.Equal(got, []string{"60"}) {
		t.Fatalf("newest version before the retirement, by time travel: %v", got)
	}
	if got := rowsOf(t, tb, `SELECT metadata FROM manifest_at(?) WHERE object_id = 'ns$t03' AND object_type = 'table'`, before); !slices.Equal(got, []string{"∅"}) {
		t.Fatalf("a replaced table row, by time travel: %v", got)
	}
	if got := rowsOf(t, tb, `SELECT metadata FROM tables WHERE object_id = 'ns$t03'`); !slices.Equal(got, []string{`{"k":"v"}`}) {
		t.Fatalf("the replaced table row now: %v", got)
	}
}
