package redisclaim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/nserror"
)

// 16 writers commit random overlapping sets of 2-5 tables; some
// transactions are cut between finalizing their members. Afterwards every
// transaction is all-or-nothing in storage, and every acknowledged one is
// wholly there. On s3-copy every member is promoted by a server-side
// conditional copy.
func TestMultiTableCommitsAreAllOrNothing(t *testing.T) {
	ctx := context.Background()
	for _, b := range []string{"mem", "file", "mem-cluster", "s3-copy"} {
		t.Run(b, func(t *testing.T) {
			var e *env
			if b == "mem-cluster" {
				e = newEnvOn(t, nil, redistestCluster(t), "mem")
			} else {
				e = newEnv(t, b)
			}
			tables := []string{"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7"}
			type attempt struct {
				label   string
				members map[string]uint64
				acked   bool
			}
			var mu sync.Mutex
			var attempts []*attempt
			// Cut every 7th transaction after its first member is final.
			var cut sync.Map
			f := StepFunc(func(_ context.Context, st Step, table string, v uint64) error {
				if st != StepFinalized {
					return nil
				}
				key := fmt.Sprintf("%s@%d", table, v)
				if _, ok := cut.LoadAndDelete(key); ok {
					return errors.New("crash between members")
				}
				return nil
			})
			e.step.Store(&f)

			const writers, perWriter = 16, 12
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(w), 7))
					for n := 0; n < perWriter; n++ {
						set := append([]string(nil), tables...)
						rng.Shuffle(len(set), func(i, j int) { set[i], set[j] = set[j], set[i] })
						set = set[:2+rng.IntN(4)]
						for try := 0; try < 100; try++ {
							heads, _, err := e.s.LatestVersions(ctx, set)
							if err != nil {
								t.Error(err)
								return
							}
							a := &attempt{label: fmt.Sprintf("w%d-n%d-try%d", w, n, try), members: map[string]uint64{}}
							var es []Entry
							for i, tbl := range set {
								v := heads[i] + 1
								a.members[tbl] = v
								es = append(es, Entry{Table: tbl, Version: v, StagingPath: e.stage(tbl, v, a.label+"/"+tbl)})
							}
							if (w*perWriter+n)%7 == 3 && try == 0 {
								cut.Store(fmt.Sprintf("%s@%d", set[0], heads[0]+1), true)
							}
							mu.Lock()
							attempts = append(attempts, a)
							mu.Unlock()
							_, err = e.s.BatchPut(ctx, es)
							if err == nil {
								a.acked = true
								break
							}
							if !isCode(err, nserror.ConcurrentModification) && !strings.Contains(err.Error(), "crash between members") {
								t.Errorf("BatchPut: %v", err)
								return
							}
							if !isCode(err, nserror.ConcurrentModification) {
								break // cut: outcome unknown, move on
							}
						}
					}
				})
			}
			wg.Wait()
			e.noFaults()

			// Readers finish whatever was cut.
			final := map[string]map[uint64]string{}
			for _, tbl := range tables {
				head, _, _, err := e.s.GetLatestVersion(ctx, tbl)
				if err != nil {
					t.Fatal(err)
				}
				final[tbl] = map[uint64]string{}
				for v := uint64(1); v <= head; v++ {
					if _, err := e.s.Get(ctx, tbl, v); err != nil {
						t.Fatalf("%s v%d: %v", tbl, v, err)
					}
					got := e.final(tbl, v)
					if got == "" {
						t.Fatalf("%s: version %d of %d missing", tbl, v, head)
					}
					final[tbl][v] = got
				}
			}
			acked := 0
			for _, a := range attempts {
				present := 0
				for tbl, v := range a.members {
					if final[tbl][v] == a.label+"/"+tbl {
						present++
					}
				}
				if present != 0 && present != len(a.members) {
					t.Fatalf("transaction %s is partly committed: %d of %d members", a.label, present, len(a.members))
				}
				if a.acked {
					acked++
					if present != len(a.members) {
						t.Fatalf("acknowledged transaction %s is missing", a.label)
					}
				}
			}
			if acked < writers*perWriter/2 {
				t.Fatalf("only %d transactions acknowledged", acked)
			}
			// Every final manifest belongs to some attempt.
			labels := map[string]bool{}
			for _, a := range attempts {
				for tbl := range a.members {
					labels[a.label+"/"+tbl] = true
				}
			}
			for tbl, vs := range final {
				for v, content := range vs {
					if !labels[content] {
						t.Fatalf("%s v%d holds %q, written by nobody", tbl, v, content)
					}
				}
			}
			left, _ := e.objs.ListAll(ctx, txnPrefix)
			if len(left) != 0 {
				t.Fatalf("%d transaction records left after readers helped", len(left))
			}
		})
	}
}

