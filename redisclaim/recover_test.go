package redisclaim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/internal/redisproc"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/internal/testutil/redistest"
	"github.com/flightns/flightns/nserror"
)

func TestRecoveryAfterFlushAllRollsRecordedTransactionsForward(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "file")
	if _, err := e.put("a", 1, "a1"); err != nil {
		t.Fatal(err)
	}
	// A transaction dies right after writing its commit record.
	e.failAt(StepTxnRecorded, "a", 2, errors.New("crash"))
	_, err := e.s.BatchPut(ctx, []Entry{
		{Table: "a", Version: 2, StagingPath: e.stage("a", 2, "txn-a")},
		{Table: "b", Version: 1, StagingPath: e.stage("b", 1, "txn-b")},
	})
	if err == nil {
		t.Fatal("the fault did not fire")
	}
	e.noFaults()
	// A second transaction whose member version is then taken in storage
	// by other bytes (Redis had lost its claim): it can never commit.
	e.failAt(StepTxnRecorded, "c", 1, errors.New("crash"))
	if _, err := e.s.BatchPut(ctx, []Entry{
		{Table: "c", Version: 1, StagingPath: e.stage("c", 1, "txn2-c")},
		{Table: "d", Version: 1, StagingPath: e.stage("d", 1, "txn2-d")},
	}); err == nil {
		t.Fatal("the fault did not fire")
	}
	e.noFaults()
	if err := e.objs.Put(ctx, lancemanifest.Dir("d").Manifest(lancemanifest.V2, 1), []byte("someone else")); err != nil {
		t.Fatal(err)
	}

	e.redis.FlushAll()
	st, err := e.s.RecoverWithStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Transactions != 2 || st.RolledForward != 1 || st.Voided != 1 {
		t.Fatalf("recovery stats = %+v, want 2 transactions, 1 rolled forward, 1 voided", st)
	}
	for tbl, want := range map[string]string{"a": "txn-a", "b": "txn-b"} {
		v, _, _, err := e.s.GetLatestVersion(ctx, tbl)
		if err != nil || e.final(tbl, v) != want {
			t.Fatalf("table %s after recovery: v%d %q, %v", tbl, v, e.final(tbl, v), err)
		}
	}
	if got := e.final("c", 1); got != "" {
		t.Fatalf("a voided transaction materialized c: %q", got)
	}
	if got := e.final("d", 1); got != "someone else" {
		t.Fatalf("recovery overwrote d: %q", got)
	}
	if left, _ := e.objs.ListAll(ctx, txnPrefix); len(left) != 0 {
		t.Fatalf("records left after recovery: %v", left)
	}
	// Commits resume, on top of what storage holds.
	if _, err := e.put("a", 3, "a3"); err != nil {
		t.Fatalf("a commit after recovery: %v", err)
	}
	if _, err := e.put("a", 2, "a2-again"); !errors.Is(err, nserror.ErrConcurrentModification) {
		t.Fatalf("re-claiming a recovered version: %v", err)
	}
}

func TestRecoveryKeepsTheSequenceAboveItsFloor(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "mem")
	loc, err := e.put("t", 1, "x")
	if err != nil {
		t.Fatal(err)
	}
	e.redis.FlushAll()
	cat := &floorCatalog{floor: 1000}
	s, err := NewIn(ctx, Config{Redis: e.rdb, Objects: e.objs, Catalog: e.s.Catalog(), Logger: quiet}, cat)
	cat.s = s
	if err != nil {
		t.Fatal(err)
	}
	p := e.stage("t", 2, "y")
	loc2, err := s.Put(ctx, "t", 2, p, 0, "")
	if err != nil || loc2.Seq <= 1000 || loc2.Seq <= loc.Seq {
		t.Fatalf("sequence after recovery = %d (before %d), %v; want above the floor 1000", loc2.Seq, loc.Seq, err)
	}
}

// floorCatalog is a catalog whose sequence is durable up to floor outside
// Redis, and which keeps nothing on top of its claims; complete, when set,
// is called for each transaction completed.
type floorCatalog struct {
	s        *Store
	floor    uint64
	complete func(TxnCommit) error
}

