package namespace

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/nserror"
)

// wantOverlap fails unless err refuses location loc for meeting another
// table's directory, naming no other object (loc aside, which the caller
// sent).
func wantOverlap(t *testing.T, what string, err error, loc string, hidden ...string) {
	t.Helper()
	wantCode(t, what, err, nserror.InvalidInput)
	if !strings.Contains(err.Error(), "overlaps the directory of another table") {
		t.Fatalf("%s: %v, want the overlap refusal", what, err)
	}
	msg := withoutEcho(err, loc)
	for _, h := range hidden {
		if strings.Contains(msg, h) {
			t.Fatalf("%s: the refusal names %q: %v", what, h, err)
		}
	}
}

// withoutEcho is err's message without the location it echoes (loc, or
// its key after `table location`), which the caller sent.
func withoutEcho(err error, loc string) string {
	msg := strings.Replace(err.Error(), strconv.Quote(loc), "LOC", 1)
	if i := strings.Index(msg, `table location "`); i >= 0 {
		if j := strings.Index(msg[i+16:], `"`); j >= 0 {
			msg = msg[:i] + msg[i+16+j+1:]
		}
	}
	return msg
}

// No table may be declared or registered at a location that equals,
// contains or lies inside another table's directory (the attack: a writer
// of namespace b declared b$evil inside a$t1's directory and got write
// credentials for a$t1's data); siblings whose names share a prefix are
// apart. On a directory and on MinIO.
func TestTableDirectoriesAreDisjoint(t *testing.T) {
	onEveryBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		e := newTenvOn(t, backend)
		s := e.s
		for _, ns := range []string{"a", "b"} {
			must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id(ns)}))
		}
		loc := e.withVersions(id("a", "t1"), 2)
		must(s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("a", "x"), Location: "shared/x"}))

		for _, bad := range []string{loc, loc + "/data", loc + "/data/deeper", "shared", "shared/x", "shared/x/y",
			e.s.root.uri(loc) + "/data", e.s.root.objectPath(loc + "/data")} {
			_, err := s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("b", "evil"), Location: bad})
			wantOverlap(t, "declare at "+bad, err, bad, "a$t1", "a$x")
			// (Registering refuses these too: most hold no Lance table.)
			_, err = s.RegisterTable(ctx, api.RegisterTableRequest{ID: id("b", "evil"), Location: bad})
			wantCode(t, "register at "+bad, err, nserror.InvalidInput)
			if msg := withoutEcho(err, bad); strings.Contains(msg, "a$t1") || strings.Contains(msg, "a$x") {
				t.Fatalf("register at %s: the refusal names another table: %v", bad, err)
			}
		}
		// Register the very directory of a$t1 (it holds a Lance table):
		// refused, naming no owner.
		_, err := s.RegisterTable(ctx, api.RegisterTableRequest{ID: id("b", "evil"), Location: loc})
		wantOverlap(t, "register a$t1's directory", err, loc, "a$t1")
		// In one batch too.
		_, err = s.BatchCommitTables(ctx, api.BatchCommitTablesRequest{Operations: []api.CommitTableOperation{
			{DeclareTable: &api.DeclareTableRequest{ID: id("b", "evil"), Location: loc + "/data"}}}})
		wantOverlap(t, "batch declare inside a$t1", err, loc+"/data", "a$t1")
		_, err = s.BatchCommitTables(ctx, api.BatchCommitTablesRequest{Operations: []api.CommitTableOperation{
			{DeclareTable: &api.DeclareTableRequest{ID: id("b", "p"), Location: "p"}},
			{DeclareTable: &api.DeclareTableRequest{ID: id("b", "q"), Location: "p/q"}}}})
		wantCode(t, "a batch declaring nested tables", err, nserror.InvalidInput)

		// Siblings that share a prefix are apart, and nothing was made.
		must(s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("b", "x1"), Location: "shared/x1"}))
		must(s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("b", "t10"), Location: loc + "0"}))
		if _, err := s.DescribeTable(ctx, api.DescribeTableRequest{ID: id("b", "evil")}); nserror.CodeOf(err) != nserror.TableNotFound {
			t.Fatalf("b$evil after the refusals: %v", err)
		}
		// An overwrite may not move a table into another's directory.
		_, err = s.RegisterTable(ctx, api.RegisterTableRequest{ID: id("b", "x1"), Location: loc, Mode: api.ModeOverwrite})
		wantOverlap(t, "overwrite onto a$t1", err, loc, "a$t1")
	})
}

// Two declarations racing for nested directories never both win.
func TestNestedDeclarationsRaceOneWins(t *testing.T) {
	e := newTenv(t)
	ctx := context.Background()
	must(e.s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("a")}))
	second := e.open() // another server of the catalog
	for i := range 20 {
		outer, inner := "r"+string(rune('a'+i)), "r"+string(rune('a'+i))+"/in"
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for j, s := range []*Service{e.s, second} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l := []string{outer, inner}[j]
				_, errs[j] = s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("a", l[:2]+string(rune('0'+j))), Location: l})
			}()
		}
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("round %d: outer %v, inner %v: want exactly one to win", i, errs[0], errs[1])
		}
	}
}

