package redislock

import (
	"context"
	"testing"
	"time"

	"github.com/flightns/flightns/internal/testutil/redistest"
)

// A holder whose lock expired and was taken by another must neither delete
// nor extend its successor's lock.
func TestAnExpiredHolderCannotReleaseOrRenewItsSuccessor(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client()
	if err := rdb.Set(ctx, "lock", "old", 30*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(80 * time.Millisecond)
	if ok, err := rdb.SetNX(ctx, "lock", "new", time.Minute).Result(); err != nil || !ok {
		t.Fatalf("successor could not take the lapsed lock: %v %v", ok, err)
	}
	if ok, err := Renew(ctx, rdb, "lock", "old", time.Hour); err != nil || ok {
		t.Fatalf("expired holder renewed: %v %v", ok, err)
	}
	if ok, err := Release(ctx, rdb, "lock", "old"); err != nil || ok {
		t.Fatalf("expired holder released: %v %v", ok, err)
	}
	if v := rdb.Get(ctx, "lock").Val(); v != "new" {
		t.Fatalf("lock is %q, want the successor's", v)
	}
	if ttl := rdb.PTTL(ctx, "lock").Val(); ttl > time.Minute {
		t.Fatalf("successor's lock extended to %s", ttl)
	}
	if ok, err := Renew(ctx, rdb, "lock", "new", time.Hour); err != nil || !ok {
		t.Fatalf("holder could not renew: %v %v", ok, err)
	}
	if ok, err := Release(ctx, rdb, "lock", "new"); err != nil || !ok {
		t.Fatalf("holder could not release: %v %v", ok, err)
	}
	if n := rdb.Exists(ctx, "lock").Val(); n != 0 {
		t.Fatal("released lock still present")
	}
}
