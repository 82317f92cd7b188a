package namespace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/nserror"
)

// Every committed change is an event of the change feed, in catalog
// sequence order, with its principal and time; a refused change has none;
// the history is read back from the segments in storage, by a service
// opened again too, and resumes after any sequence without a gap or a
// repeat.
func TestEveryCommittedChangeIsAnEventAndNothingElseIs(t *testing.T) {
	e := newTenv(t)
	ana := auth.WithPrincipal(context.Background(), auth.Principal{Name: "ana", Role: auth.Admin})
	must(e.s.CreateNamespace(ana, api.CreateNamespaceRequest{ID: id("a")}))
	if _, err := e.s.CreateNamespace(ana, api.CreateNamespaceRequest{ID: id("a")}); nserror.CodeOf(err) != nserror.NamespaceAlreadyExists {
		t.Fatalf("a second create: %v", err)
	}
	must(e.s.DeclareTable(ana, api.DeclareTableRequest{ID: id("a", "t")}))
	loc := e.locOf(id("a", "t"))
	must(e.s.Versions().CreateTableVersion(ana, api.CreateTableVersionRequest{ID: id("a", "t"), Version: 1, ManifestPath: e.stage(loc, 1, "m1")}))
	if _, err := e.s.Versions().CreateTableVersion(ana, api.CreateTableVersionRequest{ID: id("a", "t"), Version: 1, ManifestPath: e.stage(loc, 1, "m1'")}); nserror.CodeOf(err) != nserror.ConcurrentModification {
		t.Fatalf("version 1 again: %v", err)
	}
	must(e.s.RenameTable(ana, api.RenameTableRequest{ID: id("a", "t"), NewTableName: "u"}))
	must(e.s.Versions().BatchDeleteTableVersions(ana, api.BatchDeleteTableVersionsRequest{ID: id("a", "u"), Ranges: []api.VersionRange{{StartVersion: 1, EndVersion: 2}}}))
	must(e.s.DropTable(ana, api.DropTableRequest{ID: id("a", "u")}))
	must(e.s.DropNamespace(ana, api.DropNamespaceRequest{ID: id("a")}))

	want := []string{
		"namespace.created a ana",
		"table.declared a$t ana",
		"table.version.created a$t ana v1",
		"table.renamed a$u ana from a$t",
		"table.versions.deleted a$u  [1]",
		"table.dropped a$u ana",
		"namespace.dropped a ana",
	}
	evs := e.events(t, 0, len(want))
	if got := describe(evs); !slices.Equal(got, want) {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i, ev := range evs {
		if ev.Time.IsZero() || time.Since(ev.Time) > time.Minute || i > 0 && ev.Seq <= evs[i-1].Seq {
			t.Errorf("event %d: seq %d (before: %d), time %v", i, ev.Seq, evs[max(i-1, 0)].Seq, ev.Time)
		}
	}
	if evs[2].ManifestPath == "" || evs[2].ManifestSize != 2 || evs[1].Location != loc {
		t.Errorf("version event %+v, declared %+v", evs[2], evs[1])
	}
	// Resuming after any event gives exactly the rest.
	for i := range evs {
		if got := describe(e.events(t, evs[i].Seq, len(evs)-i-1)); !slices.Equal(got, want[i+1:]) {
			t.Errorf("after seq %d: %q, want %q", evs[i].Seq, got, want[i+1:])
		}
	}
	// Another service over the same storage reads the same history.
	e.s = e.open()
	if got := describe(e.events(t, 0, len(want))); !slices.Equal(got, want) {
		t.Fatalf("another service reads %q", got)
	}
}

// events reads the change feed's history after seq until it holds n
// events (versions become durable a moment after their answer).
func (e *tenv) events(t *testing.T, after uint64, n int) []api.Event {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		evs, _, err := e.s.table.Events(context.Background(), after, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) >= n || time.Now().After(deadline) {
			return evs
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// describe renders events as "type id principal[ from id][ vN][ versions]".
func describe(evs []api.Event) []string {
	var out []string
	for _, ev := range evs {
		s := ev.Type + " " + ev.ID.String() + " " + ev.Principal
		if ev.From != nil {
			s += " from " + ev.From.String()
		}
		if ev.Version > 0 {
			s += " v" + strconv.FormatUint(ev.Version, 10)
		}
		if ev.Versions != nil {
			s += " " + strings.ReplaceAll(fmt.Sprint(ev.Versions), " ", ",")
		}
		out = append(out, s)
	}
	return out
}

// A multi-table transaction is one group of events: one sequence, its
// transaction id on every event.
func TestATransactionIsOneGroupOfEvents(t *testing.T) {
	e := newTenv(t)
	ctx := context.Background()
	loc0 := e.withVersions(id("t0"), 2)
	e.withVersions(id("t2"), 1)
	before := e.events(t, 0, 5)
	resp := must(e.s.BatchCommitTables(ctx, api.BatchCommitTablesRequest{Operations: []api.CommitTableOperation{
		{DeclareTable: &api.DeclareTableRequest{ID: id("t1"), Location: "t1dir"}},
		{CreateTableVersion: &api.CreateTableVersionRequest{ID: id("t1"), Version: 1, ManifestPath: e.stage("t1dir", 1, "t1v1")}},
		{CreateTableVersion: &api.CreateTableVersionRequest{ID: id("t0"), Version: 3, ManifestPath: e.stage(loc0, 3, "t0v3")}},
		{DeleteTableVersions: &api.BatchDeleteTableVersionsRequest{ID: id("t0"), Ranges: []api.VersionRange{{StartVersion: 1, EndVersion: 2}}}},
		{DeregisterTable: &api.DeregisterTableRequest{ID: id("t2")}},
	}}))
	evs := e.events(t, before[len(before)-1].Seq, 5)
	want := []string{"table.declared t1 ", "table.versions.deleted t0  [1]", "table.deregistered t2 ", "table.version.created t1  v1", "table.version.created t0  v3"}
	got := describe(evs)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("the transaction's events: %q, want %q", got, want)
	}
	for _, ev := range evs {
		if ev.TxnID != resp.TransactionID {
			t.Errorf("%s: transaction %q, want %q", ev.Type, ev.TxnID, resp.TransactionID)
		}
	}
}

// A follower gets the history and then every change as it becomes
// durable, in order, with no gap and no repeat, whether it starts before
// the changes or in the middle of them.
func TestAFollowerGetsEveryChangeAsItHappens(t *testing.T) {
	e := newTenv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	must(e.s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("a")}))
	type got struct {
		mu     sync.Mutex
		events []api.Event
		last   uint64
	}
	follow := func(after uint64) *got {
		g := &got{last: after}
		go func() {
			_ = e.s.table.Follow(ctx, after, func(evs []api.Event, through uint64) error {
				g.mu.Lock()
				defer g.mu.Unlock()
				for i, ev := range evs {
					if ev.Seq <= g.last || ev.Seq > through || i > 0 && ev.Seq < evs[i-1].Seq {
						t.Errorf("event at %d in a call after %d through %d", ev.Seq, g.last, through)
					}
				}
				g.events = append(g.events, evs...)
				if through < g.last {
					t.Errorf("through went back: %d after %d", through, g.last)
				}
				g.last = through
				return nil
			})
		}()
		return g
	}
	first := follow(0)
	for i := range 20 {
		must(e.s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("a", "t"+strconv.Itoa(i))}))
	}
	history := e.events(t, 0, 21)
	middle := follow(history[10].Seq)
	for i := range 5 {
		must(e.s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("a", "u"+strconv.Itoa(i))}))
	}
	all := e.events(t, 0, 26)
	wait := func(g *got, want []api.Event) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			g.mu.Lock()
			evs := slices.Clone(g.events)
			g.mu.Unlock()
			if len(evs) >= len(want) || time.Now().After(deadline) {
				if got, w := describe(evs), describe(want); !slices.Equal(got, w) {
					t.Fatalf("followed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(w, "\n"))
				}
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	wait(first, all)
	wait(middle, all[11:])
}

// A subscriber sees only the events of objects it may read, and a filter
// narrows that, never widens it: ana reads namespace a only; a rename
// out of b into a shows ana the new name without the old one.
func TestASubscriberSeesOnlyWhatItMayRead(t *testing.T) {
	e := newTenv(t)
	bg := context.Background()
	admin := auth.WithPrincipal(bg, auth.Principal{Name: "root", Role: auth.Admin})
	ana := auth.WithPrincipal(bg, auth.Principal{Name: "ana", Role: auth.None})
	for _, ns := range []string{"a", "b"} {
		must(e.s.CreateNamespace(admin, api.CreateNamespaceRequest{ID: id(ns)}))
	}
	must(0, e.s.Access().Grant(bg, auth.Grant{Namespace: []string{"a"}, Principal: "ana", Role: auth.Read}))
	e.withVersions(id("a", "t"), 1)
	e.withVersions(id("b", "t"), 1)
	must(e.s.RenameTable(admin, api.RenameTableRequest{ID: id("b", "t"), NewTableName: "moved", NewNamespaceID: ptr(id("a"))}))
	all := e.events(t, 0, 8) // the grant's is for admins alone

	seen := func(ctx context.Context, req api.ChangesRequest) []string {
		t.Helper()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var out []api.Event
		err := e.s.FollowChanges(ctx, req, func(b *ChangeBatch) error {
			out = append(out, b.Events...)
			if b.Through >= all[len(all)-1].Seq {
				cancel()
			}
			return nil
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		return describe(out)
	}
	if got := seen(admin, api.ChangesRequest{}); !slices.Equal(got, describe(all)) {
		t.Fatalf("the admin sees %q, want %q", got, describe(all))
	}
	want := []string{"namespace.created a root", "table.declared a$t ", "table.version.created a$t  v1", "table.renamed a$moved root"}
	if got := seen(ana, api.ChangesRequest{}); !slices.Equal(got, want) {
		t.Fatalf("ana sees %q, want %q", got, want)
	}
	if got := seen(ana, api.ChangesRequest{Table: id("b", "t")}); len(got) != 0 {
		t.Fatalf("a filter on b$t shows ana %q", got)
	}
	if got := seen(ana, api.ChangesRequest{Types: []string{api.EventVersionCreated}}); !slices.Equal(got, want[2:3]) {
		t.Fatalf("ana's versions: %q", got)
	}
	if got := seen(admin, api.ChangesRequest{Namespace: id("b")}); !slices.Equal(got, []string{"namespace.created b root", "table.declared b$t ", "table.version.created b$t  v1"}) {
		t.Fatalf("the admin's b: %q", got)
	}
}

// Tags, grants and a namespace's new properties are events too, made by
// whoever made them; a grant's only for an admin of its namespace; what
// changes nothing (a revocation of nothing) is none.
func TestTagsGrantsAndPropertiesAreEvents(t *testing.T) {
	e := newTenv(t)
	bg := context.Background()
	root := auth.WithPrincipal(bg, auth.Principal{Name: "root", Role: auth.Admin})
	must(e.s.CreateNamespace(root, api.CreateNamespaceRequest{ID: id("a")}))
	must(e.s.CreateNamespace(root, api.CreateNamespaceRequest{ID: id("a"), Mode: api.ModeOverwrite, Properties: api.Properties{"owner": "ana"}}))
	e.withVersions(id("a", "t"), 2)
	must(e.s.Branches().CreateTableTag(root, api.CreateTableTagRequest{ID: id("a", "t"), Tag: "gold", Version: 1}))
	must(e.s.Branches().UpdateTableTag(root, api.CreateTableTagRequest{ID: id("a", "t"), Tag: "gold", Version: 2}))
	must(e.s.Branches().DeleteTableTag(root, api.DeleteTableTagRequest{ID: id("a", "t"), Tag: "gold"}))
	must(0, e.s.Access().Grant(root, auth.Grant{Namespace: []string{"a"}, Principal: "ana", Role: auth.Read}))
	must(0, e.s.Access().Grant(root, auth.Grant{Namespace: []string{"a"}, Principal: "ana", Role: auth.Read})) // no change
	must(0, e.s.Access().Revoke(root, auth.Grant{Namespace: []string{"a"}, Principal: "ana"}))
	must(0, e.s.Access().Revoke(root, auth.Grant{Namespace: []string{"a"}, Principal: "ana"})) // nothing to take
	must(0, e.s.Access().Grant(root, auth.Grant{Namespace: []string{"a"}, Group: "eng", Role: auth.Write}))
	must(e.s.CreateNamespace(root, api.CreateNamespaceRequest{ID: id("end")}))

	evs := e.events(t, 0, 12)
	var got []string
	for _, ev := range evs {
		got = append(got, fmt.Sprintf("%s %s %s tag=%s v%d grantee=%s group=%s role=%s props=%v", ev.Type, ev.ID, ev.Principal, ev.Tag, ev.Version, ev.Grantee, ev.Group, ev.Role, ev.Properties))
	}
	want := []string{
		"namespace.created a root tag= v0 grantee= group= role= props=map[]",
		"namespace.updated a root tag= v0 grantee= group= role= props=map[owner:ana]",
		"table.declared a$t  tag= v0 grantee= group= role= props=map[]",
		"table.version.created a$t  tag= v1 grantee= group= role= props=map[]",
		"table.version.created a$t  tag= v2 grantee= group= role= props=map[]",
		"table.tag.created a$t root tag=gold v1 grantee= group= role= props=map[]",
		"table.tag.updated a$t root tag=gold v2 grantee= group= role= props=map[]",
		"table.tag.deleted a$t root tag=gold v2 grantee= group= role= props=map[]",
		"grant.created a root tag= v0 grantee=ana group= role=read props=map[]",
		"grant.deleted a root tag= v0 grantee=ana group= role= props=map[]",
		"grant.created a root tag= v0 grantee= group=eng role=write props=map[]",
		"namespace.created end root tag= v0 grantee= group= role= props=map[]",
	}
	if !slices.Equal(got[:len(want)], want) {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A reader of a, by a grant or by its role, sees its tags, not who
	// holds what there; an admin of a, by a grant, does.
	must(0, e.s.Access().Grant(root, auth.Grant{Namespace: []string{"a"}, Principal: "rita", Role: auth.Read}))
	must(0, e.s.Access().Grant(root, auth.Grant{Namespace: []string{"a"}, Principal: "ada", Role: auth.Admin}))
	last := e.events(t, 0, 14)[13].Seq
	grants := func(who auth.Principal) (n int) {
		t.Helper()
		ctx, cancel := context.WithCancel(auth.WithPrincipal(bg, who))
		defer cancel()
		var tags int
		err := e.s.FollowChanges(ctx, api.ChangesRequest{}, func(b *ChangeBatch) error {
			for _, ev := range b.Events {
				if strings.HasPrefix(ev.Type, "grant.") {
					n++
				}
				if ev.Type == api.EventTagCreated {
					tags++
				}
			}
			if b.Through >= last {
				cancel()
			}
			return nil
		})
		if !errors.Is(err, context.Canceled) || tags != 1 {
			t.Fatalf("%s: %d tags created, %v", who.Name, tags, err)
		}
		return n
	}
	for _, c := range []struct {
		who  auth.Principal
		want int
	}{{auth.Principal{Name: "rita"}, 0}, {auth.Principal{Name: "ron", Role: auth.Read}, 0}, {auth.Principal{Name: "ada"}, 5}, {auth.Principal{Name: "root", Role: auth.Admin}, 5}} {
		if got := grants(c.who); got != c.want {
			t.Errorf("%s sees %d events of grants, want %d", c.who.Name, got, c.want)
		}
	}
}

// Followers at one place that see the feed alike are handed one batch,
// and what a transport makes of it is made once; a different filter, or
// a viewer the grants matter for, gets a batch of its own, and so does
// the same viewer under a newer generation of the grants.
func TestFollowersAtOnePlaceShareABatch(t *testing.T) {
	e := newTenv(t)
	bg := context.Background()
	root := auth.WithPrincipal(bg, auth.Principal{Name: "root", Role: auth.Admin})
	ana := auth.WithPrincipal(bg, auth.Principal{Name: "ana", Role: auth.None})
	must(e.s.CreateNamespace(root, api.CreateNamespaceRequest{ID: id("a")}))
	must(0, e.s.Access().Grant(bg, auth.Grant{Namespace: []string{"a"}, Principal: "ana", Role: auth.Read}))
	must(e.s.CreateNamespace(root, api.CreateNamespaceRequest{ID: id("b")}))
	last := e.events(t, 0, 3)[2].Seq

	// first is the first batch a follower of req as who is handed.
	first := func(who context.Context, req api.ChangesRequest) *ChangeBatch {
		t.Helper()
		var b *ChangeBatch
		req.Follow = new(false)
		must(0, e.s.FollowChanges(who, req, func(got *ChangeBatch) error {
			if b == nil {
				b = got
			}
			return nil
		}))
		if b == nil || b.Through < last {
			t.Fatalf("first batch %+v, want one through %d", b, last)
		}
		return b
	}
	b1, b2 := first(root, api.ChangesRequest{}), first(root, api.ChangesRequest{})
	if b1 != b2 {
		t.Fatal("two admins at one place were handed two batches")
	}
	encodes := 0
	for range 3 {
		got, err := EncodedBatch(b1, "test", func(b *ChangeBatch) (int, error) { encodes++; return len(b.Events), nil })
		if err != nil || got != 3 {
			t.Fatalf("encoded %d, %v", got, err)
		}
	}
	if encodes != 1 {
		t.Fatalf("encoded %d times, want once", encodes)
	}
	// The events' JSON, shared by the transports, is each event's own.
	j1, err := EventsJSON(b1)
	if err != nil || len(j1) != len(b1.Events) {
		t.Fatalf("EventsJSON: %d of %d, %v", len(j1), len(b1.Events), err)
	}
	if j2, _ := EventsJSON(b2); &j2[0] != &j1[0] {
		t.Fatal("the events' JSON was made twice")
	}
	for i, ev := range b1.Events {
		if want, _ := json.Marshal(ev); !bytes.Equal(j1[i], want) {
			t.Fatalf("event %d's JSON %s, want %s", i, j1[i], want)
		}
	}

	types := first(root, api.ChangesRequest{Types: []string{api.EventNamespaceCreated}})
	a1, a2 := first(ana, api.ChangesRequest{}), first(ana, api.ChangesRequest{})
	if types == b1 || a1 == b1 || a1 != a2 {
		t.Fatal("a filter or a viewer the grants matter for shares another's batch, or one viewer's batches are not shared")
	}
	if got := describe(a1.Events); len(got) != 1 || !strings.HasPrefix(got[0], "namespace.created a ") {
		t.Fatalf("ana was handed %q", got)
	}
	must(0, e.s.Access().Grant(bg, auth.Grant{Namespace: []string{"b"}, Principal: "ana", Role: auth.Read}))
	if a3 := first(ana, api.ChangesRequest{}); a3 == a1 || len(a3.Events) < 2 {
		t.Fatalf("after a new grant ana was handed %q", describe(a3.Events))
	}
}

// One principal reads at most Config.FeedsPerPrincipal change feeds at
// once: the next is Throttling, before anything streams, while another
// principal's go on; a feed that ends gives its place back, and a feed a
// transport holds (HoldFeed) counts once. (Before, nothing bounded the
// feeds, each a connection, a goroutine and a batch.)
func TestAPrincipalReadsABoundedNumberOfFeeds(t *testing.T) {
	e := newTenv(t)
	bg := context.Background()
	ana := auth.WithPrincipal(bg, auth.Principal{Name: "ana", Role: auth.Read})
	bo := auth.WithPrincipal(bg, auth.Principal{Name: "bo", Role: auth.Read})
	var releases []func()
	for range DefaultFeedsPerPrincipal {
		_, release, err := e.s.HoldFeed(ana)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, release)
	}
	_, _, err := e.s.HoldFeed(ana)
	wantCode(t, "one feed more", err, nserror.Throttling)
	once := api.ChangesRequest{Follow: ptr(false)}
	wantCode(t, "a feed more", e.s.FollowChanges(ana, once, func(*ChangeBatch) error { return nil }), nserror.Throttling)
	must(0, e.s.FollowChanges(bo, once, func(*ChangeBatch) error { return nil }))
	releases[0]()
	releases[0]() // twice: counted back once
	held, release, err := e.s.HoldFeed(ana)
	if err != nil {
		t.Fatalf("a feed after one ended: %v", err)
	}
	must(0, e.s.FollowChanges(held, once, func(*ChangeBatch) error { return nil }))
	_, _, err = e.s.HoldFeed(ana)
	wantCode(t, "one feed more, again", err, nserror.Throttling)
	release()
	for _, r := range releases[1:] {
		r()
	}
	if e.s.feeds.n["ana"] != 0 || len(e.s.feeds.n) != 0 {
		t.Fatalf("feeds counted after every one ended: %v", e.s.feeds.n)
	}
}
