package redisstate

import (
	"context"
	"strings"
	"testing"

	"github.com/flightns/flightns/internal/testutil/redistest"
)

// claim.lua checks every write before the first (a script that fails
// half-way keeps what it wrote): called past the Go side, which refuses
// an unknown write before the script runs, with a known write before an
// unknown one, it writes nothing.
func TestClaimRefusesAnUnknownWrite(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client()
	c := New(rdb, "cat", 0)
	defer c.Close()
	if err := rdb.Set(ctx, string(c.Epoch()), "e1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	a := ClaimArgs{TxnID: "x", Now: 1, Writes: []Write{HSet(c.Obj(), "a", "b"), HDel(c.Obj(), "c")}, Log: []LogEntry{{"k", "put", "row", "{}"}}}
	keys, args, err := c.appendExtras([]Key{c.Epoch(), c.Heads(), c.Seq(), c.Log(), c.Txn("x")},
		[]any{"x", "1", 0, "", 100, ""}, a)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range args {
		if v == "hdel" {
			args[i] = "del"
		}
	}
	r, err := claimS.Run(ctx, rdb, names(keys), args...).Result()
	if err == nil || !strings.Contains(err.Error(), "unknown write") {
		t.Fatalf("the claim script ran an unknown write: %v %v", r, err)
	}
	if n, _ := rdb.HLen(ctx, string(c.Obj())).Result(); n != 0 {
		t.Fatalf("a refused claim wrote %d fields", n)
	}
	if n, _ := rdb.Exists(ctx, string(c.Seq()), string(c.Log())).Result(); n != 0 {
		t.Fatalf("a refused claim took a sequence or logged (%d keys)", n)
	}
	// The Go side refuses it before the script runs.
	a.Writes[1].Op = "del"
	if _, err := c.Claim(ctx, a); err == nil || !strings.Contains(err.Error(), "unknown write") {
		t.Fatalf("Claim with an unknown write: %v", err)
	}
}
