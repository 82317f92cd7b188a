package reliability

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightns/flightns/internal/minioproc"
	"github.com/flightns/flightns/internal/testutil/redistest"
	"github.com/flightns/flightns/internal/testutil/s3test"
	"github.com/flightns/flightns/redisclaim"
)

// fileRoot is a file:// root in a fresh directory.
func fileRoot(t *testing.T) string { return "file://" + filepath.Join(t.TempDir(), "root") }

// Redis killed -9 and restarted without persistence: it comes back empty,
// and flightns must rebuild its state from storage before serving commits.
func TestLinearizableRedisKilledNoPersistence(t *testing.T) {
	r := redistest.Start(t) // persistence none
	root := fileRoot(t)
	srv := startServer(t, nil, "--redis", r.URL(), "--root", root)
	scenario{
		lossy: true, storeURI: root, srv: srv, tables: 3, clients: 4,
		duration: pick(7*time.Second, 30*time.Second), rounds: pick(1, 4), every: pick(2*time.Second, 4*time.Second),
		faults: []fault{{"redis kill -9 + restart (no persistence)", func(t *testing.T, rng *rand.Rand) {
			if err := r.Kill(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
			r.Restart()
		}}},
	}.run(t)
}

// Redis FLUSHALL under load: every key of the catalog is gone at once.
func TestLinearizableRedisFlushAll(t *testing.T) {
	r := redistest.Start(t)
	root := fileRoot(t)
	srv := startServer(t, nil, "--redis", r.URL(), "--root", root)
	scenario{
		lossy: true, storeURI: root, srv: srv, tables: 3, clients: 4,
		duration: pick(7*time.Second, 30*time.Second), rounds: pick(1, 4), every: pick(1500*time.Millisecond, 3*time.Second),
		faults: []fault{{"redis FLUSHALL", func(t *testing.T, _ *rand.Rand) { r.FlushAll() }}},
	}.run(t)
}

// The server killed -9 at random points of running commits, restarted on
// the same data with its private Redis (append-only, fsynced) and also
// with an external Redis without persistence that outlives it.
func TestLinearizableServerKill9(t *testing.T) {
	t.Run("private redis", func(t *testing.T) {
		data := t.TempDir()
		srv := startServer(t, nil, "--data", data)
		killScenario(srv, "file://"+filepath.Join(data, "root")).run(t)
	})
	t.Run("external redis", func(t *testing.T) {
		r := redistest.Start(t)
		root := fileRoot(t)
		srv := startServer(t, nil, "--redis", r.URL(), "--root", root)
		killScenario(srv, root).run(t)
	})
	// Every commit held 20 ms at one step of the commit protocol
	// (FLIGHTNS_DEBUG_STEP_DELAY), each step in turn: a kill follows a
	// commit's arrival at the step, so it lands while commits wait there
	// (between claim and final manifest, between the final manifest and the
	// read-back, between the read-back and the reply, between the reply and
	// the flip, ...); on a directory; on a MinIO bucket, where the
	// promotion is a read and a conditional PUT and the staging object's
	// deletion is batched after the reply; and on a store that honours a
	// conditional copy (MinIO behind s3proxy.HonourCopyCondition, as AWS
	// S3 does), where the server finishes the commits it finds cut off
	// with one server-side conditional CopyObject each.
	for _, step := range redisclaim.Steps() {
		for _, backend := range []string{"file", "s3", "s3-copy"} {
			t.Run("killed at "+string(step)+" on "+backend, func(t *testing.T) { killedAtStep(t, step, backend) })
		}
	}
}

// killedAtStep runs the kill scenario with every commit held at step, on
// a root of backend (file, s3 or s3-copy).
func killedAtStep(t *testing.T, step redisclaim.Step, backend string) {
	r := redistest.Start(t)
	root := fileRoot(t)
	var honouring *s3test.FaultProxy
	switch backend {
	case "s3":
		root = s3test.Start(t, "lake").URI("lake", "cat")
	case "s3-copy":
		honouring = s3test.StartFaultProxy(t, s3test.Start(t, "lake").URL)
		honouring.HonourCopyCondition(minioproc.AccessKey, minioproc.SecretKey, minioproc.Region)
		root = honouring.URI("lake", "cat")
	}
	srv := startServer(t, []string{"FLIGHTNS_DEBUG_STEP_DELAY=" + string(step) + "=20ms"}, "--redis", r.URL(), "--root", root)
	var atStep atomic.Int32
	sc := killScenario(srv, root)
	sc.duration, sc.rounds = pick(5*time.Second, 20*time.Second), pick(1, 2)
	sc.faults = []fault{{"server kill -9 at " + string(step) + " + restart", func(t *testing.T, _ *rand.Rand) {
		if srv.awaitLog(heldAtStep, 5*time.Second) {
			atStep.Add(1)
		}
		srv.restart()
	}}}
	sc.run(t)
	t.Logf("%d kills followed a commit held at %s", atStep.Load(), step)
	if atStep.Load() == 0 {
		t.Fatalf("no kill followed a commit held at %s", step)
	}
	if honouring != nil {
		// The server's startup probe is one; every commit a restarted
		// server found cut off before its flip was finished by another.
		copies := honouring.ConditionalCopies.Load()
		t.Logf("%d conditional copies reached the store", copies)
		if copies <= int64(srv.starts()) {
			t.Fatalf("%d conditional copies in %d server starts: no promotion was a server-side copy, so the test proved nothing about them", copies, srv.starts())
		}
	}
}

// heldAtStep is what the server logs when FLIGHTNS_DEBUG_STEP_DELAY holds a
// commit.
const heldAtStep = "commit held at a protocol step"

func killScenario(srv *server, root string) scenario {
	return scenario{
		storeURI: root, srv: srv, tables: 3, clients: 4,
		duration: pick(7*time.Second, 30*time.Second), rounds: pick(1, 4), every: pick(2*time.Second, 5*time.Second),
		faults: []fault{{"server kill -9 + restart", func(t *testing.T, rng *rand.Rand) {
			time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
			srv.restart()
		}}},
	}
}

// All Redis faults and server kills mixed in one history.
func TestLinearizableMixedFaults(t *testing.T) {
	r := redistest.Start(t)
	root := fileRoot(t)
	srv := startServer(t, nil, "--redis", r.URL(), "--root", root)
	scenario{
		lossy: true, storeURI: root, srv: srv, tables: 4, clients: 5,
		duration: pick(8*time.Second, 30*time.Second), rounds: pick(1, 10), every: pick(1500*time.Millisecond, 3*time.Second),
		faults: []fault{
			{"redis kill -9 + restart (no persistence)", func(t *testing.T, _ *rand.Rand) { _ = r.Kill(); r.Restart() }},
			{"redis FLUSHALL", func(t *testing.T, _ *rand.Rand) { r.FlushAll() }},
			{"server kill -9 + restart", func(t *testing.T, _ *rand.Rand) { srv.restart() }},
		},
	}.run(t)
}

// S3 behind a proxy that answers 500/503 without acting, drops replies
// after the store acted, and adds latency; in bursts, with the server
// also killed now and then.
func TestLinearizableS3Faults(t *testing.T) {
	s3 := s3test.Start(t, "lake")
	proxy := s3test.StartFaultProxy(t, s3.URL)
	r := redistest.Start(t)
	srv := startServer(t, nil, "--redis", r.URL(), "--root", proxy.URI("lake", "cat"))
	steady := s3test.Faults{ErrorRate: 0.03, LostReplyRate: 0.02, MaxLatency: 5 * time.Millisecond}
	proxy.Set(steady)
	res := scenario{
		storeURI: s3.URI("lake", "cat"), srv: srv, tables: 3, clients: 4,
		duration: pick(8*time.Second, 30*time.Second), rounds: pick(1, 6), every: pick(2*time.Second, 4*time.Second),
		faults: []fault{
			{"s3 error burst (30% 500/503 for 500ms)", func(t *testing.T, _ *rand.Rand) {
				proxy.Set(s3test.Faults{ErrorRate: 0.3, MaxLatency: 5 * time.Millisecond})
				time.Sleep(500 * time.Millisecond)
				proxy.Set(steady)
			}},
			{"s3 lost-reply burst (30% for 500ms)", func(t *testing.T, _ *rand.Rand) {
				proxy.Set(s3test.Faults{LostReplyRate: 0.3})
				time.Sleep(500 * time.Millisecond)
				proxy.Set(steady)
			}},
			{"s3 latency burst (up to 300ms for 1s)", func(t *testing.T, _ *rand.Rand) {
				proxy.Set(s3test.Faults{MaxLatency: 300 * time.Millisecond})
				time.Sleep(time.Second)
				proxy.Set(steady)
			}},
		},
		quiesce: func(t *testing.T) { proxy.Set(s3test.Faults{}) },
	}.run(t)
	t.Logf("s3 proxy: %d errors, %d replies lost, %d delayed, %d passed",
		proxy.Errors.Load(), proxy.Lost.Load(), proxy.Delayed.Load(), proxy.Passed.Load())
	if proxy.Errors.Load() == 0 || proxy.Lost.Load() == 0 {
		t.Fatalf("the proxy injected nothing (errors %d, lost %d): the test proved nothing", proxy.Errors.Load(), proxy.Lost.Load())
	}
	_ = res
}

// A Redis Cluster master killed -9 and its replica promoted, then the old
// master back as a replica. Replication is asynchronous, but nothing a
// client is told rests on a write the replica lacks (the default
// --redis-replica-acks auto: commit points, refusals and catalog changes
// wait for it), so the history is checked strictly.
func TestLinearizableClusterFailover(t *testing.T) {
	c := redistest.StartCluster(t, 3, 1)
	addrs := c.Addrs()
	url := "redis+cluster://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr=")
	root := fileRoot(t)
	srv := startServer(t, nil, "--redis", url, "--root", root)
	scenario{
		// 7 s in the short form: a failover leaves up to ~20 operations of
		// unknown outcome, and past ~4,000 operations around them
		// porcupine may not decide within its 2 minutes (the history
		// grows with the server's speed; 10 s made 4,400–5,200).
		storeURI: root, srv: srv, tables: 3, clients: 4,
		duration: pick(7*time.Second, 30*time.Second), rounds: pick(1, 6), every: pick(4*time.Second, 10*time.Second),
		faults: []fault{{"cluster master kill -9 + replica promoted", func(t *testing.T, _ *rand.Rand) {
			ctx := context.Background()
			i, err := c.NodeForKey(ctx, "{flightns}:epoch")
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Kill(i); err != nil {
				t.Fatal(err)
			}
			if err := c.WaitHealthy(ctx, 30*time.Second); err != nil {
				t.Fatal(err)
			}
			if err := c.Nodes[i].Restart(ctx); err != nil {
				t.Fatal(err)
			}
			if err := c.WaitHealthy(ctx, 30*time.Second); err != nil {
				t.Fatal(err)
			}
		}}},
	}.run(t)
}
