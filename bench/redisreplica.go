package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/redisproc"
)

// contendedTables is the table count of the contended measurement.
const contendedTables = 8

// commitReplicaScenario measures what a Redis replica's confirmation
// costs a commit: single-table commits over 1,024 tables on a primary
// with one replica, the claim confirmed on the replica before the commit
// point (WAIT: the default whenever the primary has replicas) and not
// (--redis-replica-acks 0), alternated at each client count in one run,
// on mem:// (the Redis part alone; a disk adds the same to both); then
// the same over contendedTables tables, where most commits are refused
// and each refusal waits for the replica as well.
func commitReplicaScenario() Scenario {
	return Scenario{
		Name: "commit-redis-replica",
		Description: "single-table commits on a Redis primary with one replica: the claim confirmed on the replica before the commit point (WAIT, the default) " +
			"vs not (--redis-replica-acks 0), alternated; mem://; then the same over 8 tables, where refusals (which wait too) dominate",
		Run:   runCommitReplica,
		Steps: func(cfg Config) int { return 4 * len(cfg.Clients) },
	}
}

func runCommitReplica(ctx context.Context, cfg Config, rep *Report) error {
	dir, err := os.MkdirTemp("", "flightns-bench-replica-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	primary, err := redisproc.Start(ctx, redisproc.Config{Dir: filepath.Join(dir, "primary"), Persistence: cfg.persistence()})
	if err != nil {
		return err
	}
	defer func() { _ = primary.Kill() }()
	replica, err := redisproc.Start(ctx, redisproc.Config{Dir: filepath.Join(dir, "replica"), Persistence: cfg.persistence()})
	if err != nil {
		return err
	}
	defer func() { _ = replica.Kill() }()
	if err := replicate(ctx, replica, primary); err != nil {
		return err
	}
	rdb := redis.NewClient(&redis.Options{Addr: primary.Addr(), PoolSize: 256})
	defer func() { _ = rdb.Close() }()
	zero := 0
	modes := []struct {
		name string
		acks *int
	}{{"acks-0", &zero}, {"replica", nil}}
	// Over 1,024 tables commits rarely meet; over 8 most of them are
	// refused at 64 clients, and a refusal waits for the replica too.
	for _, set := range []struct {
		name   string
		tables int
	}{{"commit-redis-replica", commitTables}, {"commit-redis-replica-contended", contendedTables}} {
		writers := make([]*committer, len(modes))
		for i, m := range modes {
			objs, cleanup, err := openBackend(ctx, "mem")
			if err != nil {
				return err
			}
			if writers[i], err = newCommitterOn(ctx, rdb, objs, cleanup, "mem", fmt.Sprintf("bench-%s-%d", m.name, set.tables), set.tables, 1, m.acks); err != nil {
				return err
			}
			defer writers[i].close()
		}
		for _, clients := range cfg.Clients {
			var off Result
			for i, m := range modes {
				r := Measure(ctx, clients, cfg.Duration, writers[i].commit)
				r.Scenario, r.Backend = set.name+":"+m.name, "mem"
				r.Note = fmt.Sprintf("over %d tables, a primary with one replica", set.tables)
				if i == 0 {
					off = r
				} else if off.OpsPerSec > 0 {
					r.Ceiling, r.Ratio = set.name+":acks-0", r.OpsPerSec/off.OpsPerSec
					r.Note += "; every commit point and refusal waits for the replica (WAIT 1)"
				}
				cfg.add(rep, r)
			}
		}
	}
	return nil
}

// replicate makes replica follow primary and waits until the primary
// counts it.
func replicate(ctx context.Context, replica, primary *redisproc.Server) error {
	host, port, _ := strings.Cut(primary.Addr(), ":")
	rc := replica.Client()
	defer func() { _ = rc.Close() }()
	if err := rc.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		return err
	}
	pc := primary.Client()
	defer func() { _ = pc.Close() }()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if info, err := pc.Info(ctx, "replication").Result(); err == nil && !strings.Contains(info, "connected_slaves:0") {
			return nil
		}
	}
	return fmt.Errorf("the replica of %s did not connect", primary.Addr())
}
