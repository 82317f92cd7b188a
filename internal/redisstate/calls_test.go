package redisstate

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightns/flightns/internal/commitlog"
	"github.com/flightns/flightns/internal/testutil/redistest"
)

// Every typed call decodes its script's replies into its struct: a test
// per reply each script has, against a real Redis.
func TestTypedCallsDecodeEveryReply(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client()
	c := New(rdb, "calls", 1000)
	defer c.Close()

	// Without the epoch every script that checks it answers NoEpoch and
	// writes nothing.
	if r, err := c.Get(ctx, "t", 0); err != nil || r.Status != NoEpoch {
		t.Fatalf("Get without an epoch: %+v %v", r, err)
	}
	if r, err := c.Append(ctx, []string{commitlog.Put, "{}"}); err != nil || r.Status != NoEpoch {
		t.Fatalf("Append without an epoch: %+v %v", r, err)
	}
	if n, _ := rdb.Exists(ctx, string(c.Seq()), string(c.Log())).Result(); n != 0 {
		t.Fatalf("a refused script wrote %d keys", n)
	}
	if err := rdb.Set(ctx, string(c.Epoch()), "e1", 0).Err(); err != nil {
		t.Fatal(err)
	}

	if r, err := c.Get(ctx, "t", 0); err != nil || r.Status != NoHead {
		t.Fatalf("Get of a table without a head: %+v %v", r, err)
	}
	if r, err := c.Seed(ctx, "t", 0, "", nil); err != nil || r.Status != OK || r.Head != 0 {
		t.Fatalf("Seed: %+v %v", r, err)
	}
	claim := func(v uint64, staging string) ClaimReply {
		t.Helper()
		r, err := c.Claim(ctx, ClaimArgs{Now: time.Now().UnixMicro(), Tables: []ClaimTable{{Table: "t", Version: v, Staging: staging, Final: "t/_versions/" + staging, Size: 3}}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := claim(1, "s1"); r.Status != OK || r.Epoch != "e1" || r.Seq == 0 {
		t.Fatalf("a claim: %+v", r)
	}
	if r := claim(1, "s1"); r.Status != Dup || len(r.Records) != 1 || r.Records[0].Staging != "s1" || !r.Records[0].Staged() {
		t.Fatalf("the same claim again: %+v", r)
	}
	if r := claim(1, "other"); r.Status != Conflict || r.Member != 0 || r.Head != 1 || r.TakenBy != "s1" {
		t.Fatalf("a conflicting claim: %+v", r)
	}
	if r := claim(5, "s5"); r.Status != Gap || r.Head != 1 {
		t.Fatalf("a claim past the head: %+v", r)
	}
	g, err := c.Get(ctx, "t", 1)
	if err != nil || g.Status != OK || g.Head != 1 || !g.HasRecord || g.Record.Final != "t/_versions/s1" || g.Record.Size != 3 {
		t.Fatalf("Get of a claimed version: %+v %v", g, err)
	}
	if ok, err := c.Flip(ctx, "t", 1, g.Record); err != nil || !ok {
		t.Fatalf("Flip: %v %v", ok, err)
	}
	l, err := c.List(ctx, "t", false, 0, 10)
	if err != nil || l.Status != OK || !slices.Equal(l.Versions, []uint64{1}) || l.Records[0].Staged() {
		t.Fatalf("List: %+v %v", l, err)
	}
	lt, err := c.Latest(ctx, []string{"t", "u"})
	if err != nil || lt.Status != OK || !slices.Equal(lt.Heads, []uint64{1, 0}) || !slices.Equal(lt.Known, []bool{true, false}) {
		t.Fatalf("Latest: %+v %v", lt, err)
	}
	claim(2, "s2")
	d, err := c.DeleteVersions(ctx, "t", DeleteProbe, []commitlog.Range{{Start: 1}})
	if err != nil || d.Status != Staged || !slices.Equal(d.Staged, []uint64{2}) {
		t.Fatalf("DeleteVersions probe: %+v %v", d, err)
	}
	if f, err := c.Fork(ctx, "t", 0, true); err != nil || f.Status != Busy {
		t.Fatalf("Fork of a chain with a claim in flight: %+v %v", f, err)
	}
	if d, err = c.DeleteVersions(ctx, "t", DeleteNow, []commitlog.Range{{Start: 1, End: 2}}); err != nil || d.Status != OK || d.Deleted != 1 {
		t.Fatalf("DeleteVersions delete: %+v %v", d, err)
	}
	if ok, err := c.Confirm(ctx, "e1", "", []Member{{Table: "t", Version: 2, Staging: "s2"}}); err != nil || !ok {
		t.Fatalf("Confirm: %v %v", ok, err)
	}
	if ok, err := c.Confirm(ctx, "e2", "", []Member{{Table: "t", Version: 2, Staging: "s2"}}); err != nil || ok {
		t.Fatalf("Confirm in another epoch: %v %v", ok, err)
	}
	if a, err := c.Append(ctx, []string{commitlog.Put, "{}"}); err != nil || a.Status != OK || a.Seq == 0 {
		t.Fatalf("Append: %+v %v", a, err)
	}
	if ta, err := c.TxnApply(ctx, "x1", "", []LogEntry{{commitlog.KindField, commitlog.Put, "row", "{}"}}); err != nil || ta.Status != OK || ta.Seq == 0 {
		t.Fatalf("TxnApply: %+v %v", ta, err)
	} else if again, err := c.TxnApply(ctx, "x1", "", []LogEntry{{commitlog.KindField, commitlog.Put, "row", "{}"}}); err != nil || again.Status != Done || again.Seq != ta.Seq {
		t.Fatalf("TxnApply again: %+v %v, want DONE at %d", again, err, ta.Seq)
	}
	if st, err := c.Drop(ctx, "t"); err != nil || st != OK {
		t.Fatalf("Drop: %v %v", st, err)
	}
	if ok, err := c.TakeLease(ctx, "me", time.Second); err != nil || !ok {
		t.Fatalf("TakeLease: %v %v", ok, err)
	}
	if ok, err := c.TakeLease(ctx, "other", time.Second); err != nil || ok {
		t.Fatalf("TakeLease of a held lease: %v %v", ok, err)
	}
	if st, err := c.OpenEpoch(ctx, "e3", 0, "no-lock", true); err != nil || st != Lost {
		t.Fatalf("OpenEpoch without the lock: %v %v", st, err)
	}
	at := time.UnixMilli(time.Now().UnixMilli())
	if err := c.RevokeSessions(ctx, "ana", at); err != nil {
		t.Fatal(err)
	}
	if err := c.RevokeSessions(ctx, "ana", at.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, err := c.SessionsRevokedAt(ctx, "ana"); err != nil || !got.Equal(at) {
		t.Fatalf("a revocation moved back: %v %v, want %v", got, err, at)
	}

	// A corrupt record is an error, never a zero record.
	if err := rdb.HSet(ctx, string(c.Versions("t")), "7", "{not json").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, string(c.Heads()), "t", "7").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "t", 7); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("Get of a corrupt record: %v", err)
	}
}

// The disjoint guard refuses a location equal to, above or below a
// reserved directory, by path segment, and passes over the one it is told
// to; reserve_locs.lua and release_loc.lua answer each of their replies.
func TestReservedDirectoriesAreDisjoint(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client()
	c := New(rdb, "locs", 1000)
	defer c.Close()
	if r, err := c.ReserveLocations(ctx, nil); err != nil || r.Status != NoEpoch {
		t.Fatalf("ReserveLocations without an epoch: %+v %v", r, err)
	}
	if st, err := c.ReleaseLocation(ctx, "x"); err != nil || st != NoEpoch {
		t.Fatalf("ReleaseLocation without an epoch: %v %v", st, err)
	}
	if err := rdb.Set(ctx, string(c.Epoch()), "e1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, string(c.ByLoc()), "live/t", "a$t").Err(); err != nil {
		t.Fatal(err)
	}
	if r, err := c.ReserveLocations(ctx, []string{"kept/t", "live/t"}); err != nil || r.Status != OK || r.Added != 2 {
		t.Fatalf("ReserveLocations: %+v %v", r, err)
	}
	if r, err := c.ReserveLocations(ctx, []string{"other"}); err != nil || r.Status != Done {
		t.Fatalf("ReserveLocations again: %+v %v", r, err)
	}
	log := []LogEntry{{commitlog.KindField, commitlog.Put, "row", "{}"}}
	holds := func(loc, except string) bool {
		t.Helper()
		r, err := c.Claim(ctx, ClaimArgs{Now: 1, Guards: []Guard{GuardDisjoint(c.Locs(), loc, except)}, Log: log})
		if err != nil || (r.Status != OK && r.Status != GuardFailed) {
			t.Fatalf("a claim guarded by disjoint(%q): %+v %v", loc, r, err)
		}
		return r.Status == OK
	}
	for loc, want := range map[string]bool{"live/t": false, "live": false, "live/t/data": false, "live/t0": true, "live/t-x": true,
		"kept": false, "kept/t/x/y": false, "kept/t1": true, "liv": true, "other/t": true, "lives/t": true} {
		if got := holds(loc, ""); got != want {
			t.Errorf("disjoint(%q) holds: %v, want %v", loc, got, want)
		}
	}
	if !holds("kept/t", "kept/t") || holds("kept/t", "kept") || holds("kept/t/x", "kept/t/y") {
		t.Error("disjoint passes over the one reservation it is told to, and only it")
	}
	r, err := c.Claim(ctx, ClaimArgs{Now: 1, Writes: []Write{ZAdd(c.Locs(), "new/t"), ZRem(c.Locs(), "kept/t")}, Log: log})
	if err != nil || r.Status != OK {
		t.Fatalf("zadd and zrem writes: %+v %v", r, err)
	}
	if holds("new/t/x", "") || !holds("kept/t/x", "") {
		t.Error("the writes did not reserve new/t and release kept/t")
	}
	if st, err := c.ReleaseLocation(ctx, "live/t"); err != nil || st != Taken {
		t.Fatalf("ReleaseLocation of a live table's: %v %v", st, err)
	}
	if st, err := c.ReleaseLocation(ctx, "new/t"); err != nil || st != OK || !holds("new/t/x", "") {
		t.Fatalf("ReleaseLocation: %v %v", st, err)
	}
}
