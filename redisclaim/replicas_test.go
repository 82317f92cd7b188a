package redisclaim

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/internal/testutil/redistest"
	"github.com/flightns/flightns/nserror"
)

// newReplicatedEnv is newEnv on a Redis primary with one replica, whose
// Store waits for the replica (200 ms at most) where it must.
func newReplicatedEnv(t *testing.T, backend string) (*env, *redistest.Server) {
	t.Helper()
	primary := redistest.Start(t)
	replica := redistest.StartReplica(t, primary)
	e := newEnvOn(t, primary, primary.Client(), backend)
	e.s.replicas = redisstate.NewReplicas(e.rdb, e.s.k, nil, 200*time.Millisecond)
	return e, replica
}

// With a replica, a commit becomes visible (its final manifest) and is
// acknowledged only once the replica has its claim: a replica that does
// not answer makes the commit ServiceUnavailable with nothing visible,
// and its retry, once the replica is back, commits it. Without replicas
// (or with acks 0) nothing waits.
func TestACommitIsVisibleOnlyOnceAReplicaHasItsClaim(t *testing.T) {
	e, replica := newReplicatedEnv(t, "mem")
	ctx := context.Background()

	if _, err := e.put("t", 1, "v1"); err != nil {
		t.Fatalf("v1 with the replica up: %v", err)
	}
	// What the client was told is on the replica.
	head, err := replica.Client().HGet(ctx, string(e.s.k.Heads()), "t").Result()
	if err != nil || head != "1" {
		t.Fatalf("the replica's head of t: %q %v", head, err)
	}

	replica.Pause()
	staging := e.stage("t", 2, "v2")
	_, err = e.s.Put(ctx, "t", 2, staging, 2, "")
	if nserror.CodeOf(err) != nserror.ServiceUnavailable || !strings.Contains(err.Error(), "replica") {
		replica.Resume()
		t.Fatalf("v2 with the replica paused: %v", err)
	}
	if got := e.final("t", 2); got != "" {
		replica.Resume()
		t.Fatalf("v2 became visible without a replica: %q", got)
	}
	// With acks 0 (another process configured so) nothing waits.
	zero := 0
	off, err := New(ctx, Config{Redis: e.rdb, Objects: e.objs, Catalog: e.s.catalog, Logger: quiet, ReplicaAcks: &zero})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = off.Close() }()
	if _, err := off.Put(ctx, "u", 1, e.stage("u", 1, "u1"), 2, ""); err != nil {
		replica.Resume()
		t.Fatalf("acks 0 with the replica paused: %v", err)
	}
	// v2's claim is on the primary alone: another writer of v2 is not
	// told it is taken (a failover now would take that back: the Sentinel
	// run found it), nor told of a guard's refusal that rests on a write
	// the replica lacks.
	other := e.stage("t", 2, "w2")
	if _, err := e.s.Put(ctx, "t", 2, other, 2, ""); nserror.CodeOf(err) != nserror.ServiceUnavailable {
		replica.Resume()
		t.Fatalf("a rival of v2 with the replica paused: %v (the claim it loses to is on the primary alone)", err)
	}
	if err := e.rdb.HSet(ctx, string(e.s.k.Obj()), "guarded", "x").Err(); err != nil {
		replica.Resume()
		t.Fatal(err)
	}
	absent := []redisstate.Guard{redisstate.GuardAbsent(e.s.k.Obj(), "guarded")}
	if _, err := e.s.PutGuarded(ctx, "g", 1, e.stage("g", 1, "g1"), 2, "", absent); nserror.CodeOf(err) != nserror.ServiceUnavailable {
		replica.Resume()
		t.Fatalf("a guard refused on a write the replica lacks: %v", err)
	}
	// A catalog change alone (no manifest, so no commit point) is not
	// acknowledged either while the replica lacks it.
	change := &Extras{Writes: []redisstate.Write{redisstate.HSet(e.s.k.Obj(), "ns", "row")},
		Log: []redisstate.LogEntry{{"kind", "test"}}}
	if _, err := e.s.Commit(ctx, nil, change); nserror.CodeOf(err) != nserror.ServiceUnavailable {
		replica.Resume()
		t.Fatalf("a catalog change with the replica paused: %v", err)
	}
	replica.Resume()
	// Now the replica has them all: the refusals stand, the change is
	// there and its like commits.
	if _, err := e.s.Commit(ctx, nil, change); err != nil {
		t.Fatalf("a catalog change with the replica back: %v", err)
	}
	if got, err := replica.Client().HGet(ctx, string(e.s.k.Obj()), "ns").Result(); err != nil || got != "row" {
		t.Fatalf("the replica's copy of the acknowledged catalog change: %q %v", got, err)
	}
	if _, err := e.s.Put(ctx, "t", 2, other, 2, ""); nserror.CodeOf(err) != nserror.ConcurrentModification {
		t.Fatalf("a rival of v2 with the replica back: %v", err)
	}
	var ge *GuardError
	if _, err := e.s.PutGuarded(ctx, "g", 1, e.stage("g", 1, "g1"), 2, "", absent); !errors.As(err, &ge) {
		t.Fatalf("the guard with the replica back: %v", err)
	}

	// The retry of v2 learns its outcome: committed.
	loc, err := e.s.Put(ctx, "t", 2, staging, 2, "")
	if err != nil || loc.Version != 2 || e.final("t", 2) != "v2" {
		t.Fatalf("v2's retry: %+v %v", loc, err)
	}
}

