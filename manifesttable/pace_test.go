package manifesttable

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// Segments that follow one another within EnginePace reach the SQL engine
// as one transaction, and a query that must see the newest of them does
// not wait for the pace: it sees them at once.
func TestTheEngineTakesSegmentsTogetherUnlessAQueryWaits(t *testing.T) {
	e := newTenv(t)
	applied := make(chan [2]uint64, 64)
	tb := e.open(func(c *Config) {
		c.EnginePace = time.Hour
		c.engineApplied = func(first, last uint64) { applied <- [2]uint64{first, last} }
	})
	defer func() { _ = tb.Close() }()
	version := func(v uint64) Change {
		return put(Row{ObjectType: TypeTableVersion, ObjectID: "ns$t", TableVersion: v, ManifestPath: fmt.Sprintf("t/_versions/%d.manifest", v)})
	}
	first := commit(t, tb, version(1))
	// The first segment after a quiet spell goes in at once.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := tb.WaitVisible(ctx, first); err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for v := uint64(2); v <= 4; v++ {
		// A segment each: the next is appended once this one is durable.
		seq, err := tb.Append(ctx, []Change{version(v)})
		if err != nil {
			t.Fatal(err)
		}
		if err := tb.WaitDurable(ctx, seq); err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, seq)
	}
	select {
	case a := <-applied:
		if a[1] != first {
			t.Fatalf("the engine applied %d..%d within the pace", a[0], a[1])
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first segment was never applied")
	}
	if v := tb.eng.db.Visible(); v != first {
		t.Fatalf("the engine shows sequence %d within the pace, want %d", v, first)
	}
	// A query waits for what this process acknowledged: it ends the pace.
	got := rowsOf(t, tb, `SELECT table_version FROM __manifest WHERE object_type = 'table_version' ORDER BY 1`)
	if !slices.Equal(got, []string{"1", "2", "3", "4"}) {
		t.Fatalf("versions %v, want 1..4", got)
	}
	select {
	case a := <-applied:
		if a != [2]uint64{seqs[0], seqs[2]} {
			t.Fatalf("the engine applied %d..%d, want %d..%d in one transaction", a[0], a[1], seqs[0], seqs[2])
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no application after the query")
	}
}
