package namespace

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// withRetention reopens e's catalog with drops kept for d.
func (e *tenv) withRetention(d time.Duration) *Service {
	e.t.Helper()
	_ = e.s.Close()
	s, err := Open(context.Background(), Config{Objects: e.objs, Redis: e.rdb, Catalog: e.catalog, Logger: quiet, DropRetention: d, Table: manifesttable.Config{Engine: sqlengine.Config{MemoryLimit: "1GB"}}})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = s.Close() })
	e.s = s
	return s
}

func (e *tenv) exists(key string) bool {
	e.t.Helper()
	_, err := e.objs.Head(context.Background(), key)
	if errors.Is(err, objstore.ErrNotFound) {
		return false
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return true
}

func (e *tenv) trash() []Trash {
	e.t.Helper()
	return must(ListTrash(context.Background(), e.objs))
}

// A dropped table comes back with its versions (main's and a branch's)
// and its tags: its directory was kept, and only the catalog forgot it.
// On a directory and on MinIO.
func TestUndropTableBringsBackVersionsBranchesAndTags(t *testing.T) {
	onEveryBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		e := newTenvOn(t, backend)
		s := e.withRetention(time.Hour)
		must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("a")}))
		tid := id("a", "t")
		loc := e.withVersions(tid, 3)
		must(s.Branches().CreateTableTag(ctx, api.CreateTableTagRequest{ID: tid, Tag: "gold", Version: 2}))
		dev := lancemanifest.Chain{Table: lancemanifest.Dir(loc), Branch: "dev"}.Key()
		must(s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: tid, Version: 4, Branch: "dev", ManifestPath: e.stage(dev, 4, "dev 4")}))

		must(s.DropTable(ctx, api.DropTableRequest{ID: tid}))
		wantCode(t, "describing a dropped table", s.TableExists(ctx, api.TableExistsRequest{ID: tid}), nserror.TableNotFound)
		if e.final(loc, 3) == "" {
			t.Fatal("the drop deleted the table's data despite the retention")
		}
		tr := e.trash()
		if len(tr) != 1 || !api.ID(tr[0].ID).Equal(tid) || tr[0].Type != "table" {
			t.Fatalf("trash: %+v", tr)
		}

		got := must(s.Drops().UndropTable(ctx, api.UndropTableRequest{ID: tid}))
		if got.DropID != tr[0].DropID || len(got.Tables) != 1 {
			t.Fatalf("undrop answered %+v", got)
		}
		vs := must(s.Versions().ListTableVersions(ctx, api.ListTableVersionsRequest{ID: tid}))
		if len(vs.Versions) != 3 {
			t.Fatalf("versions after undrop: %+v", vs.Versions)
		}
		if v := must(s.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: tid, Branch: "dev"})); v.Version.Version != 4 {
			t.Fatalf("dev's latest after undrop: %+v", v.Version)
		}
		if tag := must(s.Branches().GetTableTagVersion(ctx, api.GetTableTagVersionRequest{ID: tid, Tag: "gold"})); tag.Version != 2 {
			t.Fatalf("tag gold after undrop: %+v", tag)
		}
		// And it commits on: the chain goes on from storage's head.
		must(s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: tid, Version: 4, ManifestPath: e.stage(loc, 4, "mmmm")}))
		if len(e.trash()) != 0 {
			t.Fatal("the record of an undone drop stayed")
		}
		_, err := s.Drops().UndropTable(ctx, api.UndropTableRequest{ID: tid})
		wantCode(t, "undoing a drop twice", err, nserror.TableNotFound)
	})
}

