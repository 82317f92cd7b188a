package redisclaim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/objstore"
)

// Crashes are emulated two ways: a step hook that fails the operation at a
// seam (the process lives on), and a child test binary that exits at the
// seam (the process dies mid-protocol). Either way the next reader or
// writer must roll the commit forward, and no loser's bytes may reach a
// final path.

var seams = []Step{StepClaimed, StepFinalized, StepConfirmed, StepFlipping, StepFlipped}

// pastTheReply says whether a writer reaches a seam only after its reply:
// a fault there cannot fail the commit it follows.
func pastTheReply(seam Step) bool { return seam == StepFlipping || seam == StepFlipped }

func TestAFailureAtEverySeamIsRolledForwardByTheNextReader(t *testing.T) {
	ctx := context.Background()
	for _, b := range backendsUnderTest {
		for _, seam := range seams {
			t.Run(b+"/"+string(seam), func(t *testing.T) {
				e := newEnv(t, b)
				if _, err := e.put("t", 1, "v1"); err != nil {
					t.Fatal(err)
				}
				e.crashAt(seam, "t", 2, "v2")
				// A loser arriving now must lose, and its bytes never land.
				if _, err := e.put("t", 2, "loser"); !isCode(err, 14) {
					t.Fatalf("a second writer of version 2: %v, want ConcurrentModification", err)
				}
				// Another process reads: it helps the commit finish.
				other := e.open(e.s.Catalog())
				v, _, ok, err := other.GetLatestVersion(ctx, "t")
				if err != nil || !ok || v != 2 {
					t.Fatalf("latest after a crash at %s = %d %v %v", seam, v, ok, err)
				}
				if got := e.final("t", 2); got != "v2" {
					t.Fatalf("final v2 = %q, want the winner's bytes", got)
				}
				// After the flip only the staging object's deletion was cut:
				// that leftover is garbage for `admin gc`, not a fault.
				if left := e.stagingLeft("t"); len(left) != 0 && seam != StepFlipped {
					t.Fatalf("staging objects left after helping: %v", left)
				}
				if _, err := e.put("t", 3, "v3"); err != nil {
					t.Fatalf("the next commit: %v", err)
				}
			})
		}
	}
}

func TestAFailureAfterStagingLeavesTheVersionFree(t *testing.T) {
	e := newEnv(t, "file")
	e.stage("t", 1, "abandoned") // the writer died before claiming
	if _, err := e.put("t", 1, "winner"); err != nil {
		t.Fatal(err)
	}
	if got := e.final("t", 1); got != "winner" {
		t.Fatalf("final = %q", got)
	}
}

// The child process: FLIGHTNS_REDISCLAIM_CHILD="addr|root|catalog|step|table|version|staging"
// commits and exits with status 7 at the step.
const childEnv = "FLIGHTNS_REDISCLAIM_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(crashingChild(spec))
	}
	os.Exit(m.Run())
}

func crashingChild(spec string) int {
	f := strings.Split(spec, "|")
	ctx := context.Background()
	objs, err := objstore.Open(ctx, f[1])
	if err != nil {
		fmt.Println(err)
		return 2
	}
	rdb := redis.NewClient(&redis.Options{Addr: f[0]})
	s, err := New(ctx, Config{Redis: rdb, Objects: objs, Catalog: f[2], Logger: quiet,
		Step: func(_ context.Context, st Step, _ string, _ uint64) error {
			if string(st) == f[3] {
				os.Exit(7)
			}
			return nil
		}})
	if err != nil {
		fmt.Println(err)
		return 2
	}
	v, _ := strconv.ParseUint(f[5], 10, 64)
	if f[4] == "batch" {
		var es []Entry
		for _, part := range strings.Split(f[6], ",") {
			tbl, stg, _ := strings.Cut(part, "=")
			es = append(es, Entry{Table: tbl, Version: v, StagingPath: stg})
		}
		_, err = s.BatchPut(ctx, es)
	} else {
		_, err = s.Put(ctx, f[4], v, f[6], 0, "")
	}
	_ = s.Close() // a seam past the reply is reached before the process ends
	if err != nil {
		fmt.Println(err)
		return 3
	}
	return 0
}

func runChild(t *testing.T, e *env, root, step, table string, version uint64, staging string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%s|%s|%s|%d|%s", childEnv, e.redis.Addr(), root, e.s.Catalog(), step, table, version, staging))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("child did not die at %s: %v\n%s", step, err, out.String())
	}
}

func TestAProcessKilledAtEverySeamLosesNothing(t *testing.T) {
	ctx := context.Background()
	for _, seam := range seams {
		t.Run(string(seam), func(t *testing.T) {
			e := newEnv(t, "file")
			root := e.objs.URI()
			if _, err := e.put("t", 1, "v1"); err != nil {
				t.Fatal(err)
			}
			staging := e.stage("t", 2, "from-the-dead")
			runChild(t, e, root, string(seam), "t", 2, staging)
			if _, err := e.put("t", 2, "loser"); !isCode(err, 14) {
				t.Fatalf("version 2 after the crash: %v, want ConcurrentModification", err)
			}
			v, _, _, err := e.s.GetLatestVersion(ctx, "t")
			if err != nil || v != 2 || e.final("t", 2) != "from-the-dead" {
				t.Fatalf("latest = %d (%v), final %q", v, err, e.final("t", 2))
			}
		})
	}
}

func TestATransactionKilledBetweenMembersIsCompletedByAReader(t *testing.T) {
	ctx := context.Background()
	for _, seam := range []Step{StepClaimed, StepTxnRecorded, StepFinalized, StepFlipping, StepFlipped} {
		t.Run(string(seam), func(t *testing.T) {
			e := newEnv(t, "file")
			tables := []string{"a", "b", "c"}
			var parts []string
			for _, tb := range tables {
				parts = append(parts, tb+"="+e.stage(tb, 1, "txn-"+tb))
			}
			runChild(t, e, e.objs.URI(), string(seam), "batch", 1, strings.Join(parts, ","))
			// A reader of the last member finishes the whole transaction.
			loc, err := e.s.GetManifestLocation(ctx, "c", 1)
			if err != nil || loc.TxnID == "" {
				t.Fatalf("member c after the crash: %+v, %v", loc, err)
			}
			for _, tb := range tables {
				if got := e.final(tb, 1); got != "txn-"+tb {
					t.Fatalf("member %s final = %q after helping", tb, got)
				}
			}
			// Cut after the flips, only the settled record's deletion is
			// missing: garbage that the next recovery (or gc) removes.
			if left, _ := e.objs.ListAll(ctx, txnPrefix); len(left) != 0 && seam != StepFlipped {
				t.Fatalf("transaction records left after settling: %v", left)
			}
		})
	}
}
