package redisclaim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/internal/testutil/redistest"
	"github.com/flightns/flightns/nserror"
)

// A Jepsen-style run: writers and readers through Sentinel while the
// replica is cut off and the primary is killed (SIGKILL), then Sentinel
// promotes the replica. The history, reads and refusals included, must
// be linearizable (tableModel): no read returns an older version than
// one already returned, no acknowledged version is lost, and no writer
// is refused a version that the failover then frees. A commit that
// failed for another reason than a conflict has an unknown outcome; a
// read that failed observed nothing. (A refusal that waited for no
// replica made about one run in six fail under load: store.go's
// confirmedClaim.)
func TestFailoverKeepsEveryAcknowledgedVersionAndReadsMonotonic(t *testing.T) {
	primary := redistest.Start(t)
	replica := redistest.StartReplica(t, primary)
	sentinel := redistest.StartSentinel(t, primary.Addr())
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: []string{sentinel},
		DialTimeout: 500 * time.Millisecond, ReadTimeout: 2 * time.Second, WriteTimeout: time.Second, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	e := newEnvOn(t, primary, rdb, "mem")
	// One replica, required: with "auto" a replica cut off from the
	// primary no longer counts, and commits go on without it.
	one := 1
	e.s.replicas = redisstate.NewReplicas(rdb, e.s.k, &one, 0)
	ctx := context.Background()

	tables := []string{"a", "b"}
	const clients, wantAfter = 4, 30
	var (
		killedAt atomic.Int64
		// readsUntil ends the reads-only second after the failover (set
		// by the first read that succeeds after the kill).
		readsUntil atomic.Int64
		okAfter    atomic.Int64 // successful puts called after the kill
	)
	h := newLinHistory()
	deadline := h.start.Add(90 * time.Second) // only a failover that never completes reaches it
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			for n := 0; okAfter.Load() < wantAfter && time.Now().Before(deadline); n++ {
				tbl := tables[rng.IntN(len(tables))]
				var in linInput
				var out linOutput
				call := h.now()
				failed := false
				// Right after the failover, reads alone for a second: what
				// the new primary says before any commit repairs a head.
				now := h.now()
				k, until := killedAt.Load(), readsUntil.Load()
				readsOnly := k != 0 && (until == 0 || now < until)
				if readsOnly || rng.IntN(2) == 0 {
					in = linInput{op: "latest", table: tbl}
					loc, ok, err := e.s.GetLatestManifestLocation(ctx, tbl)
					if failed = err != nil; !failed && readsOnly && until == 0 {
						readsUntil.CompareAndSwap(0, h.now()+int64(time.Second))
					}
					if !failed {
						out = linOutput{notFound: !ok, version: loc.Version}
						if ok {
							out.content = e.final(tbl, loc.Version)
						}
					}
				} else {
					v, _, _, err := e.s.GetLatestVersion(ctx, tbl)
					if failed = err != nil; !failed {
						content := fmt.Sprintf("c%d-n%d", c, n)
						p := e.stage(tbl, v+1, content)
						in = linInput{op: "put", table: tbl, version: v + 1, content: content}
						call = h.now()
						_, err = e.s.Put(ctx, tbl, v+1, p, 0, "")
						switch {
						case err == nil:
							out.ok = true
							if k := killedAt.Load(); k != 0 && call > k {
								okAfter.Add(1)
							}
						case isCode(err, nserror.ConcurrentModification):
							out.conflict = true
						default:
							out.unknown = true
						}
					}
				}
				if failed { // observed nothing; Redis is changing hands
					time.Sleep(50 * time.Millisecond)
					continue
				}
				h.add(c, in, call, out)
			}
		})
	}
	// The kill comes once the catalog is in use (its first recovery done,
	// commits acknowledged).
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		n := h.len()
		if n >= 300 || time.Since(start) > 30*time.Second {
			t.Logf("%d operations before the kill", n)
			break
		}
	}
	// The replica is cut off (paused, its link closed by the primary)
	// while commits go on, then the primary dies and the replica, resumed,
	// is promoted: whatever the primary acknowledged meanwhile without the
	// replica is lost with it.
	replica.Pause()
	if err := primary.Client().ClientKillByFilter(ctx, "TYPE", "replica").Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	killedAt.Store(h.now())
	err := primary.Kill()
	replica.Resume()
	if err != nil {
		t.Fatal(err)
	}
	// Once Sentinel has promoted the replica, the old primary comes back
	// empty, and Sentinel makes it the new primary's replica: commits,
	// which need one, go on. (Back before the promotion, an empty primary
	// would be Redis losing everything, another fault.)
	sc := redis.NewSentinelClient(&redis.Options{Addr: sentinel})
	defer func() { _ = sc.Close() }()
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		a, err := sc.GetMasterAddrByName(ctx, "mymaster").Result()
		if err == nil && len(a) == 2 && a[0]+":"+a[1] == replica.Addr() {
			break
		}
		if time.Since(start) > 60*time.Second {
			t.Fatalf("Sentinel did not promote the replica: %v %v", a, err)
		}
	}
	primary.Restart()
	wg.Wait()

	history := h.ops
	newest := map[string]uint64{}
	for _, op := range history {
		in, out := op.Input.(linInput), op.Output.(linOutput)
		if in.op != "put" || !out.ok {
			continue
		}
		if got := e.final(in.table, in.version); got != in.content {
			t.Errorf("acknowledged version %d of %s holds %q, not %q", in.version, in.table, got, in.content)
		}
		newest[in.table] = max(newest[in.table], in.version)
	}
	for tbl, v := range newest {
		head, _, _, err := e.s.GetLatestVersion(ctx, tbl)
		if err != nil || head < v {
			t.Errorf("%s's head after the failover is %d (%v), below the acknowledged version %d", tbl, head, err, v)
		}
	}
	res, info := porcupine.CheckOperationsVerbose(tableModel, history, 60*time.Second)
	if res != porcupine.Ok {
		// The history, drawn, for finding the operation that cannot be
		// placed.
		path := filepath.Join(os.TempDir(), fmt.Sprintf("flightns-failover-%d.html", time.Now().UnixNano()))
		if err := porcupine.VisualizePath(tableModel, info, path); err != nil {
			path = err.Error()
		}
		t.Fatalf("history of %d operations is not linearizable (%v); drawn at %s", len(history), res, path)
	}
	if okAfter.Load() < wantAfter {
		t.Fatalf("%d commits succeeded after the failover: it did not happen, or nothing ran after it", okAfter.Load())
	}
	var acked int
	for _, op := range history {
		if op.Output.(linOutput).ok {
			acked++
		}
	}
	t.Logf("%d operations, %d commits acknowledged, %d after the failover", len(history), acked, okAfter.Load())
}