// A namespace dropped with cascade comes back whole, or nothing of it
// does when an id of it was taken meanwhile.
func TestUndropNamespaceIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	s := e.withRetention(time.Hour)
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("a"), Properties: api.Properties{"owner": "ana"}}))
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("a", "b")}))
	locT := e.withVersions(id("a", "t"), 2)
	locU := e.withVersions(id("a", "b", "u"), 1)
	_, err := s.DropNamespace(ctx, api.DropNamespaceRequest{ID: id("a")})
	wantCode(t, "dropping a namespace that is not empty (restrict)", err, nserror.NamespaceNotEmpty)
	if len(e.trash()) != 0 {
		t.Fatal("a refused drop left a record")
	}
	must(s.DropNamespace(ctx, api.DropNamespaceRequest{ID: id("a"), Behavior: api.BehaviorCascade}))
	if e.final(locT, 2) == "" || e.final(locU, 1) == "" {
		t.Fatal("the cascade deleted data despite the retention")
	}

	// a$b$u taken meanwhile: nothing comes back.
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("a")}))
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("a", "b")}))
	_, err = s.Drops().UndropNamespace(ctx, api.UndropNamespaceRequest{ID: id("a")})
	wantCode(t, "undoing a drop whose namespace was created again", err, nserror.NamespaceAlreadyExists)
	wantCode(t, "a table of a refused undrop", s.TableExists(ctx, api.TableExistsRequest{ID: id("a", "t")}), nserror.TableNotFound)
	must(s.DropNamespace(ctx, api.DropNamespaceRequest{ID: id("a"), Behavior: api.BehaviorCascade}))
	if n := len(e.trash()); n != 2 {
		t.Fatalf("%d drop records, want 2", n)
	}

	// The older drop, by its id: the newer one (empty a) stays.
	old := e.trash()[0].DropID
	got := must(s.Drops().UndropNamespace(ctx, api.UndropNamespaceRequest{ID: id("a"), DropID: old}))
	if len(got.Namespaces) != 2 || len(got.Tables) != 2 {
		t.Fatalf("undrop answered %+v", got)
	}
	if d := must(s.DescribeNamespace(ctx, api.DescribeNamespaceRequest{ID: id("a")})); d.Properties["owner"] != "ana" {
		t.Fatalf("properties after undrop: %v", d.Properties)
	}
	if vs := must(s.Versions().ListTableVersions(ctx, api.ListTableVersionsRequest{ID: id("a", "b", "u")})); len(vs.Versions) != 1 {
		t.Fatalf("versions of a$b$u after undrop: %+v", vs.Versions)
	}
	_, err = s.Drops().UndropNamespace(ctx, api.UndropNamespaceRequest{ID: id("a")})
	wantCode(t, "undoing the newer drop while a exists", err, nserror.NamespaceAlreadyExists)
}

// Ids, drop ids and roles from outside are checked before anything is
// read; a reader cannot undrop.
func TestUndropRefusesHostileInput(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	s := e.withRetention(time.Hour)
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("a")}))
	e.withVersions(id("a", "t"), 1)
	e.withVersions(id("a", "v"), 1)
	must(s.DropTable(ctx, api.DropTableRequest{ID: id("a", "t")}))
	drop := e.trash()[0].DropID
	for _, c := range []struct {
		what string
		req  api.UndropTableRequest
		code nserror.Code
	}{
		{"a drop id that is a path", api.UndropTableRequest{ID: id("a", "t"), DropID: "../../x"}, nserror.InvalidInput},
		{"an upper-case drop id", api.UndropTableRequest{ID: id("a", "t"), DropID: "0190AAAA-0000-7000-8000-000000000000"}, nserror.InvalidInput},
		{"a drop that never was", api.UndropTableRequest{ID: id("a", "t"), DropID: "0190aaaa-0000-7000-8000-000000000000"}, nserror.TableNotFound},
		{"another table's drop", api.UndropTableRequest{ID: id("a", "v"), DropID: drop}, nserror.TableNotFound},
		{"a table never dropped", api.UndropTableRequest{ID: id("a", "w")}, nserror.TableNotFound},
		{"the root", api.UndropTableRequest{ID: id()}, nserror.InvalidInput},
		{"an id with a control character", api.UndropTableRequest{ID: id("a", "t\x00")}, nserror.InvalidInput},
	} {
		_, err := s.Drops().UndropTable(ctx, c.req)
		wantCode(t, c.what, err, c.code)
	}
	_, err := s.Drops().UndropNamespace(ctx, api.UndropNamespaceRequest{ID: id("a"), DropID: drop})
	wantCode(t, "a table's drop undone as a namespace's", err, nserror.NamespaceNotFound)
	_, err = s.Drops().UndropNamespace(ctx, api.UndropNamespaceRequest{ID: id()})
	wantCode(t, "the root namespace", err, nserror.InvalidInput)

	reader := auth.WithPrincipal(ctx, auth.Principal{Name: "ana", Role: auth.Read})
	_, err = op(reader, s, "UndropTable", api.UndropTableRequest{ID: id("a", "t")})
	wantCode(t, "a reader undoing a drop", err, nserror.PermissionDenied)
	writer := auth.WithPrincipal(ctx, auth.Principal{Name: "bo", Role: auth.Write})
	if _, err := op(writer, s, "UndropTable", api.UndropTableRequest{ID: id("a", "t"), DropID: drop}); err != nil {
		t.Fatalf("a writer undoing a drop: %v", err)
	}
}

