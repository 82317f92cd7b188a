package planner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/redisclaim"
)

// leaves makes n leaves of a table partitioned by identity(i).
func (e *penv) leaves(table string, n int) []api.ID {
	e.t.Helper()
	e.create(table, `[{"source_ids":[1],"transform":{"type":"identity"}}]`)
	var out []api.ID
	for i := 0; i < n; i++ {
		out = append(out, must(e.p.ResolveRow(ctx, api.ID{table}, map[string]any{"i": i})).ID)
	}
	return out
}

type member struct {
	leaf string
	v    uint64
}

// Concurrent writers commit overlapping sets of partitions while readers
// plan: every plan holds each acknowledged commit wholly or not at all.
func TestPlansSeeAllOrNothingOfCrossPartitionCommits(t *testing.T) {
	e := newPenv(t)
	leaves := e.leaves("t", 4)
	var (
		mu        sync.Mutex
		committed [][]member
		plans     []map[string]uint64
		conflicts atomic.Int64
		stop      atomic.Bool
	)
	var writers, readers sync.WaitGroup
	for w := 0; w < 3; w++ {
		writers.Add(1)
		go func() {
			defer writers.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for n := 0; n < 25; n++ {
				perm := rng.Perm(len(leaves))
				write, read := perm[:2], perm[2]
				heads := map[int]int64{}
				for _, i := range append(write, read) {
					d, err := e.svc.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: leaves[i]})
					switch {
					case err == nil:
						heads[i] = d.Version.Version
					case nserror.CodeOf(err) == nserror.TableVersionNotFound:
						heads[i] = 0
					default:
						t.Error(err)
						return
					}
				}
				req := CommitRequest{Reads: []LeafRead{{ID: leaves[read], Version: heads[read]}}}
				var ms []member
				for _, i := range write {
					v := heads[i] + 1
					req.Writes = append(req.Writes, LeafWrite{ID: leaves[i], Version: v, ManifestPath: e.stage(leaves[i], v, fmt.Sprintf("w%d n%d", w, n))})
					ms = append(ms, member{leaves[i].String(), uint64(v)})
				}
				_, err := e.p.Commit(ctx, api.ID{"t"}, req)
				switch {
				case err == nil:
					mu.Lock()
					committed = append(committed, ms)
					mu.Unlock()
				case nserror.CodeOf(err) == nserror.ConcurrentModification:
					conflicts.Add(1)
				default:
					t.Errorf("commit: %v", err)
					return
				}
			}
		}()
	}
	for r := 0; r < 2; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for !stop.Load() {
				pl, err := e.p.PlanScan(ctx, api.ID{"t"}, "i >= 0")
				if err != nil {
					t.Error(err)
					return
				}
				seen := map[string]uint64{}
				for _, l := range pl.Leaves {
					seen[l.ID] = l.Version
				}
				mu.Lock()
				plans = append(plans, seen)
				mu.Unlock()
			}
		}()
	}
	writers.Wait()
	stop.Store(true)
	readers.Wait()
	if len(committed) < 10 {
		t.Fatalf("only %d commits succeeded (%d conflicts)", len(committed), conflicts.Load())
	}
	for _, p := range plans {
		for _, c := range committed {
			in := 0
			for _, m := range c {
				if p[m.leaf] >= m.v {
					in++
				}
			}
			if in != 0 && in != len(c) {
				t.Fatalf("a plan saw %d of %d members of commit %v: %v", in, len(c), c, p)
			}
		}
	}
	// After the dust settles every leaf reads at its head.
	final := e.plan("t", "")
	for _, l := range leaves {
		d := must(e.svc.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: l}))
		if final[l.String()].Version != uint64(d.Version.Version) {
			t.Errorf("leaf %s plans version %d, its head is %d", l, final[l.String()].Version, d.Version.Version)
		}
	}
	t.Logf("%d commits, %d conflicts, %d plans checked", len(committed), conflicts.Load(), len(plans))
}

