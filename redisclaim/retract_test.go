package redisclaim

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/nserror"
)

// On a store that refuses a conditional copy onto an existing key, a Put
// that gives its manifest's size claims first: nothing reaches the store
// before the claim, and the commit is one server-side copy. The claim is
// unproven until the flip after the reply, which reads the final manifest
// for its size; a writer's wrong size is its own reply's, never the
// record's.
func TestAPutClaimsFirstWhereTheStoreCopies(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "s3-copy")
	if _, err := e.put("t", 1, "zero"); err != nil { // (the first commit lists the table's versions)
		t.Fatal(err)
	}
	p := e.stage("t", 2, "first")
	e.s.after.Wait()
	e.sent()
	var beforeClaim []string
	f := StepFunc(func(_ context.Context, st Step, _ string, _ uint64) error {
		if st == StepClaimed {
			for _, r := range e.sent() {
				beforeClaim = append(beforeClaim, r.Method+" "+r.Path)
			}
		}
		return nil
	})
	e.step.Store(&f)
	loc, err := e.s.Put(ctx, "t", 2, p, 5, "")
	if err != nil || loc.Version != 2 || loc.Size != 5 {
		t.Fatalf("Put: %+v %v", loc, err)
	}
	if len(beforeClaim) != 0 {
		t.Fatalf("requests to the store before the claim: %v, want none", beforeClaim)
	}
	e.noFaults()
	if reqs := e.sent(); len(reqs) == 0 || reqs[0].Method != "PUT" || !strings.HasSuffix(reqs[0].Path, lancemanifest.Dir("t").Manifest(lancemanifest.V2, 2)) {
		t.Fatalf("the commit's first request: %+v, want the copy to the final manifest", reqs)
	}
	if e.final("t", 2) != "first" {
		t.Fatalf("final manifest: %q", e.final("t", 2))
	}

	// A size that is not the staged object's is the writer's reply's
	// alone: the record holds what storage holds once flipped.
	p2 := e.stage("t", 3, "second")
	if loc, err := e.s.Put(ctx, "t", 3, p2, 99, ""); err != nil || loc.Size != 99 {
		t.Fatalf("Put with another size: %+v %v", loc, err)
	}
	e.s.after.Wait()
	g, err := e.s.rs.Get(ctx, "t", 3)
	if err != nil || !g.HasRecord || g.Record.Staged() || g.Record.Unproven || g.Record.Size != int64(len("second")) {
		t.Fatalf("the flipped record: %+v %v", g.Record, err)
	}
	if l, err := e.s.GetManifestLocation(ctx, "t", 3); err != nil || l.Size != int64(len("second")) {
		t.Fatalf("GetManifestLocation: %+v %v", l, err)
	}
}

// A Put naming a staging object that does not exist, claimed first, is
// refused (InvalidInput) once the claim is taken back: the version stays
// free, the head where it was, no final manifest is made, and the next
// writer commits the version. A reader meanwhile never sees it.
func TestAnUnprovenClaimWithoutItsStagingObjectIsTakenBack(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "s3-copy")
	if _, err := e.put("t", 1, "one"); err != nil {
		t.Fatal(err)
	}
	missing := lancemanifest.StagingPath(lancemanifest.Dir("t").Manifest(lancemanifest.V2, 2))
	start := time.Now()
	_, err := e.s.Put(ctx, "t", 2, missing, 40, "")
	if !errors.Is(err, nserror.ErrInvalidInput) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("Put of a missing staging object: %v, want InvalidInput", err)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Fatalf("refused after %s: the claim must be taken back only after twice the promote window", took)
	}
	if e.final("t", 2) != "" {
		t.Fatal("a final manifest was made for a staging object that does not exist")
	}
	g, err := e.s.rs.Get(ctx, "t", 2)
	if err != nil || g.Head != 1 || !g.HasRecord || !g.Record.Retracted() {
		t.Fatalf("after the claim was taken back: head %d, record %+v (%v); want head 1 and a tombstone", g.Head, g.Record, err)
	}
	if v, _, _, err := e.s.GetLatestVersion(ctx, "t"); err != nil || v != 1 {
		t.Fatalf("latest: %d %v", v, err)
	}
	if _, err := e.s.Get(ctx, "t", 2); !errors.Is(err, nserror.ErrTableVersionNotFound) {
		t.Fatalf("Get of the version taken back: %v", err)
	}
	if locs, _, err := e.s.ListVersions(ctx, "t", ListOptions{}); err != nil || len(locs) != 1 {
		t.Fatalf("ListVersions: %+v %v", locs, err)
	}
	if loc, err := e.put("t", 2, "two"); err != nil || loc.Version != 2 || e.final("t", 2) != "two" {
		t.Fatalf("the next writer of version 2: %+v %v", loc, err)
	}
}

// No claim sits on an unproven one still staged: the writer of the next
// version finishes it first (here it had been left by a writer that
// crashed right after claiming), then claims.
func TestAClaimOnAnUnprovenOneFinishesItFirst(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "s3-copy")
	e.crashAt(StepClaimed, "t", 1, "one")
	if g, err := e.s.rs.Get(ctx, "t", 1); err != nil || !g.Record.Staged() || !g.Record.Unproven {
		t.Fatalf("the crashed claim: %+v %v", g.Record, err)
	}
	if loc, err := e.put("t", 2, "two"); err != nil || loc.Version != 2 {
		t.Fatalf("the next version: %+v %v", loc, err)
	}
	if e.final("t", 1) != "one" || e.final("t", 2) != "two" {
		t.Fatalf("finals: %q %q", e.final("t", 1), e.final("t", 2))
	}
}

// A claim being taken back whose final manifest turns up — a helper's
// promotion, entitled by a reading before the mark, landed during the
// wait — committed after all: whoever finishes the taking back flips it
// and answers with it.
func TestAClaimBeingTakenBackThatCommittedStands(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "s3-copy")
	e.crashAt(StepClaimed, "t", 1, "one")
	g, err := e.s.rs.Get(ctx, "t", 1)
	if err != nil || !g.Record.Unproven {
		t.Fatalf("the crashed claim: %+v %v", g.Record, err)
	}
	if st, _, err := e.s.rs.RetractMark(ctx, "t", 1, g.Record.Staging, time.Now()); err != nil || st != "OK" {
		t.Fatalf("mark: %v %v", st, err)
	}
	// What the helper's copy would have made.
	if err := e.objs.Put(ctx, g.Record.Final, []byte("one")); err != nil {
		t.Fatal(err)
	}
	loc, err := e.s.GetManifestLocation(ctx, "t", 1)
	if err != nil || loc.Version != 1 || loc.Size != 3 {
		t.Fatalf("the version: %+v %v", loc, err)
	}
	if g, err := e.s.rs.Get(ctx, "t", 1); err != nil || g.Record.Staged() || g.Record.Size != 3 {
		t.Fatalf("its record: %+v %v", g.Record, err)
	}
}
