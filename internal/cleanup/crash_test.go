package cleanup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/flightns/flightns/objstore"
)

// A process killed (SIGKILL) after its N-th deletion, for every N: every
// kept version still reads, and a second plan and execution finish the
// job, leaving what an uninterrupted run leaves. The process is this test
// binary run again with childEnv set: it plans and executes the cleanup,
// and kills itself at the seam, an objstore fault hook that counts
// deletions.

const childEnv = "FLIGHTNS_CLEANUP_CHILD"

type childSpec struct {
	Root      string // the fixture's root; the table is Root/t.lance
	CutoffMs  int64
	KillAfter int    // deletions before the kill (0: before the first)
	ForgetLog string // where forget appends "<branch> <versions>" lines
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(child(spec))
	}
	code := m.Run()
	if fixtureDir != "" {
		_ = os.RemoveAll(fixtureDir)
	}
	os.Exit(code)
}

func child(spec string) int {
	var s childSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Println(err)
		return 2
	}
	kill := func() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) }
	deletes := 0
	ctx := context.Background()
	objs, err := objstore.OpenWith(ctx, "file://"+s.Root, objstore.Options{Faults: func(_ context.Context, op objstore.Op, _ string, phase objstore.Phase) error {
		if op != objstore.OpDelete {
			return nil
		}
		if phase == objstore.Before && deletes == s.KillAfter {
			kill()
		}
		if phase == objstore.After {
			if deletes++; deletes == s.KillAfter {
				kill()
			}
		}
		return nil
	}})
	if err != nil {
		fmt.Println(err)
		return 2
	}
	pl, err := NewPlan(ctx, objs, lanceTable, nil, policyAt(s.CutoffMs, 0, true))
	if err != nil {
		fmt.Println(err)
		return 3
	}
	forget := func(_ context.Context, branch string, versions []uint64) error {
		f, err := os.OpenFile(s.ForgetLog, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(f, "%s %v\n", chainName(branch), versions)
		return errors.Join(err, f.Close())
	}
	if _, err := pl.Execute(ctx, objs, forget, nil); err != nil {
		fmt.Println(err)
		return 4
	}
	return 0
}

// runChild runs the child and requires that it died of SIGKILL.
func runChild(t *testing.T, s childSpec) {
	t.Helper()
	spec, _ := json.Marshal(s)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("the child killed after %d deletions did not die: %v\n%s", s.KillAfter, err, out)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the child killed after %d deletions: %v\n%s", s.KillAfter, err, out)
	}
}

func TestAKillAtEveryDeletionLeavesEveryKeptVersionReadable(t *testing.T) {
	f := lanceFixture(t)
	cutoff := f.between(t, "dev", 5)
	ref, refFiles, _ := f.ourCleanup(t, policyAt(cutoff, 0, true), nil)
	total := ref.Totals.PrunedVersions + ref.Totals.Files
	var wantForget []string
	for _, c := range ref.Chains {
		if len(c.Pruned) > 0 {
			v := versionsOf(c.Pruned)
			slices.Reverse(v)
			wantForget = append(wantForget, fmt.Sprintf("%s %v", chainName(c.Branch), v))
		}
	}
	// LanceDB reads the killed table at a spread of seams: before any
	// deletion, amid and after the manifests, amid the files, at the end.
	readAt := map[int]bool{0: true, ref.Totals.PrunedVersions / 2: true, ref.Totals.PrunedVersions: true,
		ref.Totals.PrunedVersions + ref.Totals.Files/2: true, total: true}
	pristine := len(f.reads.Main)
	for n := 0; n <= total; n++ {
		f.restore(t)
		before := f.files(t)
		log := filepath.Join(t.TempDir(), "forget")
		runChild(t, childSpec{Root: f.root, CutoffMs: cutoff, KillAfter: n, ForgetLog: log})

		// forget came first, once per chain, whatever was deleted.
		b, err := os.ReadFile(log)
		if got := strings.Split(strings.TrimSpace(string(b)), "\n"); err != nil || !slices.Equal(got, wantForget) {
			t.Fatalf("killed after %d: forget %q %v, want %q", n, got, err, wantForget)
		}
		if gone := len(before) - len(f.files(t)); gone != n {
			t.Fatalf("killed after %d deletions, %d files are gone", n, gone)
		}
		objs := f.store(t)
		checkKeptVersionsRead(t, objs, ref)
		if readAt[n] {
			r := f.read(t)
			asBuilt(t, f, r)
			if n == 0 && len(r.Main) != pristine {
				t.Errorf("killed before any deletion, main lists %d versions, not %d", len(r.Main), pristine)
			}
		}

		// A second plan and execution finish the job.
		pl, err := NewPlan(context.Background(), objs, lanceTable, nil, policyAt(cutoff, 0, true))
		if err != nil {
			t.Fatal(err)
		}
		rec := &recorder{}
		if _, err := pl.Execute(context.Background(), objs, rec.forget, nil); err != nil {
			t.Fatalf("after a kill after %d deletions: %v", n, err)
		}
		if files := f.files(t); !slices.Equal(files, refFiles) {
			a, b := diff(files, refFiles)
			t.Fatalf("after a kill after %d deletions and a second run: extra %v, missing %v", n, a, b)
		}
	}
	t.Logf("killed at each of %d seams (%d manifests, %d files)", total+1, ref.Totals.PrunedVersions, ref.Totals.Files)
}
