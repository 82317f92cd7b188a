package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/obs"
	"github.com/flightns/flightns/internal/testutil/redistest"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/objstore"
)

// The maintenance gauges say nothing before a table opened, then sum the
// latest version of every table's chains (main and branches) at each
// scrape: one series each, whatever the number of tables.
func TestMaintenanceGaugesSumTheCatalog(t *testing.T) {
	ctx := context.Background()
	m := obs.NewMetrics()
	names := []string{"flightns_tables_needing_compaction", "flightns_table_version_chains", "flightns_table_version_records",
		"flightns_table_small_fragments", "flightns_table_deleted_rows", "flightns_table_maintenance_unread"}
	if n, err := testutil.GatherAndCount(m.Registry(), names...); err != nil || n != 0 {
		t.Fatalf("before a table opened: %d series, %v", n, err)
	}

	r := redistest.Start(t)
	objs, err := objstore.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const catalog = "obsmaint"
	if err := r.Client().Set(ctx, "{"+catalog+"}:epoch", "test", 0).Err(); err != nil {
		t.Fatal(err)
	}
	tb, err := manifesttable.Open(ctx, manifesttable.Config{Objects: objs, Redis: r.Client(), Catalog: catalog, NoSQL: true,
		NoVersionStats: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Observer: tableObserver(m)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tb.Close() }()
	at := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	version := func(id, branch string, v, rows, frags, small, deleted uint64) manifesttable.Change {
		return manifesttable.Change{Row: manifesttable.Row{ObjectType: manifesttable.TypeTableVersion, ObjectID: id, Branch: branch,
			TableVersion: v, ManifestPath: id + "/_versions/" + branch + "x.manifest", CommittedAt: at, Schema: "{}",
			NumRows: rows, NumFragments: frags, SmallFragments: small, DeletedRows: deleted, HasFragmentStats: true}}
	}
	table := func(id string) manifesttable.Change {
		return manifesttable.Change{Row: manifesttable.Row{ObjectType: manifesttable.TypeTable, ObjectID: id, Location: "l_" + id}}
	}
	seq, err := tb.Append(ctx, []manifesttable.Change{
		table("a"), table("b"), table("c"),
		version("a", "", 1, 10, 1, 1, 0), version("a", "", 2, 100, 12, 12, 0), // 12 small fragments: needs
		version("a", "dev", 3, 80, 2, 2, 20), // 20 of 100 deleted: needs
		version("b", "", 1, 1_000_000, 1, 0, 5),
		{Row: manifesttable.Row{ObjectType: manifesttable.TypeTableVersion, ObjectID: "c", TableVersion: 1, ManifestPath: "c/1.manifest"}}, // unread
		version("nodir", "", 1, 1, 50, 50, 0), // versions of a directory that is no table's
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.WaitDurable(ctx, seq); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"flightns_tables_needing_compaction": 2, "flightns_table_version_chains": 4, "flightns_table_version_records": 5,
		"flightns_table_small_fragments": 14, "flightns_table_deleted_rows": 25, "flightns_table_maintenance_unread": 1,
	}
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		w, ok := want[f.GetName()]
		if !ok {
			continue
		}
		delete(want, f.GetName())
		if len(f.GetMetric()) != 1 || f.GetMetric()[0].GetGauge().GetValue() != w {
			t.Errorf("%s: %v, want %v", f.GetName(), f.GetMetric(), w)
		}
	}
	if len(want) > 0 {
		t.Errorf("not gathered: %v", want)
	}
}

// The maintainer's observer counts what a pass did.
func TestMaintainerMetricsCountPasses(t *testing.T) {
	m := obs.NewMetrics()
	maintainObserver(m)(namespace.MaintainReport{Held: true, Pruned: 3, Cleanups: 2, Failed: 1, CleanedVersions: 7, Deleted: 9, Bytes: 100})
	got := map[string]float64{}
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		for _, mt := range f.GetMetric() {
			name := f.GetName()
			for _, l := range mt.GetLabel() {
				name += "/" + l.GetValue()
			}
			if c := mt.GetCounter(); c != nil {
				got[name] = c.GetValue()
			}
		}
	}
	for name, want := range map[string]float64{"flightns_maintainer_passes_total": 1, "flightns_versions_pruned_total/lance": 3,
		"flightns_versions_pruned_total/flightns": 7, "flightns_cleanups_total/ok": 2, "flightns_cleanups_total/error": 1,
		"flightns_cleanup_deleted_objects_total": 9, "flightns_cleanup_deleted_bytes_total": 100} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v", name, got[name], want)
		}
	}
}

// The object store's observer counts failures by operation; "not found"
// is an answer, not a failure.
func TestStoreObserverCountsFailures(t *testing.T) {
	m := obs.NewMetrics()
	f := storeObserver(m)
	f(objstore.OpGet, "a", time.Millisecond, objstore.ErrNotFound) // an answer, not a failure
	f(objstore.OpPut, "a", time.Millisecond, errors.New("503 slow down"))
	errs := map[string]float64{}
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "flightns_objstore_errors_total" {
			continue
		}
		for _, mt := range f.GetMetric() {
			errs[mt.GetLabel()[0].GetValue()] = mt.GetCounter().GetValue()
		}
	}
	if got := errs["put"]; got != 1 {
		t.Errorf("put errors %v", got)
	}
	if got := errs["get"]; got != 0 {
		t.Errorf("not-found counted as a failure")
	}
}
