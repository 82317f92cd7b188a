package redisstate

import (
	"context"
	"testing"
	"time"

	"github.com/flightns/flightns/internal/testutil/redistest"
	"github.com/flightns/flightns/nserror"
)

// A session ended by a logout stays ended until its expiry (a key that
// expires then, a second late at most), and no other session is.
func TestAnEndedSessionExpiresWithTheSession(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client()
	c := New(rdb, "sessions", 0)
	defer c.Close()
	until := time.Now().Add(time.Hour)
	if err := c.EndSession(ctx, "n1", until); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"n1": true, "n2": false} {
		if got, err := c.SessionEnded(ctx, id); err != nil || got != want {
			t.Fatalf("session %s ended: %v %v, want %v", id, got, err, want)
		}
	}
	ttl, err := rdb.PTTL(ctx, string(c.EndedSession("n1"))).Result()
	if err != nil || ttl < time.Until(until)-time.Second || ttl > time.Until(until)+2*time.Second {
		t.Fatalf("the ended session's key lives %v, the session %v", ttl, time.Until(until))
	}
}

// With ConfirmOn, a revocation and a logout's end return only once a
// replica has them (a failover must not bring an ended session back): a
// paused replica makes both ServiceUnavailable; resumed, both land on it.
func TestSessionEndsWaitForAReplica(t *testing.T) {
	ctx := context.Background()
	primary := redistest.Start(t)
	replica := redistest.StartReplica(t, primary)
	c := New(primary.Client(), "sessions", 0)
	defer c.Close()
	c.ConfirmOn(NewReplicas(primary.Client(), c.Keys, nil, 100*time.Millisecond))
	until := time.Now().Add(time.Hour)

	replica.Pause()
	errEnd := c.EndSession(ctx, "n1", until)
	errRevoke := c.RevokeSessions(ctx, "ana", time.Now())
	replica.Resume()
	if nserror.CodeOf(errEnd) != nserror.ServiceUnavailable || nserror.CodeOf(errRevoke) != nserror.ServiceUnavailable {
		t.Fatalf("with the replica paused: end %v, revoke %v; want ServiceUnavailable", errEnd, errRevoke)
	}
	// Resumed, the replica catches up on its own time: a loaded machine
	// may take more than the 100 ms the paused half needed.
	c.ConfirmOn(NewReplicas(primary.Client(), c.Keys, nil, 10*time.Second))
	if err := c.EndSession(ctx, "n2", until); err != nil {
		t.Fatal(err)
	}
	if err := c.RevokeSessions(ctx, "bob", time.Now()); err != nil {
		t.Fatal(err)
	}
	rc := replica.Client()
	if n, err := rc.Exists(ctx, string(c.EndedSession("n2"))).Result(); err != nil || n != 1 {
		t.Fatalf("the replica lacks an acknowledged end: %d %v", n, err)
	}
	if ok, err := rc.HExists(ctx, string(c.Revoked()), "bob").Result(); err != nil || !ok {
		t.Fatalf("the replica lacks an acknowledged revocation: %v %v", ok, err)
	}
}