// gc purges a drop past the retention as a drop with retention 0
// deletes, and spares a younger one and a location a live table owns.
// On a directory and on MinIO.
func TestPurgeTrashDeletesOnlyPastTheRetention(t *testing.T) {
	onEveryBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		e := newTenvOn(t, backend)
		s := e.withRetention(time.Hour)
		must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("a")}))
		locT := e.withVersions(id("a", "t"), 2)
		locU := e.withVersions(id("a", "u"), 1)
		must(s.DropTable(ctx, api.DropTableRequest{ID: id("a", "t")}))
		must(s.DropTable(ctx, api.DropTableRequest{ID: id("a", "u")}))
		// u's directory comes back only through undrop; a catalog written
		// before that rule let it be registered again (its reservation gone):
		// then the record must not take its data.
		_, err := s.RegisterTable(ctx, api.RegisterTableRequest{ID: id("a", "u2"), Location: s.root.uri(locU)})
		wantOverlap(t, "registering a kept drop's directory", err, s.root.uri(locU))
		if err := e.rdb.ZRem(ctx, string(s.k.Locs()), locU).Err(); err != nil {
			t.Fatal(err)
		}
		must(s.RegisterTable(ctx, api.RegisterTableRequest{ID: id("a", "u2"), Location: s.root.uri(locU)}))

		rep := must(s.Drops().PurgeTrash(ctx, time.Now().Add(-time.Minute), false))
		if len(rep.Purged) != 0 || e.final(locT, 2) == "" {
			t.Fatalf("a purge within the retention: %+v", rep)
		}
		rep = must(s.Drops().PurgeTrash(ctx, time.Now().Add(time.Minute), true))
		if len(rep.Purged) != 2 || e.final(locT, 2) == "" || len(e.trash()) != 2 {
			t.Fatalf("a dry purge: %+v", rep)
		}
		rep = must(s.Drops().PurgeTrash(ctx, time.Now().Add(time.Minute), false))
		if len(rep.Purged) != 2 || rep.Locations != 1 || rep.Spared != 1 {
			t.Fatalf("purge: %+v", rep)
		}
		if e.final(locT, 1) != "" || e.exists(locT+"/_versions") {
			t.Fatal("the purge left a dropped table's data")
		}
		if e.final(locU, 1) == "" {
			t.Fatal("the purge deleted a live table's data")
		}
		if !e.exists(droppedKey(locT)) {
			t.Fatal("the purge wrote no tombstone for the location it deleted")
		}
		_, err = s.Drops().UndropTable(ctx, api.UndropTableRequest{ID: id("a", "t")})
		wantCode(t, "undoing a purged drop", err, nserror.TableNotFound)
	})
}

// Retention 0 is today's drop: the data goes at once, no record.
func TestDropWithoutRetentionDeletesAtOnce(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	must(e.s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("a")}))
	loc := e.withVersions(id("a", "t"), 1)
	must(e.s.DropTable(ctx, api.DropTableRequest{ID: id("a", "t")}))
	if e.final(loc, 1) != "" || len(e.trash()) != 0 {
		t.Fatal("a drop without retention kept its data or wrote a record")
	}
	_, err := e.s.Drops().UndropTable(ctx, api.UndropTableRequest{ID: id("a", "t")})
	wantCode(t, "undoing a drop without retention", err, nserror.TableNotFound)
}

// dropped queries the dropped view (as ctx's scope sees it), waiting up
// to a few seconds for it to read want: the view is refreshed off the
// commit path.
func droppedView(t *testing.T, ctx context.Context, s *Service, want string) {
	t.Helper()
	var got string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		res := must(s.Table().Query(ctx, `SELECT coalesce(string_agg(dropped_type || ' ' || dropped_id || ': ' || object_type || ' ' || object_id || ' ' || coalesce(location, ''), '; ' ORDER BY drop_id, object_id), '') FROM dropped`))
		got = ""
		for res.Next() {
			col := res.RecordBatch().Column(0).(interface{ Value(int) string })
			got = strings.Clone(col.Value(0))
		}
		res.Release()
		if got == want {
			return
		}
	}
	t.Fatalf("dropped view: %q, want %q", got, want)
}

// SQL shows what drops kept in a view of its own, and a request scoped
// to a subtree sees only the drops inside it.
func TestDroppedViewListsTheTrash(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	s := e.withRetention(time.Hour)
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("a")}))
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("b")}))
	locT := e.withVersions(id("a", "t"), 1)
	locU := e.withVersions(id("b", "u"), 1)
	droppedView(t, ctx, s, "")
	must(s.DropTable(ctx, api.DropTableRequest{ID: id("a", "t")}))
	must(s.DropNamespace(ctx, api.DropNamespaceRequest{ID: id("b"), Behavior: api.BehaviorCascade}))
	droppedView(t, ctx, s, "table a$t: table a$t "+locT+"; namespace b: namespace b ; namespace b: table b$u "+locU)
	scoped := sqlengine.WithScope(ctx, &sqlengine.Scope{Subtrees: []string{"a"}, Sep: "$"})
	droppedView(t, scoped, s, "table a$t: table a$t "+locT)
	must(s.Drops().UndropTable(ctx, api.UndropTableRequest{ID: id("a", "t")}))
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("c")})) // a catalog change: the view follows
	droppedView(t, ctx, s, "namespace b: namespace b ; namespace b: table b$u "+locU)
}