// A commit whose coordinator dies at a seam of the protocol is rolled
// forward by the next reader: every member's version becomes final and
// plans show all of them.
func TestACrashMidCommitRollsForward(t *testing.T) {
	for _, seam := range []redisclaim.Step{redisclaim.StepClaimed, redisclaim.StepTxnRecorded, redisclaim.StepFinalized} {
		t.Run(string(seam), func(t *testing.T) {
			var armed atomic.Bool
			crash := errors.New("crash")
			e := newPenv(t, func(c *namespace.Config) {
				c.Claims.Step = func(_ context.Context, step redisclaim.Step, _ string, _ uint64) error {
					if step == seam && armed.CompareAndSwap(true, false) {
						return crash
					}
					return nil
				}
			})
			leaves := e.leaves("t", 2)
			req := CommitRequest{}
			for _, l := range leaves {
				req.Writes = append(req.Writes, LeafWrite{ID: l, Version: 1, ManifestPath: e.stage(l, 1, "m "+l.String())})
			}
			armed.Store(true)
			if _, err := e.p.Commit(ctx, api.ID{"t"}, req); !errors.Is(err, crash) {
				t.Fatalf("commit at seam %s: %v, want the crash", seam, err)
			}
			// A reader of one member finishes the transaction.
			if _, err := e.svc.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: leaves[0], Version: ptrTo(int64(1))}); err != nil {
				t.Fatalf("reading the crashed commit: %v", err)
			}
			for _, l := range leaves {
				r, _ := e.svc.Table().Object(manifesttable.TypeTable, l.String())
				final := lancemanifest.Dir(r.Location).Manifest(lancemanifest.V2, 1)
				if b, err := e.env.Objects.Get(ctx, final); err != nil || string(b) != "m "+l.String() {
					t.Errorf("final manifest of %s: %q, %v", l, b, err)
				}
			}
			for id, l := range e.plan("t", "") {
				if l.Version != 1 {
					t.Errorf("leaf %s plans version %d, want 1", id, l.Version)
				}
			}
			// The writer's retry of the same commit (same staging paths) is
			// answered as the commit it was, never applied twice.
			resp, err := e.p.Commit(ctx, api.ID{"t"}, req)
			if err != nil || len(resp.Versions) != 2 || resp.Versions[0].Version != 1 || resp.Versions[1].Version != 1 {
				t.Errorf("retrying: %+v, %v", resp, err)
			}
			for _, l := range leaves {
				d := must(e.svc.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: l}))
				if d.Version.Version != 1 {
					t.Errorf("after the retry %s is at version %d", l, d.Version.Version)
				}
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// A read assertion of "no version yet" holds for a leaf whose empty head
// Redis already knows (a failed claim seeded it as 0).
func TestAssertingAnEmptyLeafHoldsOnceItsHeadIsSeeded(t *testing.T) {
	e := newPenv(t)
	leaves := e.leaves("t", 2)
	// Version 2 of an empty leaf is refused, after Redis seeded its head.
	_, err := e.p.Commit(ctx, api.ID{"t"}, CommitRequest{Writes: []LeafWrite{{ID: leaves[1], Version: 2, ManifestPath: e.stage(leaves[1], 2, "x")}}})
	if err == nil {
		t.Fatal("version 2 of an empty leaf committed")
	}
	_, err = e.p.Commit(ctx, api.ID{"t"}, CommitRequest{
		Writes: []LeafWrite{{ID: leaves[0], Version: 1, ManifestPath: e.stage(leaves[0], 1, "a1")}},
		Reads:  []LeafRead{{ID: leaves[1], Version: 0}},
	})
	if err != nil {
		t.Fatalf("asserting the empty leaf at version 0: %v", err)
	}
	// …and fails once the leaf has a version.
	must(e.p.Commit(ctx, api.ID{"t"}, CommitRequest{Writes: []LeafWrite{{ID: leaves[1], Version: 1, ManifestPath: e.stage(leaves[1], 1, "b1")}}}))
	_, err = e.p.Commit(ctx, api.ID{"t"}, CommitRequest{
		Writes: []LeafWrite{{ID: leaves[0], Version: 2, ManifestPath: e.stage(leaves[0], 2, "a2")}},
		Reads:  []LeafRead{{ID: leaves[1], Version: 0}},
	})
	if nserror.CodeOf(err) != nserror.ConcurrentModification {
		t.Fatalf("asserting version 0 of a leaf at version 1: %v", err)
	}
}
