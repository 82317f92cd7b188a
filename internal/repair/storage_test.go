package repair

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/testutil/nstest"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/objstore"
)

// damaged builds a catalog of namespaces a..e (one mutation, one segment
// each), closes it, and deletes its second segment: the segments after it
// cannot be applied. It returns the segment files left.
func damaged(t *testing.T, env *nstest.Env) []string {
	t.Helper()
	ctx := context.Background()
	svc := env.Open(t)
	for _, ns := range []string{"a", "b", "c", "d", "e"} {
		if _, err := svc.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: api.ID{ns}, Properties: api.Properties{"p": ns}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	segs, err := filepath.Glob(filepath.Join(env.Root, "__manifest", "_log", "*.parquet"))
	if err != nil || len(segs) < 5 {
		t.Fatalf("segments %v (%v): want one per mutation", segs, err)
	}
	slices.Sort(segs)
	if err := os.Remove(segs[1]); err != nil {
		t.Fatal(err)
	}
	return append(segs[:1:1], segs[2:]...)
}

func repairWith(t *testing.T, env *nstest.Env, objs *objstore.Store) (RepairReport, error) {
	t.Helper()
	return Repair(context.Background(), RepairOptions{Objects: objs, Redis: env.RDB, Catalog: env.Catalog, Now: time.Now(),
		Open: func(ctx context.Context) (*namespace.Service, error) {
			cfg := env.Config()
			cfg.Objects, cfg.Table.NoSQL = objs, true
			return namespace.Open(ctx, cfg)
		}})
}

func namespacesOf(t *testing.T, env *nstest.Env) []string {
	t.Helper()
	svc := env.Open(t)
	defer func() { _ = svc.Close() }()
	var out []string
	for _, r := range svc.Table().Objects() {
		if r.ObjectType == manifesttable.TypeNamespace {
			out = append(out, r.ObjectID+"="+r.Metadata)
		}
	}
	slices.Sort(out)
	return out
}

// quarantined lists the files under every quarantine directory, by their
// original name (a file whose move was interrupted after its copy is
// copied again by the next run: listed once).
func quarantined(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	dirs, _ := filepath.Glob(filepath.Join(root, "__manifest", "_quarantine", "*"))
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(d, "_log", "*.parquet"))
		for _, f := range files {
			out = append(out, filepath.Base(f))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// A repair that fails at any step of moving a file (the copy or the
// delete, before or after it reached storage) leaves a catalog that a
// second repair completes, with nothing lost: every file is in quarantine
// and every row is back from Redis's commit log.
func TestRepairInterruptedAtEverySeamCompletesOnTheNextRun(t *testing.T) {
	for _, seam := range []struct {
		op    objstore.Op
		phase objstore.Phase
	}{{objstore.OpCopyIfAbsent, objstore.Before}, {objstore.OpCopyIfAbsent, objstore.After}, {objstore.OpDelete, objstore.Before}, {objstore.OpDelete, objstore.After}} {
		t.Run(string(seam.op)+"/"+seam.phase.String(), func(t *testing.T) {
			env := nstest.New(t)
			segs := damaged(t, env)
			var n atomic.Int32
			faulty, err := objstore.OpenWith(context.Background(), "file://"+env.Root, objstore.Options{Faults: func(_ context.Context, op objstore.Op, key string, phase objstore.Phase) error {
				if op == seam.op && phase == seam.phase && n.Add(1) == 2 {
					return errors.New("injected")
				}
				return nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = faulty.Close() }()
			if _, err := repairWith(t, env, faulty); err == nil || !strings.Contains(err.Error(), "injected") {
				t.Fatalf("repair with a fault: %v", err)
			}
			rep, err := repairWith(t, env, env.Objects)
			if err != nil || len(rep.Unrecovered) != 0 || rep.Verify == nil || rep.Verify.Unrepaired() != 0 {
				t.Fatalf("second repair: %+v, %v", rep, err)
			}
			want := []string{}
			for _, s := range segs[1:] {
				want = append(want, filepath.Base(s))
			}
			if got := quarantined(t, env.Root); !slices.Equal(got, want) {
				t.Fatalf("quarantined %v, want %v", got, want)
			}
			if got := namespacesOf(t, env); !slices.Equal(got, []string{`a={"p":"a"}`, `b={"p":"b"}`, `c={"p":"c"}`, `d={"p":"d"}`, `e={"p":"e"}`}) {
				t.Fatalf("namespaces after repair: %v", got)
			}
		})
	}
}

// Redis lost everything too: the catalog opens from the chain kept, and
// the report says which sequences are lost and what they held.
func TestRepairSaysWhatIsLostWhenRedisLostTheLog(t *testing.T) {
	env := nstest.New(t)
	damaged(t, env)
	env.Redis.FlushAll()
	rep, err := repairWith(t, env, env.Objects)
	if err != nil {
		t.Fatal(err)
	}
	if rep.LostFirst != rep.Seq+1 || rep.LostLast <= rep.Seq || rep.FromLog != 0 || len(rep.Unrecovered) != 1 ||
		!strings.Contains(rep.Unrecovered[0], "is lost") || !strings.Contains(rep.String(), "not recovered: catalog sequences") {
		t.Fatalf("report: %+v\n%s", rep, rep)
	}
	if got := namespacesOf(t, env); !slices.Equal(got, []string{`a={"p":"a"}`}) {
		t.Fatalf("namespaces after repair: %v", got)
	}
}

// While a server materializes the catalog, repair moves nothing.
func TestRepairRefusesToQuarantineUnderARunningServer(t *testing.T) {
	env := nstest.New(t)
	segs := damaged(t, env)
	// A server holds the lease (it would not open this catalog, but one
	// that opened before the damage would).
	if err := env.RDB.Set(context.Background(), "{"+env.Catalog+"}:mlease", "other", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := repairWith(t, env, env.Objects); err == nil || !strings.Contains(err.Error(), "stop every flightns serve") {
		t.Fatalf("repair under a server: %v", err)
	}
	for _, s := range segs {
		if _, err := os.Stat(s); err != nil {
			t.Fatalf("a segment moved: %v", err)
		}
	}
}
