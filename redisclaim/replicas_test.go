package redisclaim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flightns/flightns/internal/testutil/redistest"
	"github.com/flightns/flightns/nserror"
)

// With a replica, a commit becomes visible (its final manifest) and is
// acknowledged only once the replica has its claim: a replica that does
// not answer makes the commit ServiceUnavailable with nothing visible,
// and its retry, once the replica is back, commits it. Without replicas
// (or with acks 0) nothing waits.
func TestACommitIsVisibleOnlyOnceAReplicaHasItsClaim(t *testing.T) {
	primary := redistest.Start(t)
	replica := redistest.StartReplica(t, primary)
	e := newEnvOn(t, primary, primary.Client(), "mem")
	e.s.replicas.timeout = 200 * time.Millisecond
	ctx := context.Background()

	if _, err := e.put("t", 1, "v1"); err != nil {
		t.Fatalf("v1 with the replica up: %v", err)
	}
	// What the client was told is on the replica.
	head, err := replica.Client().HGet(ctx, e.s.k.Heads(), "t").Result()
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
	replica.Resume()

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
	if n := e.s.replicas.needed(ctx, e.rdb); n != 0 {
		t.Fatalf("needed %d replicas of a primary with none", n)
	}
	if n, err := e.rdb.Exists(ctx, e.s.k.Fence()).Result(); err != nil || n != 0 {
		t.Fatalf("the fence was written %d times (%v) with no replica to wait for", n, err)
	}
	if connectedReplicas("# Replication\r\nrole:master\r\nconnected_slaves:2\r\n") != 2 {
		t.Fatal("connected_slaves not read")
	}
}
