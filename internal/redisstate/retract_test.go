package redisstate

import (
	"context"
	"testing"
	"time"

	"github.com/flightns/flightns/internal/testutil/redistest"
)

// An unproven claim (made before its staging object was seen) is marked
// as such; no claim may sit on it while it is staged (PENDING); its flip
// proves it; and it can be taken back in two steps, mark then remove,
// which lower the head below it and leave a tombstone that a new claim
// of the version replaces. A proven claim cannot be taken back,
// nor a final one, nor one of another staging path.
func TestUnprovenClaimsAreProvenOrTakenBack(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client()
	c := New(rdb, "unproven", 1000)
	defer c.Close()
	if err := rdb.Set(ctx, string(c.Epoch()), "e1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Seed(ctx, "t", 0, "", nil); err != nil {
		t.Fatal(err)
	}
	claim := func(v uint64, staging string, unproven bool) ClaimReply {
		t.Helper()
		r, err := c.Claim(ctx, ClaimArgs{Now: time.Now().UnixMicro(), Tables: []ClaimTable{
			{Table: "t", Version: v, Staging: staging, Final: "t/_versions/" + staging, Size: 3, Unproven: unproven}}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	record := func(v uint64) GetReply {
		t.Helper()
		g, err := c.Get(ctx, "t", v)
		if err != nil || g.Status != OK {
			t.Fatalf("Get %d: %+v %v", v, g, err)
		}
		return g
	}

	if r := claim(1, "s1", true); r.Status != OK {
		t.Fatalf("an unproven claim: %+v", r)
	}
	if g := record(1); !g.Record.Unproven || !g.Record.Staged() || !g.Record.RetractFrom.IsZero() {
		t.Fatalf("the unproven claim's record: %+v", g.Record)
	}
	if r := claim(2, "s2", false); r.Status != Pending || r.Member != 0 || r.Head != 1 {
		t.Fatalf("a claim on an unproven one: %+v, want PENDING at head 1", r)
	}
	if st, _, err := c.RetractMark(ctx, "t", 1, "other", time.Now()); err != nil || st != Gone {
		t.Fatalf("marking another staging path: %v %v", st, err)
	}
	rec := record(1).Record
	rec.Size = 5 // read from the final object
	if ok, err := c.Flip(ctx, "t", 1, rec); err != nil || !ok {
		t.Fatalf("Flip: %v %v", ok, err)
	}
	if g := record(1); g.Record.Unproven || g.Record.Staged() || g.Record.Size != 5 {
		t.Fatalf("the flipped record: %+v", g.Record)
	}
	if st, _, err := c.RetractMark(ctx, "t", 1, "s1", time.Now()); err != nil || st != Final {
		t.Fatalf("marking a final version: %v %v", st, err)
	}
	if r := claim(2, "s2", false); r.Status != OK {
		t.Fatalf("a claim on a proven one: %+v", r)
	}
	if st, _, err := c.RetractMark(ctx, "t", 2, "s2", time.Now()); err != nil || st != Proven {
		t.Fatalf("marking a proven claim: %v %v", st, err)
	}
	if ok, err := c.RetractRemove(ctx, "t", 2, "s2"); err != nil || ok {
		t.Fatalf("removing an unmarked claim: %v %v", ok, err)
	}
	if ok, err := c.Flip(ctx, "t", 2, record(2).Record); err != nil || !ok {
		t.Fatal(ok, err)
	}

	if r := claim(3, "s3", true); r.Status != OK {
		t.Fatalf("another unproven claim: %+v", r)
	}
	if ok, err := c.RetractRemove(ctx, "t", 3, "s3"); err != nil || ok {
		t.Fatalf("removing before the mark: %v %v", ok, err)
	}
	first := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	st, from, err := c.RetractMark(ctx, "t", 3, "s3", first)
	if err != nil || st != OK || !from.Equal(first) {
		t.Fatalf("mark: %v %v %v", st, from, err)
	}
	if st, again, err := c.RetractMark(ctx, "t", 3, "s3", time.Now()); err != nil || st != OK || !again.Equal(first) {
		t.Fatalf("mark again: %v %v %v, want the first mark's time kept", st, again, err)
	}
	if g := record(3); !g.Record.RetractFrom.Equal(first) || !g.Record.Staged() {
		t.Fatalf("the marked record: %+v", g.Record)
	}
	if ok, err := c.RetractRemove(ctx, "t", 3, "other"); err != nil || ok {
		t.Fatalf("removing another staging path: %v %v", ok, err)
	}
	if ok, err := c.RetractRemove(ctx, "t", 3, "s3"); err != nil || !ok {
		t.Fatalf("remove: %v %v", ok, err)
	}
	if g := record(0); g.Head != 2 || g.HasRecord && g.Record.Staging != "s2" {
		t.Fatalf("after taking version 3 back: head %d, record %+v; want head 2", g.Head, g.Record)
	}
	if g := record(3); !g.HasRecord || !g.Record.Retracted() || g.Record.Staging != "s3" {
		t.Fatalf("version 3's record is not the tombstone of a claim taken back: %+v", g.Record)
	}
	if l, err := c.List(ctx, "t", false, 0, 10); err != nil || len(l.Versions) != 2 {
		t.Fatalf("List after taking version 3 back: %+v %v", l, err)
	}
	recs, err := c.Records(ctx, []VersionRef{{"t", 1}, {"t", 3}, {"t", 9}, {"u", 1}})
	if err != nil || len(recs) != 4 || recs[0] == nil || recs[0].Staged() || recs[1] == nil || !recs[1].Retracted() || recs[2] != nil || recs[3] != nil {
		t.Fatalf("Records: %+v %v", recs, err)
	}
	if r := claim(3, "s3b", false); r.Status != OK {
		t.Fatalf("version 3 claimed again once taken back: %+v", r)
	}
	if g := record(3); !g.Record.Staged() || g.Record.Staging != "s3b" {
		t.Fatalf("the new claim of version 3: %+v", g.Record)
	}
}
