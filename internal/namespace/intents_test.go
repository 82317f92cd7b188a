package namespace

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/redisclaim"
)

// errCrash stands for a crash at a seam.
var errCrash = errors.New("crashed here (test)")

// A change made in storage has its event exactly when it is made, across
// a crash at each of its seams: before the change (no event, and the
// maintainer drops the intent) and after it (the maintainer finds the
// change in storage and appends the event, once). An intent younger than
// the grace is left to its maker.
func TestChangesInStorageHaveTheirEventsExactlyOnceAcrossACrash(t *testing.T) {
	onEveryBackend(t, changesInStorageAcrossACrash)
}

func changesInStorageAcrossACrash(t *testing.T, backend string) {
	e := newTenvOn(t, backend)
	ctx := context.Background()
	var mu sync.Mutex
	crashAt := redisclaim.Step("")
	s, err := Open(ctx, Config{Objects: e.objs, Redis: e.rdb, Catalog: e.catalog, Logger: quiet,
		Table: manifesttable.Config{Engine: sqlengine.Config{MemoryLimit: "1GB"}},
		Claims: redisclaim.Config{Step: func(_ context.Context, st redisclaim.Step, _ string, _ uint64) error {
			mu.Lock()
			defer mu.Unlock()
			if st == crashAt {
				crashAt = ""
				return errCrash
			}
			return nil
		}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	crash := func(st redisclaim.Step) { mu.Lock(); crashAt = st; mu.Unlock() }
	root := auth.WithPrincipal(ctx, auth.Principal{Name: "root", Role: auth.Admin})
	must(s.CreateNamespace(root, api.CreateNamespaceRequest{ID: id("a")}))
	tid := id("a", "t")
	loc := e.withVersions(tid, 2)
	tagKey := lancemanifest.Dir(loc).Tag("gold")

	// count is how many events of typ the feed holds.
	count := func(typ string) int {
		t.Helper()
		n := 0
		must(0, s.FollowChanges(ctx, api.ChangesRequest{Follow: new(false)}, func(b *ChangeBatch) error {
			for _, ev := range b.Events {
				if ev.Type == typ {
					n++
				}
			}
			return nil
		}))
		return n
	}
	resolve := func(wantMade, wantNot int) {
		t.Helper()
		if made, not, err := s.ResolveIntents(ctx, time.Hour); err != nil || made+not != 0 {
			t.Fatalf("resolving young intents: %d made, %d not, %v; want them left to their maker", made, not, err)
		}
		made, not, err := s.ResolveIntents(ctx, 0)
		if err != nil || made != wantMade || not != wantNot {
			t.Fatalf("resolved %d made, %d not made (%v), want %d and %d", made, not, err, wantMade, wantNot)
		}
		if made, not, err := s.ResolveIntents(ctx, 0); err != nil || made+not != 0 {
			t.Fatalf("resolving again: %d made, %d not, %v", made, not, err)
		}
	}
	exists := func(key string) bool {
		_, err := e.objs.Head(ctx, key)
		return err == nil
	}
	tagAt := func(v int64) error {
		_, err := s.Branches().CreateTableTag(root, api.CreateTableTagRequest{ID: tid, Tag: "gold", Version: v})
		return err
	}
	updateTo := func(v int64) error {
		_, err := s.Branches().UpdateTableTag(root, api.CreateTableTagRequest{ID: tid, Tag: "gold", Version: v})
		return err
	}
	deleteTag := func() error {
		_, err := s.Branches().DeleteTableTag(root, api.DeleteTableTagRequest{ID: tid, Tag: "gold"})
		return err
	}
	grant := func(role auth.Role) error {
		return s.Access().Grant(root, auth.Grant{Namespace: []string{"a"}, Principal: "ana", Role: role})
	}
	anaReads := func() bool {
		gs, _, err := s.grantsNow(ctx)
		return err == nil && gs.RoleOn(auth.Principal{Name: "ana"}, id("a")) >= auth.Read
	}

	for _, c := range []struct {
		name   string
		step   redisclaim.Step
		change func() error
		typ    string
		made   func() bool // what storage shows after the crash
		want   bool        // whether the change was made
	}{
		{"tag created, crash before", StepIntended, func() error { return tagAt(1) }, api.EventTagCreated, func() bool { return exists(tagKey) }, false},
		{"tag created, crash after", StepChangedInStorage, func() error { return tagAt(1) }, api.EventTagCreated, func() bool { return exists(tagKey) }, true},
		{"tag updated, crash after", StepChangedInStorage, func() error { return updateTo(2) }, api.EventTagUpdated, func() bool {
			r := must(s.Branches().GetTableTagVersion(ctx, api.GetTableTagVersionRequest{ID: tid, Tag: "gold"}))
			return r.Version == 2
		}, true},
		{"tag deleted, crash before", StepIntended, deleteTag, api.EventTagDeleted, func() bool { return !exists(tagKey) }, false},
		{"tag deleted, crash after", StepChangedInStorage, deleteTag, api.EventTagDeleted, func() bool { return !exists(tagKey) }, true},
		{"grant, crash before", StepIntended, func() error { return grant(auth.Read) }, api.EventGrantCreated, anaReads, false},
		{"grant, crash after", StepChangedInStorage, func() error { return grant(auth.Read) }, api.EventGrantCreated, anaReads, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := count(c.typ)
			crash(c.step)
			if err := c.change(); !errors.Is(err, errCrash) {
				t.Fatalf("the change: %v, want the crash", err)
			}
			if got := c.made(); got != c.want {
				t.Fatalf("made in storage: %v, want %v", got, c.want)
			}
			if n := count(c.typ); n != before {
				t.Fatalf("%d %s events after the crash, want %d (none yet)", n, c.typ, before)
			}
			if c.want {
				resolve(1, 0)
			} else {
				resolve(0, 1)
			}
			want := before
			if c.want {
				want++
			}
			if n := count(c.typ); n != want {
				t.Fatalf("%d %s events after resolving, want %d", n, c.typ, want)
			}
		})
	}

	// Without a crash each change settles its own intent: nothing is left
	// to resolve, and each has its event once.
	before := [3]int{count(api.EventTagCreated), count(api.EventTagDeleted), count(api.EventGrantDeleted)}
	must(0, tagAt(1))
	must(0, deleteTag())
	must(0, grant(auth.None))
	resolve(0, 0)
	after := [3]int{count(api.EventTagCreated), count(api.EventTagDeleted), count(api.EventGrantDeleted)}
	if after != [3]int{before[0] + 1, before[1] + 1, before[2] + 1} {
		t.Fatalf("events before %v, after %v", before, after)
	}
	// A refused change (the tag exists) drops its intent: no event.
	must(0, tagAt(1))
	if err := tagAt(2); err == nil || !strings.Contains(err.Error(), "already has a tag") {
		t.Fatalf("a second tag of one name: %v", err)
	}
	resolve(0, 0)
	if n := count(api.EventTagCreated); n != before[0]+2 {
		t.Fatalf("%d tag.created events, want %d", n, before[0]+2)
	}
}
