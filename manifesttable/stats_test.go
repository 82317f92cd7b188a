package manifesttable

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

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
	lance, err := os.ReadFile("../lancemanifest/testdata/v4.manifest")
	if err != nil {
		t.Fatal(err)
	}
	stage := func(chain string, v uint64, body []byte) redisclaim.Location {
		p := redisclaim.StagingPath(redisclaim.ManifestPath(chain, redisclaim.V2, v))
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
	dev := redisclaim.BranchChain("loc_t", "dev")
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
