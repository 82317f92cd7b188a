package redisclaim

import (
	"context"
	"fmt"
	"testing"

	"github.com/flightns/flightns/internal/lancemanifest"
)

// A branch's first commit is at the version it forks from, and a failure
// at every seam of it is rolled forward by the next reader, exactly as on
// main, on every backend (the S3 one through the S3 protocol server);
// main's chain is never touched.
func TestABranchesFirstCommitSurvivesAFailureAtEverySeam(t *testing.T) {
	for _, b := range backendsUnderTest {
		for _, seam := range seams {
			t.Run(b+"/"+string(seam), func(t *testing.T) { branchFirstCommitAtSeam(t, b, seam) })
		}
	}
}

// branchFirstCommitAtSeam is one case of the test above.
func branchFirstCommitAtSeam(t *testing.T, backend string, seam Step) {
	ctx := context.Background()
	e := newEnv(t, backend)
	for v := uint64(1); v <= 3; v++ {
		if _, err := e.put("t", v, "main"); err != nil {
			t.Fatal(err)
		}
	}
	dev := lancemanifest.Chain{Table: "t", Branch: "dev"}.Key()
	if err := e.s.Fork(ctx, dev, 3); err != nil {
		t.Fatal(err)
	}
	e.crashAt(seam, dev, 3, "dev 3")
	// A second creator of the branch at the same version loses.
	if err := e.s.Fork(ctx, dev, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := e.put(dev, 3, "loser"); !isCode(err, 14) {
		t.Fatalf("a second first commit of dev: %v, want ConcurrentModification", err)
	}
	other := e.open(e.s.Catalog())
	v, _, ok, err := other.GetLatestVersion(ctx, dev)
	if err != nil || !ok || v != 3 || e.final(dev, 3) != "dev 3" {
		t.Fatalf("dev after a crash at %s: %d %v %v, final %q", seam, v, ok, err, e.final(dev, 3))
	}
	if _, err := e.put(dev, 4, "dev 4"); err != nil {
		t.Fatalf("dev's next commit: %v", err)
	}
	if v, _, _, _ := other.GetLatestVersion(ctx, "t"); v != 3 || e.final("t", 4) != "" {
		t.Fatalf("main moved: head %d, final 4 %q", v, e.final("t", 4))
	}
}

// Fork starts only an empty chain: a chain with versions in storage is
// left to the claim; one whose manifests are all gone is forgotten first
// (ForgetGone does that alone), and a fork at version 1 needs nothing.
func TestForkStartsOnlyAnEmptyOrVanishedChain(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "file")
	dev := lancemanifest.Chain{Table: "t", Branch: "dev"}.Key()
	if err := e.s.Fork(ctx, dev, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := e.put(dev, 5, "dev 5"); err != nil {
		t.Fatal(err)
	}
	// Another fork at 2 does not move the chain: version 2 is taken
	// below the head.
	if err := e.s.Fork(ctx, dev, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := e.put(dev, 2, "late"); !isCode(err, 14) {
		t.Fatalf("a fork below the head: %v, want ConcurrentModification", err)
	}
	if gone, err := e.s.ForgetGone(ctx, dev); err != nil || gone {
		t.Fatalf("ForgetGone of a live chain: %v %v", gone, err)
	}
	// Lance deletes the branch's files.
	if _, err := e.objs.DeletePrefix(ctx, dev+"/"); err != nil {
		t.Fatal(err)
	}
	if gone, err := e.s.ForgetGone(ctx, dev); err != nil || !gone {
		t.Fatalf("ForgetGone of a vanished chain: %v %v", gone, err)
	}
	if _, _, ok, err := e.s.GetLatestVersion(ctx, dev); err != nil || ok {
		t.Fatalf("the forgotten chain still has a head: %v %v", ok, err)
	}
	if err := e.s.Fork(ctx, dev, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := e.put(dev, 2, "again"); err != nil {
		t.Fatalf("the branch made again: %v", err)
	}
	if err := e.s.Fork(ctx, lancemanifest.Chain{Table: "t", Branch: "one"}.Key(), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := e.put(lancemanifest.Chain{Table: "t", Branch: "one"}.Key(), 1, "first"); err != nil {
		t.Fatal(err)
	}
}

// Redis losing everything loses no branch: a branch's chain is found again
// in its tree/<branch>/_versions, its next commit is head + 1 there, and a
// multi-table claim across a branch and main commits both.
func TestABranchSurvivesRedisLosingItsState(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "file")
	dev := lancemanifest.Chain{Table: "t", Branch: "team/dev"}.Key()
	if _, err := e.put("t", 1, "main 1"); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Fork(ctx, dev, 1); err != nil {
		t.Fatal(err)
	}
	for v := uint64(1); v <= 2; v++ {
		if _, err := e.put(dev, v, fmt.Sprintf("dev %d", v)); err != nil {
			t.Fatal(err)
		}
	}
	e.redis.FlushAll()
	if _, err := e.s.RecoverWithStats(ctx); err != nil {
		t.Fatal(err)
	}
	if v, _, ok, err := e.s.GetLatestVersion(ctx, dev); err != nil || !ok || v != 2 {
		t.Fatalf("dev after Redis lost its state: %d %v %v", v, ok, err)
	}
	if _, err := e.put(dev, 2, "dev 2 again"); !isCode(err, 14) {
		t.Fatalf("dev's version 2 again: %v, want ConcurrentModification", err)
	}
	b, err := e.s.BatchPut(ctx, []Entry{
		{Table: dev, Version: 3, StagingPath: e.stage(dev, 3, "dev 3")},
		{Table: "t", Version: 2, StagingPath: e.stage("t", 2, "main 2")},
	})
	if err != nil || len(b.Locations) != 2 {
		t.Fatalf("a claim across dev and main: %+v, %v", b, err)
	}
	if e.final(dev, 3) != "dev 3" || e.final("t", 2) != "main 2" || e.final("t", 3) != "" {
		t.Fatal("the batch's manifests are not where they belong")
	}
}
