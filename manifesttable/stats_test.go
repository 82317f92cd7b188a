package manifesttable

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/redisclaim"
)

// A version whose manifest is a real Lance manifest gets its statistics
// in table_versions after the commit; one whose manifest cannot be read
// keeps them NULL; a stats entry for a row that is gone, or that names
// another manifest now, changes nothing.
func TestVersionRowsGetTheirStatisticsFromTheirManifests(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	tb := e.open()
	defer func() { _ = tb.Close() }()
	commit(t, tb, put(Row{ObjectType: TypeTable, ObjectID: "t", Location: "loc_t"}))
	cs := e.claims(tb)
	lance, err := os.ReadFile("../internal/lancemanifest/testdata/v4.manifest")
	if err != nil {
		t.Fatal(err)
	}
	stage := func(chain string, v uint64, body []byte) redisclaim.Location {
		p := lancemanifest.StagingPath(lancemanifest.Dir(chain).Manifest(lancemanifest.V2, v))
		if err := e.objs.Put(ctx, p, body); err != nil {
			t.Fatal(err)
		}
		l, err := cs.Put(ctx, chain, v, p, int64(len(body)), "")
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	stage("loc_t", 1, lance)
	stage("loc_t", 2, []byte("not a Lance manifest"))
	dev := lancemanifest.Chain{Table: "loc_t", Branch: "dev"}.Key()
	if err := cs.Fork(ctx, dev, 2); err != nil {
		t.Fatal(err)
	}
	l := stage(dev, 2, lance)
	waitFor(t, tb, l.Seq)
	q := `SELECT coalesce(branch, 'main') || '@' || version || ':' || coalesce(num_rows::VARCHAR, 'NULL') || '/' ||
		coalesce(num_fragments::VARCHAR, 'NULL') || '/' || coalesce(data_bytes::VARCHAR, 'NULL') || '/' ||
		coalesce(json_extract_string(schema, '$.fields[0].name'), 'NULL')
		FROM table_versions WHERE table_id = 't' ORDER BY 1`
	want := []string{"dev@2:4/2/6200/id", "main@1:4/2/6200/id", "main@2:NULL/NULL/NULL/NULL"}
	var got []string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		// Statistics come in a later sequence; a mutation that waits for
		// __manifest makes queries see it.
		commit(t, tb, put(Row{ObjectType: TypeNamespace, ObjectID: "tick"}))
		if got = rowsOf(t, tb, q); slices.Equal(got, want) || time.Now().After(deadline) {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("table_versions statistics: %v, want %v", got, want)
	}
	// The statistics survive a restart (they are in the segments).
	_ = tb.Close()
	tb = e.open()
	if got := rowsOf(t, tb, q); !slices.Equal(got, want) {
		t.Fatalf("after a restart: %v", got)
	}
	if r, ok := tb.versionRow("t", "", 1); !ok || !strings.Contains(r.Schema, `"fixed_size_list"`) || r.NumRows != 4 {
		t.Fatalf("the index's row: %+v", r)
	}

	for _, payload := range []string{
		`{"object_id":"t","table_version":9,"manifest_path":"loc_t/_versions/x.manifest","num_rows":1,"schema":"{}"}`,     // no such row
		`{"object_id":"t","table_version":2,"manifest_path":"loc_t/_versions/other.manifest","num_rows":1,"schema":"{}"}`, // another manifest
		`{"object_id":"t","branch":"nope","table_version":2,"manifest_path":"loc_t/tree/nope/_versions/x","schema":"{}"}`,
		`not json`,
	} {
		if c, ok := tb.statsChange(nil, 100, payload); ok {
			t.Errorf("stats entry %s changed %+v", payload, c.row)
		}
	}
}

// The manifest bytes a writer of this process noted give a version row
// its statistics when it is translated, without a read of storage (the
// path below has no object): once, only for the size the row names, and
// only while this process holds the materializer's lease — a follower
// translates nothing and keeps nothing, and losing the lease forgets
// what was kept. The oldest noted go first past the bounds.
func TestNotedManifestsGiveRowsTheirStatisticsOnlyInTheLeader(t *testing.T) {
	e := newTenv(t)
	tb := e.open()
	defer func() { _ = tb.Close() }()
	commit(t, tb, put(Row{ObjectType: TypeNamespace, ObjectID: "n"})) // acknowledged: this process leads
	lance, err := os.ReadFile("../internal/lancemanifest/testdata/v4.manifest")
	if err != nil {
		t.Fatal(err)
	}
	// translated is a version row naming path and size, as tb's
	// translator fills it.
	translated := func(tb *Table, path string, size int) *Row {
		r := &Row{ObjectType: TypeTableVersion, ObjectID: "t", TableVersion: 1, ManifestPath: path, ManifestSize: uint64(size)}
		tb.noted(r)
		return r
	}
	tb.NoteManifest("nowhere/a.manifest", lance)
	if r := translated(tb, "nowhere/a.manifest", len(lance)); r.NumRows != 4 || r.NumFragments != 2 || !strings.Contains(r.Schema, `"id"`) {
		t.Fatalf("a noted manifest's row: %+v", r)
	}
	if r := translated(tb, "nowhere/a.manifest", len(lance)); r.Schema != "" {
		t.Fatalf("noted bytes were used twice: %+v", r)
	}
	tb.NoteManifest("nowhere/b.manifest", lance)
	if r := translated(tb, "nowhere/b.manifest", len(lance)+1); r.Schema != "" {
		t.Fatalf("bytes of another size gave statistics: %+v", r)
	}

	for i := range recentManifests + 1 {
		tb.NoteManifest(fmt.Sprintf("nowhere/%d.manifest", i), lance)
	}
	if r := translated(tb, "nowhere/0.manifest", len(lance)); r.Schema != "" {
		t.Fatalf("the oldest of %d noted manifests was kept: %+v", recentManifests+1, r)
	}
	if r := translated(tb, fmt.Sprintf("nowhere/%d.manifest", recentManifests), len(lance)); r.Schema == "" {
		t.Fatal("the newest noted manifest was not kept")
	}

	// A follower keeps nothing.
	other := e.open()
	defer func() { _ = other.Close() }()
	other.lease.Lock()
	leading := other.lease.leading
	other.lease.Unlock()
	if leading {
		t.Fatal("a second process took the lease the first holds")
	}
	other.NoteManifest("nowhere/c.manifest", lance)
	if r := translated(other, "nowhere/c.manifest", len(lance)); r.Schema != "" || len(other.recent.byPath) != 0 {
		t.Fatalf("a follower kept noted bytes: %+v", r)
	}
	// The lease lost: what was kept is forgotten.
	tb.NoteManifest("nowhere/d.manifest", lance)
	tb.recent.clear()
	if r := translated(tb, "nowhere/d.manifest", len(lance)); r.Schema != "" {
		t.Fatalf("a cleared cache gave statistics: %+v", r)
	}
}