// A drop kept for undrop keeps its directory: nobody may declare or
// register it (or inside it) meanwhile, not even in a namespace the
// dropped table's readers cannot see; undrop brings the table back, and a
// purge frees the directory.
func TestAKeptDropsDirectoryComesBackOnlyThroughUndrop(t *testing.T) {
	e := newTenv(t)
	ctx := context.Background()
	s := e.withRetention(time.Hour)
	for _, ns := range []string{"c", "b"} {
		must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id(ns)}))
	}
	loc := e.withVersions(id("c", "secret"), 2)
	must(s.DropTable(ctx, api.DropTableRequest{ID: id("c", "secret")}))

	_, err := s.RegisterTable(ctx, api.RegisterTableRequest{ID: id("b", "mine"), Location: loc})
	wantOverlap(t, "register a kept drop's directory", err, loc, "c$secret")
	_, err = s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("b", "mine"), Location: loc + "/x"})
	wantOverlap(t, "declare inside a kept drop's directory", err, loc+"/x", "c$secret")

	must(s.Drops().UndropTable(ctx, api.UndropTableRequest{ID: id("c", "secret")}))
	if got := e.final(loc, 2); got != "mm" {
		t.Fatalf("version 2 after undrop: %q", got)
	}
	// Dropped again and purged: the directory is free again.
	must(s.DropTable(ctx, api.DropTableRequest{ID: id("c", "secret")}))
	rep := must(s.Drops().PurgeTrash(ctx, time.Now().Add(time.Hour), false))
	if rep.Locations != 1 || e.final(loc, 2) != "" {
		t.Fatalf("purge: %+v, version 2 %q", rep, e.final(loc, 2))
	}
	must(s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("b", "mine"), Location: loc}))
}

// A deregistered table's directory is nobody's: registering it again (or
// declaring a table on its data) needs the write role on the whole
// catalog; a principal whose grants stop at a namespace is refused, and
// may still declare a table at an empty location of its choosing.
func TestDataNoTableOwnsNeedsTheCatalogsWriteRole(t *testing.T) {
	e := newTenv(t)
	bg := context.Background()
	for _, ns := range []string{"a", "b"} {
		must(e.s.CreateNamespace(bg, api.CreateNamespaceRequest{ID: id(ns)}))
	}
	loc := e.withVersions(id("a", "t"), 1)
	must(e.s.DeregisterTable(bg, api.DeregisterTableRequest{ID: id("a", "t")}))
	must(0, e.s.Access().Grant(bg, auth.Grant{Namespace: []string{"b"}, Principal: "bo", Role: auth.Write}))
	bo := auth.WithPrincipal(bg, auth.Principal{Name: "bo", Role: auth.None})
	writer := auth.WithPrincipal(bg, auth.Principal{Name: "wes", Role: auth.Write})

	for _, name := range []string{"RegisterTable", "DeclareTable"} {
		_, err := op(bo, e.s, name, map[string]any{"id": []string{"b", "took"}, "location": loc})
		wantCode(t, "bo's "+name+" of a$t's data", err, nserror.PermissionDenied)
	}
	must(op(bo, e.s, "DeclareTable", map[string]any{"id": []string{"b", "fresh"}, "location": "bo-fresh"}))
	// bo's own table's data is its own: registering the table again at its
	// own location (overwrite) is allowed.
	own := e.withVersions(id("b", "own"), 1)
	must(op(bo, e.s, "RegisterTable", map[string]any{"id": []string{"b", "own"}, "location": own, "mode": api.ModeOverwrite}))
	must(op(writer, e.s, "RegisterTable", map[string]any{"id": []string{"b", "took"}, "location": loc}))
	if d := must(e.s.DescribeTable(bg, api.DescribeTableRequest{ID: id("b", "took")})); d.Version == nil || *d.Version != 1 {
		t.Fatalf("the registered table: %+v", d)
	}
}