func TestLatestVersionsSeesATransactionWhollyOrNotAtAll(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "mem")
	tables := []string{"x", "y", "z"}
	done := make(chan struct{})
	var bad []string
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			heads, _, err := e.s.LatestVersions(ctx, tables)
			if err != nil {
				bad = append(bad, err.Error())
				return
			}
			if !slices.Equal(heads, []uint64{heads[0], heads[0], heads[0]}) {
				bad = append(bad, fmt.Sprint(heads))
				return
			}
		}
	})
	for v := uint64(1); v <= 50; v++ {
		var es []Entry
		for _, tbl := range tables {
			es = append(es, Entry{Table: tbl, Version: v, StagingPath: e.stage(tbl, v, fmt.Sprint(v))})
		}
		if _, err := e.s.BatchPut(ctx, es); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("a reader saw heads of a transaction half applied: %v", bad)
	}
}

// A transaction over many tables Redis has never seen seeds every head
// (one table per round of the claim script) and commits.
func TestATransactionOverManyNewTablesCommits(t *testing.T) {
	e := newEnv(t, "mem")
	var es []Entry
	for i := 0; i < 40; i++ {
		tb := fmt.Sprintf("new%02d", i)
		es = append(es, Entry{Table: tb, Version: 1, StagingPath: e.stage(tb, 1, "m"+tb)})
	}
	b, err := e.s.BatchPut(context.Background(), es)
	if err != nil {
		t.Fatalf("a transaction over 40 new tables: %v", err)
	}
	if len(b.Locations) != 40 {
		t.Fatalf("%d members committed", len(b.Locations))
	}
}

// A single-table commit that claimed version 2 of t1, then lost its claim
// when Redis lost its state, must not promote it once a transaction of the
// new epoch has claimed the same version: the transaction would be left
// partly committed (t0 its own, t1 the other writer's). The recovery
// waits PromoteWindow before it reads heads from storage, and the late
// writer reads its claim again before it promotes, finds it gone, and
// answers ServiceUnavailable; the transaction commits whole.
func TestALostClaimCannotPromoteIntoANewEpochsTransaction(t *testing.T) {
	for _, b := range []string{"mem", "file"} {
		t.Run(b, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, b)
			a := e.s
			coord := e.open(a.catalog)
			for _, tb := range []string{"t0", "t1"} {
				if _, err := e.put(tb, 1, tb+" v1"); err != nil {
					t.Fatal(err)
				}
			}
			aClaimed, releaseA, aDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
			var errA error
			var once, onceTxn sync.Once
			f := StepFunc(func(_ context.Context, st Step, table string, v uint64) error {
				switch {
				case st == StepClaimed && table == "t1" && v == 2:
					once.Do(func() { close(aClaimed); <-releaseA })
				case st == StepTxnRecorded:
					// Between the transaction's record and its promotions,
					// the late writer gets to promote.
					onceTxn.Do(func() { close(releaseA); <-aDone })
				}
				return nil
			})
			e.step.Store(&f)
			stagedA := e.stage("t1", 2, "late single commit")
			go func() {
				_, errA = a.Put(ctx, "t1", 2, stagedA, int64(len("late single commit")), "")
				close(aDone)
			}()
			<-aClaimed
			e.redis.FlushAll()
			es := []Entry{
				{Table: "t0", Version: 2, StagingPath: e.stage("t0", 2, "txn t0"), Size: int64(len("txn t0"))},
				{Table: "t1", Version: 2, StagingPath: e.stage("t1", 2, "txn t1"), Size: int64(len("txn t1"))},
			}
			_, err := coord.BatchPut(ctx, es)
			<-aDone
			if err != nil {
				t.Fatalf("the transaction of the new epoch: %v (late writer: %v)", err, errA)
			}
			if got0, got1 := e.final("t0", 2), e.final("t1", 2); got0 != "txn t0" || got1 != "txn t1" {
				t.Fatalf("the transaction is partly committed: t0 v2 %q, t1 v2 %q (late writer: %v)", got0, got1, errA)
			}
			if !isCode(errA, nserror.ServiceUnavailable) {
				t.Fatalf("the late writer's answer: %v, want ServiceUnavailable (its claim was lost)", errA)
			}
		})
	}
}

