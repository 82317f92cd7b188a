package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/objstore"
)

// The commit-cpu scenario (issue 48): what one commit costs in CPU time,
// across every process that works on it — `flightns serve`, its SQL
// worker and redis-server — read from /proc around a fixed number of
// LanceDB-shaped commits. On tmpfs no storage request waits on a disk,
// so the time is the processes' own; with the server's profiles
// (FLIGHTNS_CPU_PROFILE_DIR) it says where the time goes.

// commitCPUCommits is how many commits each clients level measures
// (tests lower it; --quick measures a tenth).
var commitCPUCommits = 10_000

// commitCPUTarget is the bound on the CPU time of one commit,
// all processes together.
const commitCPUTarget = time.Millisecond

func commitCPUScenario() Scenario {
	return Scenario{
		Name: "commit-cpu",
		Description: fmt.Sprintf("LanceDB-shaped REST commits (a transaction file and a real Lance manifest staged, then CreateTableVersion, as LanceDB makes each add) to a `flightns serve` child with its own Redis, all on tmpfs (/dev/shm), "+
			"%d per --clients level up to 8 (writer c on table c): CPU time per commit of flightns serve, its SQL worker and redis-server from /proc (target: ≤ %v all together)",
			commitCPUCommits, commitCPUTarget),
		Run:   runCommitCPU,
		Steps: func(cfg Config) int { return len(commitCPUClients(cfg)) },
	}
}

// commitCPUClients is the --clients levels up to 8.
func commitCPUClients(cfg Config) []int {
	var out []int
	for _, c := range cfg.Clients {
		if c <= 8 {
			out = append(out, c)
		}
	}
	return out
}

func runCommitCPU(ctx context.Context, cfg Config, rep *Report) error {
	if st, err := os.Stat("/dev/shm"); err != nil || !st.IsDir() {
		return errors.New("commit-cpu measures on tmpfs and needs /dev/shm")
	}
	n := commitCPUCommits
	if cfg.Quick {
		n /= 10
	}
	for _, clients := range commitCPUClients(cfg) {
		if err := commitCPUAt(ctx, cfg, rep, clients, n); err != nil {
			return fmt.Errorf("%d clients: %w", clients, err)
		}
	}
	return nil
}

// commitCPUAt measures n commits by clients writers on a server of its
// own (its profile, when asked for, is this level's alone).
func commitCPUAt(ctx context.Context, cfg Config, rep *Report, clients, n int) error {
	s, err := startFeedServe(ctx, cfg, "commit-cpu", serveOptions{parent: "/dev/shm", tables: clients, lance: true})
	if err != nil {
		return err
	}
	defer s.close()
	// Untimed: a tenth as many first, for the steady state (connections,
	// the tables' first versions, the SQL worker's first segments).
	if r := commitCount(ctx, s, clients, max(n/10, clients)); r.Errors+r.Conflicts > 0 {
		return fmt.Errorf("%d of the warm-up commits failed: %s", r.Errors+r.Conflicts, r.FirstError)
	}
	c0 := s.cpu()
	r := commitCount(ctx, s, clients, n)
	c := s.cpu().minus(c0)
	if r.Errors+r.Conflicts > 0 {
		return fmt.Errorf("%d of the commits failed: %s", r.Errors+r.Conflicts, r.FirstError)
	}
	r.Scenario, r.Backend = "commit-cpu", "tmpfs"
	per := func(ticks int64) float64 { return float64(ticks) * 10 / float64(r.Ops) } // ms per commit
	r.ServerCPUMs, r.RedisCPUMs = per(c.server()), per(c.redis)
	total, target := per(c.server()+c.redis), float64(commitCPUTarget)/float64(time.Millisecond)
	r.Note = fmt.Sprintf("%d LanceDB-shaped REST commits (transaction file, staged manifest of %d bytes — LanceDB's, renumbered — then CreateTableVersion) by %d writers, writer c on table c, closed loop, after %d untimed; "+
		"flightns serve, its SQL worker and redis-server (persistence %s) on tmpfs; CPU time per commit from /proc: flightns serve %.3f ms, SQL worker %.3f ms, Redis %.3f ms, all together %.3f ms (target ≤ %.1f ms: %s); "+
		"the writers (this process) %.3f ms; %s",
		r.Ops, len(lanceTemplate), clients, max(n/10, clients), cfg.persistence(), per(c.serve), per(c.worker), per(c.redis), total,
		target, verdict(total <= target),
		per(c.self), c.busy(r.Seconds, false))
	cfg.add(rep, r)
	return nil
}

// verdict says whether a target was met.
func verdict(met bool) string {
	if met {
		return "met"
	}
	return "NOT met"
}

// commitCount commits until n are acknowledged, clients writers closed
// loop, client c on table c.
func commitCount(ctx context.Context, s *feedServer, clients, n int) Result {
	var acked atomic.Int64
	var first atomic.Value
	r := Measure(ctx, clients, 24*time.Hour, func(ctx context.Context, c int) Outcome {
		_, _, out := s.commit(ctx, c)
		switch {
		case out == OK:
			acked.Add(1)
		case ctx.Err() != nil:
			// Cut off by the stop: Measure counts none of these.
		case out == Conflict:
			first.CompareAndSwap(nil, fmt.Sprintf("version %d of %s conflicted (one writer per table)", s.w.heads[c].Load()+1, replicaTable(c)))
		default:
			first.CompareAndSwap(nil, fmt.Sprintf("version %d of %s failed", s.w.heads[c].Load()+1, replicaTable(c)))
		}
		return out
	}, func() bool { return acked.Load() >= int64(n) })
	if f, ok := first.Load().(string); ok {
		r.FirstError = f
	}
	return r
}

// stageLance writes what a LanceDB writer writes before it asks for
// version v of the table in dir: the version's transaction file, and
// returns its manifest (lanceTemplate renumbered as Lance numbers it),
// for the caller to stage.
func stageLance(ctx context.Context, objs *objstore.Store, dir string, v uint64) ([]byte, error) {
	u := uuid.NewString()
	txn := lancemanifest.RestoreTransaction(v-1, u, 0)
	txnFile := lancemanifest.TransactionFile(v-1, u)
	m, err := lancemanifest.Restored(lanceTemplate, lanceTemplate, v, time.Now(), txn, txnFile)
	if err != nil {
		return nil, err
	}
	if err := objs.PutWith(ctx, lancemanifest.Dir(dir).Transactions()+txnFile, txn, objstore.WriteOptions{NoSync: true}); err != nil {
		return nil, err
	}
	return m, nil
}
