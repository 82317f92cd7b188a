package namespace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

func TestLocationsOutsideTheRootAreRefused(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	root := e.objs.LocalDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	for _, loc := range []string{
		"../escape", "a/../../escape", "/etc", "file:///etc/passwd", "file://" + filepath.Dir(root) + "/sibling",
		"s3://bucket/x", "gs://bucket/x", "file://otherhost" + root + "/x", "link", "link/inner", "__manifest", "t/_versions/x",
		"file://" + root + "/../x",
	} {
		_, err := e.s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("t" + fmt.Sprint(len(loc))), Location: loc})
		wantCode(t, "declaring at "+loc, err, nserror.InvalidInput)
	}
	// Inside the root, in any of the three forms.
	for i, loc := range []string{"plain", root + "/abs", "file://" + root + "/uri", e.s.root.objectPath("objpath")} {
		d, err := e.s.DeclareTable(ctx, api.DeclareTableRequest{ID: id(fmt.Sprintf("ok%d", i)), Location: loc})
		if err != nil {
			t.Fatalf("declaring at %q: %v", loc, err)
		}
		if filepath.Dir(d.Location[len("file://"):]) != root {
			t.Fatalf("declared at %q, got %q", loc, d.Location)
		}
	}
	_, err := e.s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("dup"), Location: "plain"})
	wantCode(t, "a location another table has", err, nserror.InvalidInput)
}

func TestDropDeletesDataAndDeregisterKeepsIt(t *testing.T) {
	onEveryBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		e := newTenvOn(t, backend)
		s := e.s
		for _, n := range []string{"dropme", "keepme"} {
			must(s.DeclareTable(ctx, api.DeclareTableRequest{ID: id(n)}))
			loc := e.locOf(id(n))
			must(s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: id(n), Version: 1, ManifestPath: e.stage(loc, 1, "m")}))
			if err := e.objs.Put(ctx, loc+"/data/0.lance", []byte("rows")); err != nil {
				t.Fatal(err)
			}
		}
		dropLoc, keepLoc := e.locOf(id("dropme")), e.locOf(id("keepme"))
		r := must(s.DropTable(ctx, api.DropTableRequest{ID: id("dropme")}))
		if r.Location != e.s.root.uri(dropLoc) {
			t.Fatalf("drop response: %+v", r)
		}
		if left, _ := e.objs.ListAll(ctx, dropLoc+"/"); len(left) != 0 {
			t.Fatalf("DropTable left %d files", len(left))
		}
		if _, err := os.Stat(filepath.Join(e.objs.LocalDir(), dropLoc)); backend == "file" && !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("DropTable left the directory: %v", err)
		}
		must(s.DeregisterTable(ctx, api.DeregisterTableRequest{ID: id("keepme")}))
		// (On S3 the staging manifest of version 1 may still be there: its
		// deletion is batched after the reply.)
		left, _ := e.objs.ListAll(ctx, keepLoc+"/")
		left = slices.DeleteFunc(left, func(a objstore.Attrs) bool { return strings.Contains(a.Key, ".manifest-") })
		if len(left) != 2 {
			t.Fatalf("DeregisterTable left %d files, want 2", len(left))
		}
		for _, n := range []string{"dropme", "keepme"} {
			wantCode(t, n+" after drop", s.TableExists(ctx, api.TableExistsRequest{ID: id(n)}), nserror.TableNotFound)
		}
		_, err := s.DropTable(ctx, api.DropTableRequest{ID: id("dropme")})
		wantCode(t, "dropping twice", err, nserror.TableNotFound)
		// The kept directory registers again, with its versions.
		must(s.RegisterTable(ctx, api.RegisterTableRequest{ID: id("back"), Location: keepLoc}))
		if d := must(s.DescribeTable(ctx, api.DescribeTableRequest{ID: id("back")})); d.Version == nil || *d.Version != 1 {
			t.Fatalf("a re-registered table: %+v", d)
		}
		_, err = s.RegisterTable(ctx, api.RegisterTableRequest{ID: id("nothing"), Location: "empty-dir"})
		wantCode(t, "registering a directory without a table", err, nserror.InvalidInput)
		_, err = s.RegisterTable(ctx, api.RegisterTableRequest{ID: id("back"), Location: keepLoc})
		wantCode(t, "registering an existing id", err, nserror.TableAlreadyExists)
	})
}

func TestRegisteredTablesGetTheirOldVersionsBackfilled(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	// A Lance table written without flightns: five versions.
	for v := uint64(1); v <= 5; v++ {
		if err := e.objs.Put(ctx, lancemanifest.Dir("legacy").Manifest(lancemanifest.V2, v), []byte(fmt.Sprintf("v%d", v))); err != nil {
			t.Fatal(err)
		}
	}
	must(e.s.RegisterTable(ctx, api.RegisterTableRequest{ID: id("legacy"), Location: "legacy"}))
	dv := must(e.s.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: id("legacy"), Version: ptr(int64(2))}))
	if dv.Version.Version != 2 || *dv.Version.ManifestSize != 2 {
		t.Fatalf("an old version: %+v", dv.Version)
	}
	lst := must(e.s.Versions().ListTableVersions(ctx, api.ListTableVersionsRequest{ID: id("legacy")}))
	if len(lst.Versions) != 5 {
		t.Fatalf("%d versions listed, want 5", len(lst.Versions))
	}
	must(e.s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: id("legacy"), Version: 6, ManifestPath: e.stage("legacy", 6, "v6")}))
}

