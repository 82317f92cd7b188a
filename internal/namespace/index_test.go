package namespace

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
)

// The object index changes one way (indexChange, applied by the claim
// script), so it stays whole whatever races: tables declared, renamed and
// dropped inside a namespace that a cascade drops meanwhile, namespaces
// created under it. Afterwards every object's parent exists, each
// children set holds exactly the objects under it, every table's
// location maps back to it and to no other, and __manifest holds the same
// objects as the index.
func TestTheIndexStaysWholeUnderRacingChanges(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	s := e.s
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("keep")}))
	for round := range 6 {
		ns := id(fmt.Sprintf("r%d", round))
		must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: ns}))
		must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: ns.Child("in")}))
		must(s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("keep", fmt.Sprintf("mv%d", round))}))
		var wg sync.WaitGroup
		var mu sync.Mutex
		var unexpected []error
		expect := func(err error, codes ...nserror.Code) {
			if err != nil && !slices.Contains(codes, nserror.CodeOf(err)) {
				mu.Lock()
				unexpected = append(unexpected, err)
				mu.Unlock()
			}
		}
		gone := []nserror.Code{nserror.NamespaceNotFound, nserror.TableNotFound, nserror.ConcurrentModification}
		for i := range 6 {
			wg.Go(func() {
				parent := ns
				if i%2 == 1 {
					parent = ns.Child("in")
				}
				_, err := s.DeclareTable(ctx, api.DeclareTableRequest{ID: parent.Child(fmt.Sprintf("t%d", i))})
				expect(err, gone...)
				if err == nil && i%3 == 0 {
					_, err = s.DropTable(ctx, api.DropTableRequest{ID: parent.Child(fmt.Sprintf("t%d", i))})
					expect(err, gone...)
				}
			})
		}
		wg.Go(func() {
			_, err := s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: ns.Child("late")})
			expect(err, gone...)
		})
		wg.Go(func() {
			_, err := s.RenameTable(ctx, api.RenameTableRequest{ID: id("keep", fmt.Sprintf("mv%d", round)), NewNamespaceID: &ns, NewTableName: "moved"})
			expect(err, gone...)
		})
		wg.Go(func() {
			_, err := s.DropNamespace(ctx, api.DropNamespaceRequest{ID: ns, Behavior: api.BehaviorCascade})
			expect(err, nserror.ConcurrentModification)
		})
		wg.Wait()
		if len(unexpected) > 0 {
			t.Fatalf("round %d: %v", round, unexpected)
		}
	}
	if err := s.table.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	checkIndex(t, e)
}

// checkIndex holds the object index in Redis to its invariants and to
// __manifest.
func checkIndex(t *testing.T, e *tenv) {
	t.Helper()
	ctx := context.Background()
	k := e.s.k
	types := e.rdb.HGetAll(ctx, string(k.Obj())).Val()
	locs := e.rdb.HGetAll(ctx, string(k.Loc())).Val()
	byLoc := e.rdb.HGetAll(ctx, string(k.ByLoc())).Val()
	kids := map[string][]string{}
	for obj := range types {
		oid, err := api.ParseID(obj, "")
		if err != nil {
			t.Fatalf("index holds %q: %v", obj, err)
		}
		p := oid.Parent()
		if !p.IsRoot() && types[p.String()] != manifesttable.TypeNamespace {
			t.Errorf("%s is indexed, its parent %s is not a namespace (%q)", obj, p, types[p.String()])
		}
		kids[p.String()] = append(kids[p.String()], obj)
		if types[obj] == manifesttable.TypeTable {
			if byLoc[locs[obj]] != obj {
				t.Errorf("table %s at %q, which maps back to %q", obj, locs[obj], byLoc[locs[obj]])
			}
		} else if _, ok := locs[obj]; ok {
			t.Errorf("namespace %s has a location", obj)
		}
	}
	for l, obj := range byLoc {
		if locs[obj] != l {
			t.Errorf("location %q maps to %s, whose location is %q", l, obj, locs[obj])
		}
	}
	for parent := range kids {
		sort.Strings(kids[parent])
	}
	keys := e.rdb.Keys(ctx, k.KidsPattern()).Val()
	for _, key := range keys {
		parent := key[len(k.Kids("")):]
		got := e.rdb.SMembers(ctx, key).Val()
		sort.Strings(got)
		if !slices.Equal(got, kids[parent]) {
			t.Errorf("children of %q: the set holds %v, the index %v", parent, got, kids[parent])
		}
		delete(kids, parent)
	}
	for parent, objs := range kids {
		t.Errorf("children %v of %q have no set", objs, parent)
	}
	rows := map[string]string{}
	for _, r := range e.s.table.Objects() {
		rows[r.ObjectID] = r.ObjectType
		if r.ObjectType == manifesttable.TypeTable && locs[r.ObjectID] != r.Location {
			t.Errorf("__manifest puts table %s at %q, the index at %q", r.ObjectID, r.Location, locs[r.ObjectID])
		}
	}
	for obj, typ := range types {
		if rows[obj] != typ {
			t.Errorf("%s is a %s in the index, a %q in __manifest", obj, typ, rows[obj])
		}
	}
	for obj, typ := range rows {
		if types[obj] != typ {
			t.Errorf("%s is a %s in __manifest, a %q in the index", obj, typ, types[obj])
		}
	}
}