func (c *floorCatalog) Recover(ctx context.Context) (RecoveryStats, error) {
	r, err := c.s.BeginRecovery(ctx)
	if r == nil || err != nil {
		return RecoveryStats{}, err
	}
	err = r.WaitOut(ctx, false)
	var st RecoveryStats
	if err == nil {
		st, err = r.RebuildClaims(ctx, c.floor)
	}
	if err == nil {
		st, err = r.Finish(ctx)
	}
	return st, r.End(ctx, err)
}

func (c *floorCatalog) CompleteTxn(_ context.Context, t TxnCommit) error {
	if c.complete == nil {
		return nil
	}
	return c.complete(t)
}

func (c *floorCatalog) Name(string) string { return "" }

func (c *floorCatalog) NoteManifest(string, []byte) {}

// lostMember is a member of a transaction lostTransactions made.
type lostMember struct {
	table   string
	version uint64
	content string
}

// lostTransactions commits three transactions of two tables each (a0
// and b0, a1 and b1, …, each at version 1) whose writers die once their
// commit records are in storage, then empties Redis: a recovery has to
// roll every one forward. It returns their members.
func lostTransactions(t *testing.T, e *env) []lostMember {
	t.Helper()
	crash := StepFunc(func(_ context.Context, st Step, _ string, _ uint64) error {
		if st == StepTxnRecorded {
			return errors.New("crash")
		}
		return nil
	})
	e.step.Store(&crash)
	var members []lostMember
	for i := range 3 {
		var entries []Entry
		for _, tbl := range []string{"a", "b"} {
			m := lostMember{fmt.Sprintf("%s%d", tbl, i), 1, fmt.Sprintf("txn%d-%s", i, tbl)}
			members = append(members, m)
			entries = append(entries, Entry{Table: m.table, Version: m.version, StagingPath: e.stage(m.table, m.version, m.content)})
		}
		if _, err := e.s.Commit(context.Background(), entries, &Extras{Extra: []byte(`{}`)}); err == nil {
			t.Fatal("the fault did not fire")
		}
	}
	e.noFaults()
	e.redis.FlushAll()
	return members
}

// A recovery completes no rolled-forward transaction (its catalog part
// goes to the commit log, and the log's first entry after a loss has the
// materializer read storage for the lost sequences) before every one's
// members are final in storage.
func TestRecoveryMakesEveryTransactionFinalBeforeCompletingAny(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "mem")
	members := lostTransactions(t, e)

	var completed []string
	cat := &floorCatalog{complete: func(c TxnCommit) error {
		for _, m := range members {
			if got := e.final(m.table, m.version); got != m.content {
				t.Errorf("transaction %s completed while %s v%d was %q, not yet final", c.ID, m.table, m.version, got)
			}
		}
		completed = append(completed, c.ID)
		return nil
	}}
	s, err := NewIn(ctx, Config{Redis: e.rdb, Objects: e.objs, Catalog: e.s.Catalog(), Logger: quiet}, cat)
	if err != nil {
		t.Fatal(err)
	}
	cat.s = s
	st, err := s.RecoverWithStats(ctx)
	if err != nil || st.RolledForward != 3 || len(completed) != 3 {
		t.Fatalf("recovery: %+v, %v; completed %v; want 3 rolled forward and completed", st, err, completed)
	}
	if left, _ := e.objs.ListAll(ctx, txnPrefix); len(left) != 0 {
		t.Fatalf("records left after recovery: %v", left)
	}
}