// A table nested in another's directory by a catalog written before the
// rule (reservations cleared to let it in) loses nothing to a drop of
// either: the inner table's drop deletes nothing of the outer's, the
// outer's spares the inner directory; drops never reach a sibling whose
// name only shares a prefix.
func TestDropsNeverDeleteAnotherTablesFiles(t *testing.T) {
	onEveryBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		e := newTenvOn(t, backend)
		s := e.s
		must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("a")}))
		must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("b")}))
		outer := e.withVersions(id("a", "t1"), 1)
		sibling := e.withVersionsAt(id("a", "t10"), outer+"0", 1)
		// The old catalog let b$evil in at a$t1's data directory.
		if err := e.rdb.ZRem(ctx, string(s.k.Locs()), outer).Err(); err != nil {
			t.Fatal(err)
		}
		inner := e.withVersionsAt(id("b", "evil"), outer+"/data", 1)
		if err := e.rdb.ZAdd(ctx, string(s.k.Locs()), zmember(outer)).Err(); err != nil {
			t.Fatal(err)
		}
		if err := e.objs.Put(ctx, outer+"/data/part-0.lance", []byte("a's rows")); err != nil {
			t.Fatal(err)
		}

		must(s.DropTable(ctx, api.DropTableRequest{ID: id("b", "evil")}))
		if !e.exists(outer+"/data/part-0.lance") || e.final(inner, 1) == "" {
			t.Fatal("dropping the nested table deleted files of the table holding it")
		}
		if ds := must(DroppedTables(ctx, e.objs)); len(ds) != 0 {
			t.Fatalf("a drop that deleted nothing left tombstones %+v", ds)
		}
		// Nested again, and the outer one dropped: the inner directory stays.
		if err := e.rdb.ZRem(ctx, string(s.k.Locs()), outer).Err(); err != nil {
			t.Fatal(err)
		}
		must(s.RegisterTable(ctx, api.RegisterTableRequest{ID: id("b", "evil"), Location: inner}))
		if err := e.rdb.ZAdd(ctx, string(s.k.Locs()), zmember(outer)).Err(); err != nil {
			t.Fatal(err)
		}
		must(s.DropTable(ctx, api.DropTableRequest{ID: id("a", "t1")}))
		if e.final(outer, 1) != "" {
			t.Fatal("the outer table's own manifest survived its drop")
		}
		if e.final(inner, 1) == "" || !e.exists(outer+"/data/part-0.lance") {
			t.Fatal("dropping the outer table deleted the nested table's files")
		}
		if e.final(sibling, 1) == "" {
			t.Fatal("dropping a$t1 deleted a$t10's files")
		}
	})
}

// A catalog whose Redis state predates reservations gets them at its
// next start; one that lost its Redis state gets them back by recovery,
// kept drops' directories included.
func TestReservationsComeBackAfterAnUpgradeAndALoss(t *testing.T) {
	e := newTenv(t)
	ctx := context.Background()
	s := e.withRetention(time.Hour)
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("a")}))
	live := e.withVersions(id("a", "live"), 1)
	kept := e.withVersions(id("a", "kept"), 1)
	must(s.DropTable(ctx, api.DropTableRequest{ID: id("a", "kept")}))
	refused := func(when string) {
		t.Helper()
		for _, l := range []string{live + "/x", kept + "/x"} {
			_, err := e.s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("a", "evil"), Location: l})
			wantOverlap(t, when+": declare at "+l, err, l)
		}
	}
	refused("before")

	if err := e.rdb.Del(ctx, string(s.k.Locs())).Err(); err != nil { // as before the upgrade
		t.Fatal(err)
	}
	e.withRetention(time.Hour)
	refused("after an upgrade")

	if err := e.rdb.FlushAll(ctx).Err(); err != nil { // Redis lost everything
		t.Fatal(err)
	}
	must(0, e.s.Recover(ctx))
	refused("after a recovery")
}

// Tags and branches whose ref file's name the store would refuse are
// InvalidInput up front (a 251-character tag was a 500).
func TestRefNamesFitTheStoresKeys(t *testing.T) {
	e := newTenv(t)
	ctx := context.Background()
	must(e.s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("a")}))
	tid := id("a", "t")
	e.withVersions(tid, 1)
	must(e.s.Branches().CreateTableTag(ctx, api.CreateTableTagRequest{ID: tid, Tag: strings.Repeat("t", 250), Version: 1}))
	for _, n := range []int{251, 300} {
		_, err := e.s.Branches().CreateTableTag(ctx, api.CreateTableTagRequest{ID: tid, Tag: strings.Repeat("t", n), Version: 1})
		wantCode(t, "a tag of "+string(rune('0'+n/100))+"xx bytes", err, nserror.InvalidInput)
	}
	// 100 segments of one letter: 199 characters, 397 bytes as a file name.
	long := strings.TrimSuffix(strings.Repeat("b/", 100), "/")
	_, err := e.s.Branches().CreateTableBranch(ctx, api.CreateTableBranchRequest{ID: tid, Name: long})
	wantCode(t, "a branch whose ref file name is too long", err, nserror.InvalidInput)
	// A name of 200 bytes of letters is one Lance takes.
	if err := checkNewBranchName(strings.Repeat("é", 100)); err != nil {
		t.Fatal(err)
	}
}

// withVersionsAt is withVersions at a given location.
func (e *tenv) withVersionsAt(tid api.ID, loc string, n int) string {
	e.t.Helper()
	ctx := context.Background()
	must(e.s.DeclareTable(ctx, api.DeclareTableRequest{ID: tid, Location: loc}))
	for v := 1; v <= n; v++ {
		must(e.s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: tid, Version: int64(v), ManifestPath: e.stage(loc, uint64(v), strings.Repeat("m", v))}))
	}
	return loc
}

// zmember is a member of the reservations' sorted set.
func zmember(loc string) redis.Z { return redis.Z{Member: loc} }
