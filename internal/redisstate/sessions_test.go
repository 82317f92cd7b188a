package redisstate

import (
	"context"
	"testing"
	"time"

	"github.com/flightns/flightns/internal/testutil/redistest"
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
	ttl, err := rdb.PTTL(ctx, c.EndedSession("n1")).Result()
	if err != nil || ttl < time.Until(until)-time.Second || ttl > time.Until(until)+2*time.Second {
		t.Fatalf("the ended session's key lives %v, the session %v", ttl, time.Until(until))
	}
}