// A recovery cut short in its second pass — before it completed any
// transaction (between the two passes), or after some — leaves the
// rest to the next recovery, which finds every member final and
// completes each transaction still recorded: each is completed once,
// no record is left, every member's final manifest holds its bytes, and
// the tables commit on from the versions the transactions made.
func TestARecoveryCutShortBetweenItsPassesIsFinishedByTheNext(t *testing.T) {
	ctx := context.Background()
	for cut := range 3 {
		t.Run(fmt.Sprintf("after %d completed", cut), func(t *testing.T) {
			e := newEnv(t, "mem")
			want := map[string]string{} // table → its v1's bytes
			for _, m := range lostTransactions(t, e) {
				want[m.table] = m.content
			}

			completed := map[string]int{}
			recoverOnce := func(failAt int) (RecoveryStats, error) {
				n := 0
				cat := &floorCatalog{complete: func(c TxnCommit) error {
					if n == failAt {
						return errors.New("killed")
					}
					n++
					completed[c.ID]++
					return nil
				}}
				// No writer is in flight: a short window only shortens the wait.
				s, err := NewIn(ctx, Config{Redis: e.rdb, Objects: e.objs, Catalog: e.s.Catalog(), Logger: quiet, PromoteWindow: 100 * time.Millisecond}, cat)
				if err != nil {
					return RecoveryStats{}, err
				}
				defer func() { _ = s.Close() }()
				cat.s = s
				return s.RecoverWithStats(ctx)
			}
			if _, err := recoverOnce(cut); err == nil {
				t.Fatal("the first recovery was not cut short")
			}
			for table, content := range want {
				if got := e.final(table, 1); got != content {
					t.Fatalf("after the cut, %s v1 is %q, want %q: the first pass makes every member final", table, got, content)
				}
			}
			if left, _ := e.objs.ListAll(ctx, txnPrefix); len(left) != 3-cut {
				t.Fatalf("after the cut %d records are left, want %d", len(left), 3-cut)
			}
			st, err := recoverOnce(-1)
			if err != nil || st.RolledForward != 3-cut {
				t.Fatalf("the second recovery: %+v, %v; want %d rolled forward", st, err, 3-cut)
			}
			if len(completed) != 3 {
				t.Fatalf("completed %v, want all three transactions", completed)
			}
			for id, n := range completed {
				if n != 1 {
					t.Errorf("transaction %s completed %d times", id, n)
				}
			}
			if left, _ := e.objs.ListAll(ctx, txnPrefix); len(left) != 0 {
				t.Fatalf("records left after the second recovery: %v", left)
			}
			s := e.open(e.s.Catalog())
			for table, content := range want {
				if got := e.final(table, 1); got != content {
					t.Errorf("%s v1 is %q, want %q", table, got, content)
				}
				if _, err := s.Put(ctx, table, 1, e.stage(table, 1, "again"), 5, ""); err == nil {
					t.Errorf("%s v1 was claimed again after the recoveries", table)
				}
				if _, err := s.Put(ctx, table, 2, e.stage(table, 2, "next"), 4, ""); err != nil {
					t.Errorf("%s v2 after the recoveries: %v", table, err)
				}
			}
		})
	}
}

func TestConcurrentRecoveriesRunOnce(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "mem")
	if _, err := e.put("t", 1, "x"); err != nil {
		t.Fatal(err)
	}
	// The writer's repair after its reply (the flip) must not meet the
	// flushed Redis: it would recover first, and none of the eight would.
	e.settle()
	e.redis.FlushAll()
	var ran atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			s := e.open(e.s.Catalog())
			st, err := s.RecoverWithStats(ctx)
			if err != nil {
				t.Error(err)
			}
			if st.Duration > 0 {
				ran.Add(1)
			}
		})
	}
	wg.Wait()
	if ran.Load() != 1 {
		t.Fatalf("%d recoveries ran, want exactly 1", ran.Load())
	}
}