// Without replicas the primary's INFO says so and no commit waits: the
// fence is never written.
func TestNoReplicasNoWait(t *testing.T) {
	e := newEnv(t, "mem")
	for v := uint64(1); v <= 5; v++ {
		if _, err := e.put("t", v, "x"); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	if n := e.s.replicas.Needed(ctx, e.rdb); n != 0 {
		t.Fatalf("needed %d replicas of a primary with none", n)
	}
	if n, err := e.rdb.Exists(ctx, string(e.s.k.Fence())).Result(); err != nil || n != 0 {
		t.Fatalf("the fence was written %d times (%v) with no replica to wait for", n, err)
	}
}

// No object's ETag is kept or reported (lance-format/lance#8499): not the
// one a writer sends, not the staging object's, not in a transaction's
// commit record; a record made before (with one) reports none either.
func TestNoETagIsKept(t *testing.T) {
	e := newEnv(t, "mem")
	ctx := context.Background()
	p := e.stage("t", 1, "v1")
	loc, err := e.s.Put(ctx, "t", 1, p, 2, `"staging-etag"`)
	if err != nil || loc.ETag != "" {
		t.Fatalf("put: %+v %v", loc, err)
	}
	r, err := e.s.rs.Get(ctx, "t", 1)
	if err != nil || r.Record.ETag != "" {
		t.Fatalf("the record keeps the ETag %q (%v)", r.Record.ETag, err)
	}
	res, err := e.s.BatchPut(ctx, []Entry{{Table: "a", Version: 1, StagingPath: e.stage("a", 1, "a1"), ETag: `"x"`},
		{Table: "b", Version: 1, StagingPath: e.stage("b", 1, "b1"), ETag: `"y"`}})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := e.objs.Get(ctx, txnKey(res.TxnID))
	if err == nil && strings.Contains(string(raw), "etag") {
		t.Fatalf("the commit record keeps ETags: %s", raw)
	}
	for _, l := range res.Locations {
		if l.ETag != "" {
			t.Fatalf("batch location %+v", l)
		}
	}
	for _, tbl := range []string{"a", "b"} {
		r, err := e.s.rs.Get(ctx, tbl, 1)
		if err != nil || r.Record.ETag != "" {
			t.Fatalf("%s's record keeps the ETag %q (%v)", tbl, r.Record.ETag, err)
		}
	}
	// A record of an older flightns, with the staging object's ETag.
	old := locationOf(record{State: redisstate.StateFinal, Final: loc.Path, Size: 2, ETag: `"old"`}, "t", 1)
	if old.ETag != "" {
		t.Fatalf("an old record's ETag is reported: %q", old.ETag)
	}
	if _, err := e.s.Put(ctx, "t", 2, e.stage("t", 2, "v2"), 2, "bad\x00etag"); !isCode(err, nserror.InvalidInput) {
		t.Fatalf("a control character in the e_tag: %v", err)
	}
}

// Taking an unproven claim back rests on its mark: with a replica, the
// wait begins only once the replica has the mark, so a replica that does
// not answer makes the taking back ServiceUnavailable with the claim left
// as it was; once the replica is back, the claim is taken back.
func TestTakingAClaimBackWaitsForAReplicaToHaveItsMark(t *testing.T) {
	e, replica := newReplicatedEnv(t, "s3-copy")
	ctx := context.Background()
	if _, err := e.put("t", 1, "v1"); err != nil {
		t.Fatal(err)
	}
	// A writer claimed version 2 first, for a staging object that does not
	// exist, and died; another process began taking the claim back.
	missing := lancemanifest.StagingPath(lancemanifest.Dir("t").Manifest(lancemanifest.V2, 2))
	e.failAt(StepClaimed, "t", 2, errors.New("crash"))
	if _, err := e.s.Put(ctx, "t", 2, missing, 40, ""); err == nil {
		t.Fatal("the crash did not fire")
	}
	e.noFaults()
	if st, _, err := e.s.rs.RetractMark(ctx, "t", 2, missing, time.Now()); err != nil || st != redisstate.OK {
		t.Fatalf("mark: %v %v", st, err)
	}

	replica.Pause()
	_, err := e.s.GetManifestLocation(ctx, "t", 2)
	if nserror.CodeOf(err) != nserror.ServiceUnavailable || !strings.Contains(err.Error(), "replica") {
		replica.Resume()
		t.Fatalf("taking the claim back with the replica paused: %v, want ServiceUnavailable", err)
	}
	if g, err := e.s.rs.Get(ctx, "t", 2); err != nil || !g.Record.Staged() || g.Head != 2 {
		replica.Resume()
		t.Fatalf("the claim after the refused taking back: head %d, %+v %v", g.Head, g.Record, err)
	}
	replica.Resume()
	if _, err := e.s.GetManifestLocation(ctx, "t", 2); !errors.Is(err, nserror.ErrTableVersionNotFound) {
		t.Fatalf("version 2 once the replica is back: %v, want TableVersionNotFound", err)
	}
	if g, err := e.s.rs.Get(ctx, "t", 2); err != nil || !g.Record.Retracted() || g.Head != 1 {
		t.Fatalf("after taking it back: head %d, %+v %v", g.Head, g.Record, err)
	}
}
