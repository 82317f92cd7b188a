package manifesttable

import (
	"context"
	"testing"
	"time"

	"github.com/flightns/flightns/internal/testutil/redistest"
)

// A segment holds only log entries a Redis replica has: with the replica
// paused, the materializer tries (its fence write is seen) and writes
// nothing; once the replica resumes, the change becomes durable. A
// failover to a replica without them would otherwise give their
// sequences to other changes while a segment already holds these.
func TestASegmentHoldsOnlyWhatAReplicaHas(t *testing.T) {
	e := newTenv(t)
	replica := redistest.StartReplica(t, e.redis)
	tb := e.open(func(c *Config) { c.ReplicaTimeout = 100 * time.Millisecond })
	defer func() { _ = tb.Close() }()
	commit(t, tb, nsChange(0))
	ctx := context.Background()
	fence := func() int64 { n, _ := e.rdb.Get(ctx, string(tb.keys.Fence())).Int64(); return n }

	replica.Pause()
	before, durable := fence(), tb.durableNow()
	seq, err := tb.Append(ctx, []Change{nsChange(1)})
	if err != nil {
		replica.Resume()
		t.Fatal(err)
	}
	// Two attempts seen (the first was refused, and the second read the
	// log again), or the sequence durable.
	for deadline := time.Now().Add(20 * time.Second); fence() < before+2 && tb.durableNow() == durable; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			replica.Resume()
			t.Fatalf("the materializer never asked a replica (fence %d)", fence())
		}
	}
	if d := tb.durableNow(); d != durable {
		replica.Resume()
		t.Fatalf("sequence %d became durable (%d) while no replica had it", seq, d)
	}
	replica.Resume()
	waitFor(t, tb, seq)
	if _, ok := tb.Object(TypeNamespace, "n01"); !ok {
		t.Fatal("n01 is durable but not in the table")
	}
}