// A load of single-table commits while Redis is killed and restarted with
// no persistence: every acknowledged version stays, no final manifest is
// overwritten, and commits resume after the automatic recovery. Redis is
// killed once killAfter commits are acknowledged, restarted as soon as it
// is dead, and the load ends once resumeAfter commits made wholly after
// the restart are acknowledged (or fails after a generous deadline).
func TestRedisRestartWithoutPersistenceUnderLoad(t *testing.T) {
	ctx := context.Background()
	r := redistest.Start(t, redistest.WithPersistence(redisproc.None))
	e := newEnvOn(t, r, r.Client(), "file")
	const writers, tables = 8, 4
	const killAfter, resumeAfter = 20, 20
	type ack struct {
		table   string
		version uint64
		content string
	}
	var mu sync.Mutex
	var acks []ack
	var afterRestart atomic.Int64
	var restarted atomic.Bool
	loaded := make(chan struct{})  // closed at the killAfter-th acknowledgement
	resumed := make(chan struct{}) // closed at the resumeAfter-th one after the restart
	stop := make(chan struct{})    // ends the load
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for n := 0; !stopped(); n++ {
				// A commit counts as after the restart only if it began after it.
				after := restarted.Load()
				tbl := fmt.Sprintf("t%d", rand.IntN(tables))
				v, _, _, err := e.s.GetLatestVersion(ctx, tbl)
				if err != nil {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				content := fmt.Sprintf("w%d-n%d-%s-v%d", w, n, tbl, v+1)
				p := e.stage(tbl, v+1, content)
				for attempt := 0; attempt < 50; attempt++ {
					_, err = e.s.Put(ctx, tbl, v+1, p, 0, "")
					if err == nil || isCode(err, nserror.ConcurrentModification) || isCode(err, nserror.InvalidInput) {
						break
					}
					time.Sleep(5 * time.Millisecond) // Redis down: retry the same staging path
				}
				if err != nil {
					continue
				}
				mu.Lock()
				acks = append(acks, ack{tbl, v + 1, content})
				if len(acks) == killAfter {
					close(loaded)
				}
				mu.Unlock()
				if after && afterRestart.Add(1) == resumeAfter {
					close(resumed)
				}
			}
		})
	}
	// waitFor waits for c, or ends the load and fails the test.
	waitFor := func(c <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-c:
		case <-time.After(time.Minute):
			close(stop)
			wg.Wait()
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("%s within a minute: %d commits acknowledged, %d after the restart", what, len(acks), afterRestart.Load())
		}
	}
	waitFor(loaded, fmt.Sprintf("not %d commits acknowledged", killAfter))
	if err := r.Kill(); err != nil { // returns once the process is gone
		t.Fatal(err)
	}
	r.Restart() // returns once the new server answers PING
	restarted.Store(true)
	waitFor(resumed, fmt.Sprintf("not %d commits acknowledged after the restart", resumeAfter))
	close(stop)
	wg.Wait()

	if len(acks) < 20 || afterRestart.Load() == 0 {
		t.Fatalf("%d commits acknowledged, %d after the restart: the load did not run or did not resume", len(acks), afterRestart.Load())
	}
	for _, a := range acks {
		if got := e.final(a.table, a.version); got != a.content {
			t.Fatalf("acknowledged %s v%d = %q, but storage holds %q", a.table, a.version, a.content, got)
		}
	}
	for i := range tables {
		tbl := fmt.Sprintf("t%d", i)
		head, _, _, err := e.s.GetLatestVersion(ctx, tbl)
		if err != nil {
			t.Fatal(err)
		}
		for v := uint64(1); v <= head; v++ {
			if e.final(tbl, v) == "" {
				t.Fatalf("%s: version %d of %d is missing from storage", tbl, v, head)
			}
		}
	}
}

// failFirst fails the first n commands it sees, as a Redis changing
// hands does (the old primary gone, the new one not yet promoted).
type failFirst struct{ n *atomic.Int32 }

func (failFirst) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f failFirst) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if f.n.Add(-1) >= 0 {
			err := errors.New("connection refused (injected)")
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (failFirst) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A recovery that failed releases its lock once Redis answers again,
// rather than leaving the other processes to wait for it to lapse.
func TestARecoveryLockIsReleasedOnceRedisAnswersAgain(t *testing.T) {
	e := newEnv(t, "mem")
	ctx := context.Background()
	if err := e.rdb.SetNX(ctx, string(e.s.k.Recovering()), "tok", recoveryLockTTL).Err(); err != nil {
		t.Fatal(err)
	}
	var failing atomic.Int32
	failing.Store(3)
	hooked := e.redis.Client()
	hooked.AddHook(failFirst{&failing})
	e.s.rs = redisstate.New(hooked, e.s.catalog, 0)
	e.s.releaseLock(ctx, "tok")
	if n, err := e.rdb.Exists(ctx, string(e.s.k.Recovering())).Result(); err != nil || n != 0 || failing.Load() >= 0 {
		t.Fatalf("the lock is still there (%d, %v) after %d injected failures", n, err, 3-max(failing.Load(), 0))
	}
}
