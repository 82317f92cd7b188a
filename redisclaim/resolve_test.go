package redisclaim

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/nserror"
)

// A reader of the latest version that helps a cut transaction, while a
// newer version is committed meanwhile, answers one version: its number
// with its own manifest, never the number of one and the manifest of the
// next. (Found by the reliability suite: DescribeTableVersion answered
// version 29 with version 30's manifest.)
func TestLatestAfterHelpingATransactionIsOneVersion(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "mem")
	e.failAt(StepClaimed, "t1", 1, errors.New("crash after the claim"))
	_, err := e.s.BatchPut(ctx, []Entry{
		{Table: "t1", Version: 1, StagingPath: e.stage("t1", 1, "txn t1")},
		{Table: "t2", Version: 1, StagingPath: e.stage("t2", 1, "txn t2")},
	})
	if err == nil {
		t.Fatal("the cut transaction was acknowledged")
	}
	// While the reader helps the transaction, another writer commits
	// version 2 of t1 (the claim of version 1 already stands).
	var fired atomic.Bool
	f := StepFunc(func(ctx context.Context, st Step, table string, v uint64) error {
		if st == StepFinalized && table == "t1" && v == 1 && fired.CompareAndSwap(false, true) {
			if _, err := e.put("t1", 2, "version two"); err != nil {
				t.Errorf("put version 2: %v", err)
			}
		}
		return nil
	})
	e.step.Store(&f)
	loc, ok, err := e.s.GetLatestManifestLocation(ctx, "t1")
	if err != nil || !ok {
		t.Fatalf("latest: %v %v", ok, err)
	}
	if !fired.Load() {
		t.Fatal("the reader did not help the transaction")
	}
	if want := lancemanifest.Dir("t1").Manifest(lancemanifest.V2, loc.Version); loc.Path != want {
		t.Fatalf("latest is version %d with the manifest %s, want %s", loc.Version, loc.Path, want)
	}
	if want := int64(len(e.final("t1", loc.Version))); loc.Size != want {
		t.Fatalf("latest is version %d of size %d, its manifest has %d bytes", loc.Version, loc.Size, want)
	}
}

// Redis loses a claim between the claim and its final manifest, and a
// reader seeds the table's head from storage before the final is there:
// once the writer is acknowledged, the latest version is its version, not
// the older head. (Since PromoteWindow, the writer whose claim was lost
// does not promote on it; its retry commits.) (Found by the reliability suite under FLUSHALL: a read
// after an acknowledged commit answered the version before it.)
func TestCommitAfterALostClaimIsVisibleOnceAcknowledged(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "mem")
	if _, err := e.put("t", 1, "one"); err != nil {
		t.Fatal(err)
	}
	var fired atomic.Bool
	f := StepFunc(func(ctx context.Context, st Step, table string, v uint64) error {
		if st == StepClaimed && table == "t" && v == 2 && fired.CompareAndSwap(false, true) {
			e.redis.FlushAll()
			if head, _, _, err := e.s.GetLatestVersion(ctx, "t"); err != nil || head != 1 {
				t.Errorf("latest after the flush: %d %v, want 1", head, err)
			}
		}
		return nil
	})
	e.step.Store(&f)
	// The writer's claim is gone when it would promote (the recovery
	// waited PromoteWindow out): it does not promote on a lost claim and
	// says the outcome is unknown; the same request again claims anew.
	p := e.stage("t", 2, "two")
	_, err := e.s.Put(ctx, "t", 2, p, 3, "")
	if !isCode(err, nserror.ServiceUnavailable) {
		t.Fatalf("put version 2 on a lost claim: %v, want ServiceUnavailable", err)
	}
	if e.final("t", 2) != "" {
		t.Fatal("a lost claim was promoted")
	}
	if _, err := e.s.Put(ctx, "t", 2, p, 3, ""); err != nil {
		t.Fatalf("put version 2 again: %v", err)
	}
	if !fired.Load() {
		t.Fatal("the flush never happened")
	}
	head, _, _, err := e.s.GetLatestVersion(ctx, "t")
	if err != nil || head != 2 {
		t.Fatalf("latest after version 2 was acknowledged: %d %v, want 2", head, err)
	}
}