func TestCascadeDropsNestedNamespacesAndTables(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	s := e.s
	for _, ns := range []api.ID{id("a"), id("a", "b"), id("a", "b", "c"), id("z")} {
		must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: ns}))
	}
	var locs []string
	for _, tb := range []api.ID{id("a", "t1"), id("a", "b", "t2"), id("a", "b", "c", "t3"), id("z", "keep")} {
		must(s.DeclareTable(ctx, api.DeclareTableRequest{ID: tb}))
		loc := e.locOf(tb)
		must(s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: tb, Version: 1, ManifestPath: e.stage(loc, 1, "m")}))
		locs = append(locs, loc)
	}
	must(s.DropNamespace(ctx, api.DropNamespaceRequest{ID: id("a"), Behavior: "Cascade"}))
	for _, gone := range []api.ID{id("a"), id("a", "b"), id("a", "b", "c")} {
		wantCode(t, gone.String(), s.NamespaceExists(ctx, api.NamespaceExistsRequest{ID: gone}), nserror.NamespaceNotFound)
	}
	for i, tb := range []api.ID{id("a", "t1"), id("a", "b", "t2"), id("a", "b", "c", "t3")} {
		wantCode(t, tb.String(), s.TableExists(ctx, api.TableExistsRequest{ID: tb}), nserror.TableNotFound)
		if left, _ := e.objs.ListAll(ctx, locs[i]+"/"); len(left) != 0 {
			t.Fatalf("cascade left the data of %s", tb.String())
		}
	}
	if err := s.TableExists(ctx, api.TableExistsRequest{ID: id("z", "keep")}); err != nil {
		t.Fatalf("cascade reached a sibling: %v", err)
	}
	// Everything can be created again, empty.
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("a")}))
	if got := must(s.ListTables(ctx, api.ListTablesRequest{ID: id("a")})); len(got.Tables) != 0 {
		t.Fatalf("a re-created namespace holds %v", got.Tables)
	}
}

func TestConcurrentDeclaresOfOneNameHaveOneWinner(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	const callers = 24
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			_, errs[i] = e.s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("contended")})
		})
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case nserror.CodeOf(err) != nserror.TableAlreadyExists:
			t.Fatalf("a loser got %v", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d declares won, want 1", wins)
	}
	if got := must(e.s.ListAllTables(ctx, api.ListTablesRequest{})); len(got.Tables) != 1 {
		t.Fatalf("tables: %v", got.Tables)
	}
}

func TestConcurrentCommitsLeaveContiguousVersions(t *testing.T) {
	onEveryBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		e := newTenvOn(t, backend)
		must(e.s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("hot")}))
		loc := e.locOf(id("hot"))
		const writers, each = 12, 8
		var mu sync.Mutex
		var won []int64
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for n := 0; n < each; {
					d, err := e.s.DescribeTable(ctx, api.DescribeTableRequest{ID: id("hot")})
					if err != nil {
						t.Error(err)
						return
					}
					next := int64(1)
					if d.Version != nil {
						next = *d.Version + 1
					}
					_, err = e.s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: id("hot"), Version: next,
						ManifestPath: e.stage(loc, uint64(next), fmt.Sprintf("w%d-n%d", w, n))})
					if nserror.CodeOf(err) == nserror.ConcurrentModification {
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					won = append(won, next)
					mu.Unlock()
					n++
				}
			})
		}
		wg.Wait()
		sort.Slice(won, func(i, j int) bool { return won[i] < won[j] })
		for i, v := range won {
			if v != int64(i+1) {
				t.Fatalf("versions won: %v; not contiguous from 1", won)
			}
		}
		lst := must(e.s.Versions().ListTableVersions(ctx, api.ListTableVersionsRequest{ID: id("hot")}))
		if len(lst.Versions) != writers*each {
			t.Fatalf("%d versions listed, want %d", len(lst.Versions), writers*each)
		}
	})
}

func TestRecoveryAfterFlushAllRestoresTheCatalog(t *testing.T) {
	onEveryBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		e := newTenvOn(t, backend)
		s := e.s
		must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("prod"), Properties: api.Properties{"o": "1"}}))
		must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("prod", "inner")}))
		must(s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("prod", "t")}))
		loc := e.locOf(id("prod", "t"))
		for v := uint64(1); v <= 3; v++ {
			must(s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: id("prod", "t"), Version: int64(v), ManifestPath: e.stage(loc, v, "m")}))
		}
		e.redis.FlushAll()

		// The same process notices and recovers by itself.
		if d := must(s.DescribeNamespace(ctx, api.DescribeNamespaceRequest{ID: id("prod")})); d.Properties["o"] != "1" {
			t.Fatalf("namespace after recovery: %+v", d)
		}
		d := must(s.DescribeTable(ctx, api.DescribeTableRequest{ID: id("prod", "t")}))
		if d.Version == nil || *d.Version != 3 {
			t.Fatalf("table after recovery: %+v", d)
		}
		_, err := s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("prod", "t")})
		wantCode(t, "declaring a recovered table again", err, nserror.TableAlreadyExists)
		_, err = s.DropNamespace(ctx, api.DropNamespaceRequest{ID: id("prod")})
		wantCode(t, "dropping a recovered non-empty namespace", err, nserror.NamespaceNotEmpty)
		must(s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: id("prod", "t"), Version: 4, ManifestPath: e.stage(loc, 4, "m")}))
		_, err = s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: id("prod", "t"), Version: 3, ManifestPath: e.stage(loc, 3, "x")})
		wantCode(t, "a version recovered from storage", err, nserror.ConcurrentModification)

		// Another process opened afterwards sees the same catalog.
		other := e.open()
		if got := must(other.ListNamespaces(ctx, api.ListNamespacesRequest{ID: id("prod")})); len(got.Namespaces) != 1 {
			t.Fatalf("another process lists %v", got.Namespaces)
		}
	})
}
