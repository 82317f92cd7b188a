package redistest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/redisproc"
)

func TestServerStartKillRestartFlush(t *testing.T) {
	ctx := context.Background()
	s := Start(t)
	if s.Port() == 6379 {
		t.Fatal("harness used port 6379")
	}
	c := s.Client()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	port := s.Port()
	// kill -9, restart on the same port and dir: without persistence the
	// data is gone.
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if s.Running() {
		t.Fatal("server still running after Kill")
	}
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("a killed server answered PING")
	}
	s.Restart()
	if s.Port() != port {
		t.Fatalf("restart moved the port from %d to %d", port, s.Port())
	}
	if err := c.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET after a restart without persistence: %v, want redis.Nil", err)
	}
	if err := c.Set(ctx, "k2", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.FlushAll()
	if n, err := c.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("DBSIZE after FLUSHALL = %d, %v", n, err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if s.Running() {
		t.Fatal("server still running after Stop")
	}
}

func TestAOFAlwaysSurvivesKill(t *testing.T) {
	ctx := context.Background()
	s := Start(t, WithPersistence(redisproc.AOFAlways))
	c := s.Client()
	if err := c.Set(ctx, "durable", "yes", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	s.Restart()
	if v, err := c.Get(ctx, "durable").Result(); err != nil || v != "yes" {
		t.Fatalf("GET after kill -9 with appendfsync always = %q, %v", v, err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "appendonlydir")); err != nil {
		t.Fatalf("no append-only files in the data dir: %v", err)
	}
}

func TestClusterRunsAHashTaggedScriptAndLosesANode(t *testing.T) {
	ctx := context.Background()
	cl := StartCluster(t, 3, 0)
	if len(cl.Nodes) != 3 {
		t.Fatalf("%d nodes, want 3", len(cl.Nodes))
	}
	c := cl.Client()
	script := redis.NewScript(`
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[1])
return redis.call('MGET', KEYS[1], KEYS[2])`)
	res, err := script.Run(ctx, c, []string{"{cat}:a", "{cat}:b"}, "x").StringSlice()
	if err != nil || len(res) != 2 || res[0] != "x" || res[1] != "x" {
		t.Fatalf("hash-tagged script = %v, %v", res, err)
	}
	// Keys in different slots cannot share a script.
	if err := script.Run(ctx, c, []string{"{cat}:a", "{dog}:b"}, "x").Err(); err == nil {
		t.Fatal("a cross-slot script succeeded")
	}
	owner, err := cl.NodeForKey(ctx, "{cat}:a")
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Kill(owner); err != nil {
		t.Fatal(err)
	}
	// With no replica, the killed master's slots become unavailable.
	deadline := time.Now().Add(10 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		err := c.Get(cctx, "{cat}:a").Err()
		cancel()
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("keys of a killed master stayed readable")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestClusterPromotesAReplicaWhenAMasterDies(t *testing.T) {
	ctx := context.Background()
	cl := StartCluster(t, 3, 1)
	if len(cl.Nodes) != 6 {
		t.Fatalf("%d nodes, want 6", len(cl.Nodes))
	}
	c := cl.Client()
	if err := c.Set(ctx, "{cat}:head", "7", 0).Err(); err != nil {
		t.Fatal(err)
	}
	owner, err := cl.NodeForKey(ctx, "{cat}:head")
	if err != nil {
		t.Fatal(err)
	}
	// Make sure the write reached the replica before the master dies.
	master := cl.Nodes[owner].Client()
	defer func() { _ = master.Close() }()
	if n, err := master.Wait(ctx, 1, 5*time.Second).Result(); err != nil || n < 1 {
		t.Fatalf("WAIT = %d, %v", n, err)
	}
	if err := cl.Kill(owner); err != nil {
		t.Fatal(err)
	}
	// The replica takes over after the node timeout (2s) and an election.
	deadline := time.Now().Add(30 * time.Second)
	for {
		newOwner, err := cl.NodeForKey(ctx, "{cat}:head")
		if err == nil && newOwner != owner {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no replica took over slot of {cat}: owner %d, %v", newOwner, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := cl.WaitHealthy(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	var v string
	t.Logf("failover done after %v", time.Since(deadline.Add(-30*time.Second)))
	deadline = time.Now().Add(10 * time.Second)
	for {
		c.ReloadState(ctx)
		v, err = c.Get(ctx, "{cat}:head").Result()
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || v != "7" {
		t.Fatalf("GET after failover = %q, %v", v, err)
	}
}