// An extra of unknown kind is refused before anything is written (and by
// the claim script itself: redisstate's TestClaimRefusesAnUnknownWrite).
func TestUnknownExtrasAreRefusedBeforeAnythingIsWritten(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "mem")
	tag := e.s.Tag()
	seqBefore := func() string { v, _ := e.rdb.Get(ctx, tag+":seq").Result(); return v }
	before := seqBefore()
	for _, x := range []*Extras{
		{Writes: []redisstate.Write{redisstate.HSet(redisstate.Key(tag+":obj"), "a", "b"), {Op: "del", Key: redisstate.Key(tag + ":obj"), Field: "a"}}},
		{Guards: []redisstate.Guard{{Op: "ne", Key: redisstate.Key(tag + ":obj"), Field: "a"}}},
	} {
		_, err := e.s.Commit(ctx, []Entry{{Table: "t", Version: 1, StagingPath: e.stage("t", 1, "m")}}, x)
		if err == nil || !strings.Contains(err.Error(), "unknown") {
			t.Fatalf("an unknown extra: %v", err)
		}
	}
	if seqBefore() != before {
		t.Fatalf("a refused commit took a sequence: %q (was %q)", seqBefore(), before)
	}
}

// A refused batch deletes the staging objects of its own members only:
// one that names another writer's claimed staging object (the same table
// and version: a staging name carries both) leaves it to that commit,
// which then completes. (Before, the refused batch deleted it, and the
// other commit, claimed, could not be promoted.)
func TestARefusedBatchLeavesAnotherClaimsStagingObject(t *testing.T) {
	e := newEnv(t, "file")
	ctx := context.Background()
	for _, tbl := range []string{"t", "u"} {
		if _, err := e.put(tbl, 1, tbl+" one"); err != nil {
			t.Fatal(err)
		}
	}
	victim := e.stage("t", 2, "t two")
	claimed, resume := make(chan struct{}), make(chan struct{})
	f := StepFunc(func(_ context.Context, st Step, table string, v uint64) error {
		if st == StepClaimed && table == "t" && v == 2 {
			close(claimed)
			<-resume
		}
		return nil
	})
	e.step.Store(&f)
	done := make(chan error, 1)
	go func() { _, err := e.s.Put(ctx, "t", 2, victim, int64(len("t two")), ""); done <- err }()
	<-claimed
	e.noFaults()
	_, err := e.s.BatchPut(ctx, []Entry{
		{Table: "t", Version: 2, StagingPath: victim, Size: int64(len("t two"))},
		{Table: "u", Version: 1, StagingPath: e.stage("u", 1, "u again"), Size: int64(len("u again"))}, // taken: the batch is refused
	})
	var ce *ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("the batch: %v, want a conflict", err)
	}
	e.s.sweep.flush()
	if _, err := e.objs.Get(ctx, victim); err != nil {
		t.Fatalf("the claimed staging object after the refused batch: %v", err)
	}
	close(resume)
	if err := <-done; err != nil {
		t.Fatalf("the claimed commit: %v", err)
	}
	if got := e.final("t", 2); got != "t two" {
		t.Fatalf("t's version 2: %q", got)
	}
}
