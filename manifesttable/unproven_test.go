package manifesttable

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/redisstate"
)

// An unproven claim's log entry (redisclaim claims first where the store
// copies) holds the log until Redis says how the claim ended: left
// staged, the materializer settles it itself (SettleWith) — here once as
// a reader finding its final manifest would, flipping it with the size
// storage holds, which its row and event then carry; once as one finding
// no staging object would, taking it back, after which it has no row and
// no event. What follows it in the log waits for it, and is then made.
func TestAnUnprovenClaimHoldsTheLogUntilItEnds(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	tb := e.open()
	defer func() { _ = tb.Close() }()
	const loc = "aa11bb22_ns$t"
	commit(t, tb, put(Row{ObjectType: TypeTable, ObjectID: "ns$t", Location: loc}))
	rs := redisstate.New(e.rdb, e.catalog, 0)
	defer rs.Close()
	if _, err := rs.Seed(ctx, loc, 0, "", nil); err != nil {
		t.Fatal(err)
	}
	claim := func(v uint64, staging string) {
		t.Helper()
		r, err := rs.Claim(ctx, redisstate.ClaimArgs{Now: time.Now().UnixMicro(), Tables: []redisstate.ClaimTable{
			{Table: loc, Version: v, Staging: staging, Final: staging + ".final", Size: 99, Unproven: true}}})
		if err != nil || r.Status != redisstate.OK {
			t.Fatalf("claim %d: %+v %v", v, r, err)
		}
	}
	var settled atomic.Int32
	proveOrTakeBack := func(ctx context.Context, chain string, v uint64) error {
		settled.Add(1)
		g, err := rs.Get(ctx, chain, v)
		if err != nil {
			return err
		}
		if v == 1 { // its final manifest was there: 7 bytes
			rec := g.Record
			rec.Size = 7
			_, err := rs.Flip(ctx, chain, v, rec)
			return err
		}
		if _, _, err := rs.RetractMark(ctx, chain, v, g.Record.Staging, time.Now()); err != nil {
			return err
		}
		_, err = rs.RetractRemove(ctx, chain, v, g.Record.Staging)
		return err
	}
	tb.SettleWith(proveOrTakeBack)

	claim(1, "s1")
	commit(t, tb, put(Row{ObjectType: TypeNamespace, ObjectID: "after1"}))
	claim(2, "s2")
	commit(t, tb, put(Row{ObjectType: TypeNamespace, ObjectID: "after2"}))
	if n := settled.Load(); n != 2 {
		t.Fatalf("settled %d claims, want 2", n)
	}
	if got := rowsOf(t, tb, `SELECT version, manifest_size FROM table_versions ORDER BY 1`); !slices.Equal(got, []string{"1|7"}) {
		t.Fatalf("version rows: %v, want version 1 alone, with the size storage holds", got)
	}
	events, _, err := tb.Events(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var versions []api.Event
	for _, ev := range events {
		if ev.Type == api.EventVersionCreated {
			versions = append(versions, ev)
		}
	}
	if len(versions) != 1 || versions[0].Version != 1 || versions[0].ManifestSize != 7 {
		t.Fatalf("version events: %+v, want version 1 alone, of 7 bytes", versions)
	}
}
