//go:build duckdb_arrow

package manifesttable

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
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

// A frozen view (a snapshot or compaction in progress reads one without
// the lock) keeps the versions it was taken with whatever the index does
// after it — replacing a version's row, as its statistics do, inserting
// one before the end, removing one — while an array made since the last
// freeze changes in place; and the index always holds what a plain model
// of the changes says.
func TestFrozenViewsKeepTheirVersions(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		x := newIndex()
		model := map[string]map[uint64]string{} // vers key → version → manifest path
		type view struct {
			f    *frozen
			want []Row
		}
		var views []view
		keys := []string{"ns$a", "ns$b", verKey("ns$a", "dev")}
		for i := range rapid.IntRange(1, 200).Draw(t, "steps") {
			k := rapid.SampledFrom(keys).Draw(t, "key")
			id, branch := splitVerKey(k)
			v := rapid.Uint64Range(1, 30).Draw(t, "version")
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0:
				x.seq = uint64(i)
				f := x.freeze()
				views = append(views, view{f, rowsOfFrozen(f)})
			case 1, 2:
				x.deleteVersion(k, v)
				delete(model[k], v)
			default:
				path := fmt.Sprintf("%s/%d/%d.manifest", k, v, i)
				x.putVersion(Row{ObjectType: TypeTableVersion, ObjectID: id, Branch: branch, TableVersion: v, ManifestPath: path})
				if model[k] == nil {
					model[k] = map[uint64]string{}
				}
				model[k][v] = path
			}
		}
		n := 0
		for _, k := range keys {
			vs := x.vers[k]
			want := slices.Sorted(maps.Keys(model[k]))
			n += len(want)
			if len(vs) != len(want) {
				t.Fatalf("%q holds %d versions, the model %d", k, len(vs), len(want))
			}
			for j, v := range want {
				if vs[j].v != v || vs[j].path != model[k][v] {
					t.Fatalf("%q's version %d is %d %q, the model's %d %q", k, j, vs[j].v, vs[j].path, v, model[k][v])
				}
			}
		}
		if x.nvers != n {
			t.Fatalf("nvers %d, the model %d", x.nvers, n)
		}
		for _, w := range views {
			same := func(a, b Row) bool {
				return a.ObjectID == b.ObjectID && a.Branch == b.Branch && a.TableVersion == b.TableVersion && a.ManifestPath == b.ManifestPath
			}
			if got := rowsOfFrozen(w.f); !slices.EqualFunc(got, w.want, same) {
				t.Fatalf("the view frozen at %d changed:\n got %v\nwant %v", w.f.seq, got, w.want)
			}
		}
	})
}

// rowsOfFrozen reads a frozen view's version rows from its arrays (as a
// snapshot does, without consuming it).
func rowsOfFrozen(f *frozen) []Row {
	var out []Row
	for i, id := range f.ids {
		for _, vr := range f.vers[i] {
			out = append(out, vr.row(id))
		}
	}
	return out
}