// droppedKept is a catalog that keeps drops for an hour, whose table a$t
// (two versions, in directory loc) was dropped.
func droppedKept(t *testing.T) (e *tenv, s *Service, loc string) {
	t.Helper()
	ctx := context.Background()
	e = newTenv(t)
	s = e.withRetention(time.Hour)
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("a")}))
	loc = e.withVersions(id("a", "t"), 2)
	must(s.DropTable(ctx, api.DropTableRequest{ID: id("a", "t")}))
	return e, s, loc
}

// A purge spares the directory of a drop still kept, even when an older
// record past the retention names the same directory (a record whose
// removal failed: an undrop that could not delete it, a crash). The kept
// drop then still comes back whole. (Before, the old record's purge
// deleted the directory the kept drop held.)
func TestAPurgeSparesWhatAKeptDropHolds(t *testing.T) {
	ctx := context.Background()
	e, s, loc := droppedKept(t)
	recs := e.trash()
	if len(recs) != 1 {
		t.Fatalf("records: %+v", recs)
	}
	stale := recs[0] // an older record of the same directory, left behind
	stale.DropID = uuid.Must(uuid.NewV7()).String()
	stale.DroppedAt = time.Now().Add(-3 * time.Hour)
	b := must(json.Marshal(stale))
	must(0, e.objs.Put(ctx, trashKey(stale.DropID), b))

	rep := must(s.Drops().PurgeTrash(ctx, time.Now().Add(-time.Hour), false))
	if len(rep.Purged) != 1 || rep.Purged[0] != stale.DropID || rep.Locations != 0 {
		t.Fatalf("purge: %+v", rep)
	}
	if e.final(loc, 2) == "" {
		t.Fatal("the purge of an old record deleted the directory a kept drop holds")
	}
	must(s.Drops().UndropTable(ctx, api.UndropTableRequest{ID: id("a", "t")}))
	if v := must(s.DescribeTable(ctx, api.DescribeTableRequest{ID: id("a", "t")})).Version; v == nil || *v != 2 {
		t.Fatalf("the undropped table's version: %v", v)
	}
}

// An undrop and a purge of the same drop never both go ahead: the purge
// marks the drop before it deletes, and an undrop that comes while the
// purge deletes is refused (ConcurrentModification); the table stays
// gone. (Before, the undrop brought the table back while the purge went
// on deleting its directory: a live table with its files gone.)
func TestAnUndropDuringAPurgeIsRefused(t *testing.T) {
	ctx := context.Background()
	e, s, loc := droppedKept(t)
	var once sync.Once
	var undropErr error
	faulty, err := objstore.OpenWith(ctx, e.objs.URI(), objstore.Options{Faults: func(_ context.Context, op objstore.Op, key string, p objstore.Phase) error {
		if op == objstore.OpDelete && p == objstore.Before && strings.HasPrefix(key, loc+"/") {
			once.Do(func() { _, undropErr = s.Drops().UndropTable(ctx, api.UndropTableRequest{ID: id("a", "t")}) })
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = faulty.Close() }()
	purger, err := Open(ctx, Config{Objects: faulty, Redis: e.rdb, Catalog: e.catalog, Logger: quiet, DropRetention: time.Hour,
		Table: manifesttable.Config{Engine: sqlengine.Config{MemoryLimit: "1GB"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = purger.Close() }()
	rep := must(purger.Drops().PurgeTrash(ctx, time.Now().Add(time.Minute), false))
	if len(rep.Purged) != 1 || rep.Locations != 1 {
		t.Fatalf("purge: %+v", rep)
	}
	wantCode(t, "an undrop while the purge deletes", undropErr, nserror.ConcurrentModification)
	_, err = s.DescribeTable(ctx, api.DescribeTableRequest{ID: id("a", "t")})
	wantCode(t, "the purged table", err, nserror.TableNotFound)
	if e.final(loc, 1) != "" {
		t.Fatal("the purge left the dropped table's data")
	}
	if left := must(e.rdb.HLen(ctx, string(s.k.Purging())).Result()); left != 0 {
		t.Fatalf("%d purge marks left after the purge", left)
	}
}
