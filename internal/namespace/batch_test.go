package namespace

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/redisclaim"
)

func TestBatchCommitTablesAppliesEveryOperation(t *testing.T) {
	onEveryBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		e := newTenvOn(t, backend)
		s := e.s
		loc0 := e.withVersions(id("t0"), 3)
		e.withVersions(id("t2"), 1)
		resp := must(s.BatchCommitTables(ctx, api.BatchCommitTablesRequest{Operations: []api.CommitTableOperation{
			{DeclareTable: &api.DeclareTableRequest{ID: id("t1"), Location: "t1dir"}},
			{CreateTableVersion: &api.CreateTableVersionRequest{ID: id("t1"), Version: 1, ManifestPath: e.stage("t1dir", 1, "t1v1")}},
			{CreateTableVersion: &api.CreateTableVersionRequest{ID: id("t0"), Version: 4, ManifestPath: e.stage(loc0, 4, "t0v4")}},
			{DeleteTableVersions: &api.BatchDeleteTableVersionsRequest{ID: id("t0"), Ranges: []api.VersionRange{{StartVersion: 1, EndVersion: 3}}}},
			{DeregisterTable: &api.DeregisterTableRequest{ID: id("t2")}},
		}}))
		if resp.TransactionID == "" || len(resp.Results) != 5 || resp.Results[1].CreateTableVersion.Version.Version != 1 ||
			resp.Results[3].DeleteTableVersions.DeletedCount != 2 || resp.Results[0].DeclareTable == nil || resp.Results[4].DeregisterTable == nil {
			t.Fatalf("response: %+v", resp)
		}
		if d := must(s.DescribeTable(ctx, api.DescribeTableRequest{ID: id("t1")})); d.Version == nil || *d.Version != 1 {
			t.Fatalf("t1: %+v", d)
		}
		if d := must(s.DescribeTable(ctx, api.DescribeTableRequest{ID: id("t0")})); *d.Version != 4 {
			t.Fatalf("t0: %+v", d)
		}
		if l := must(s.Versions().ListTableVersions(ctx, api.ListTableVersionsRequest{ID: id("t0")})); len(l.Versions) != 2 {
			t.Fatalf("t0 versions after the delete: %+v", l.Versions)
		}
		// A deleted version is gone, though its manifest is still in storage
		// (Lance deletes its own files), and describing it does not bring it
		// back.
		_, err := s.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: id("t0"), Version: ptr(int64(2))})
		wantCode(t, "describing a version deleted in a batch", err, nserror.TableVersionNotFound)
		if l := must(s.Versions().ListTableVersions(ctx, api.ListTableVersionsRequest{ID: id("t0")})); len(l.Versions) != 2 {
			t.Fatalf("t0 versions after describing a deleted one: %+v", l.Versions)
		}
		wantCode(t, "t2", s.TableExists(ctx, api.TableExistsRequest{ID: id("t2")}), nserror.TableNotFound)
		// __manifest holds the declared table with the transaction's id.
		if r, ok := s.Table().Object(manifesttable.TypeTable, "t1"); !ok || r.TxnID != resp.TransactionID {
			t.Fatalf("t1's row: %+v %v", r, ok)
		}
	})
}

func TestBatchCommitTablesIsAllOrNothing(t *testing.T) {
	onEveryBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		e := newTenvOn(t, backend)
		s := e.s
		loc := e.withVersions(id("t"), 1)
		e.withVersions(id("exists"), 0)
		cases := []struct {
			name string
			ops  []api.CommitTableOperation
			code nserror.Code
		}{
			{"a declare of an existing table", []api.CommitTableOperation{
				{CreateTableVersion: &api.CreateTableVersionRequest{ID: id("t"), Version: 2, ManifestPath: e.stage(loc, 2, "a")}},
				{DeclareTable: &api.DeclareTableRequest{ID: id("exists")}},
			}, nserror.TableAlreadyExists},
			{"a version that is taken", []api.CommitTableOperation{
				{DeclareTable: &api.DeclareTableRequest{ID: id("new1")}},
				{CreateTableVersion: &api.CreateTableVersionRequest{ID: id("t"), Version: 1, ManifestPath: e.stage(loc, 1, "b")}},
			}, nserror.ConcurrentModification},
			{"a deregister of a missing table", []api.CommitTableOperation{
				{DeclareTable: &api.DeclareTableRequest{ID: id("new2")}},
				{DeregisterTable: &api.DeregisterTableRequest{ID: id("missing")}},
			}, nserror.TableNotFound},
			{"a declare in a missing namespace", []api.CommitTableOperation{
				{DeclareTable: &api.DeclareTableRequest{ID: id("nope", "x")}},
			}, nserror.NamespaceNotFound},
			// A version is checked as CreateTableVersion checks it.
			{"a negative manifest size", []api.CommitTableOperation{
				{DeclareTable: &api.DeclareTableRequest{ID: id("new1")}},
				{CreateTableVersion: &api.CreateTableVersionRequest{ID: id("t"), Version: 2, ManifestPath: e.stage(loc, 2, "c"), ManifestSize: ptr(int64(-1))}},
			}, nserror.InvalidInput},
			{"a manifest named by another scheme than the one given", []api.CommitTableOperation{
				{CreateTableVersion: &api.CreateTableVersionRequest{ID: id("t"), Version: 2, ManifestPath: e.stage(loc, 2, "d"), NamingScheme: "V1"}},
			}, nserror.InvalidInput},
		}
		for _, c := range cases {
			_, err := s.BatchCommitTables(ctx, api.BatchCommitTablesRequest{Operations: c.ops})
			wantCode(t, c.name, err, c.code)
		}
		for _, gone := range []string{"new1", "new2"} {
			wantCode(t, gone, s.TableExists(ctx, api.TableExistsRequest{ID: id(gone)}), nserror.TableNotFound)
		}
		if d := must(s.DescribeTable(ctx, api.DescribeTableRequest{ID: id("t")})); *d.Version != 1 {
			t.Fatalf("a failed batch moved t to %d", *d.Version)
		}
		for _, bad := range [][]api.CommitTableOperation{
			nil,
			{{}},
			{{DeclareTable: &api.DeclareTableRequest{ID: id("a")}, DeregisterTable: &api.DeregisterTableRequest{ID: id("a")}}},
			{{DeclareTable: &api.DeclareTableRequest{ID: id("a")}}, {DeclareTable: &api.DeclareTableRequest{ID: id("a")}}},
			{{DeregisterTable: &api.DeregisterTableRequest{ID: id("t")}}, {CreateTableVersion: &api.CreateTableVersionRequest{ID: id("t"), Version: 2, ManifestPath: "x"}}},
		} {
			_, err := s.BatchCommitTables(ctx, api.BatchCommitTablesRequest{Operations: bad})
			wantCode(t, fmt.Sprintf("bad batch %d ops", len(bad)), err, nserror.InvalidInput)
		}
	})
}

func TestConcurrentBatchesOverOverlappingTables(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	tables := []api.ID{id("a"), id("b"), id("c"), id("d")}
	locs := map[string]string{}
	for _, tb := range tables {
		locs[tb.String()] = e.withVersions(tb, 0)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	committed := map[string]map[string]int64{} // txn -> table -> version
	for w := range 8 {
		wg.Go(func() {
			for n := 0; n < 6; {
				set := []api.ID{tables[(w+n)%4], tables[(w+n+1)%4]}
				var ops []api.CommitTableOperation
				for _, tb := range set {
					d := must(e.s.DescribeTable(ctx, api.DescribeTableRequest{ID: tb}))
					v := int64(1)
					if d.Version != nil {
						v = *d.Version + 1
					}
					ops = append(ops, api.CommitTableOperation{CreateTableVersion: &api.CreateTableVersionRequest{ID: tb, Version: v,
						ManifestPath: e.stage(locs[tb.String()], uint64(v), fmt.Sprintf("w%d-n%d", w, n))}})
				}
				resp, err := e.s.BatchCommitTables(ctx, api.BatchCommitTablesRequest{Operations: ops})
				if nserror.CodeOf(err) == nserror.ConcurrentModification {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				committed[resp.TransactionID] = map[string]int64{}
				for i, tb := range set {
					committed[resp.TransactionID][tb.String()] = resp.Results[i].CreateTableVersion.Version.Version
				}
				mu.Unlock()
				n++
			}
		})
	}
	wg.Wait()
	// Every committed transaction's versions are in place, with its id.
	for txn, members := range committed {
		for tb, v := range members {
			loc := must(e.s.Claims().GetManifestLocation(ctx, locs[tb], uint64(v)))
			if loc.TxnID != txn {
				t.Fatalf("%s@%d belongs to %q, not %q", tb, v, loc.TxnID, txn)
			}
		}
	}
	if len(committed) != 8*6 {
		t.Fatalf("%d transactions committed, want 48", len(committed))
	}
}

func TestABatchCutAfterItsRecordIsFinishedByAReaderOrARecovery(t *testing.T) {
	ctx := context.Background()
	for _, flush := range []bool{false, true} {
		t.Run(fmt.Sprintf("flush=%v", flush), func(t *testing.T) {
			r := newTenv(t)
			loc := r.withVersions(id("base"), 1)
			// Reopen with a fault at the commit record.
			var armed bool
			var mu sync.Mutex
			s2, err := Open(ctx, Config{Objects: r.objs, Redis: r.rdb, Catalog: r.catalog, Logger: quiet, Claims: redisclaim.Config{Step: func(_ context.Context, st redisclaim.Step, _ string, _ uint64) error {
				mu.Lock()
				defer mu.Unlock()
				if armed && st == redisclaim.StepTxnRecorded {
					armed = false
					return errors.New("crash")
				}
				return nil
			}}, Table: manifesttable.Config{Engine: sqlengine.Config{MemoryLimit: "1GB"}}})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s2.Close() }()
			mu.Lock()
			armed = true
			mu.Unlock()
			_, err = s2.BatchCommitTables(ctx, api.BatchCommitTablesRequest{Operations: []api.CommitTableOperation{
				{DeclareTable: &api.DeclareTableRequest{ID: id("born"), Location: "borndir"}},
				{CreateTableVersion: &api.CreateTableVersionRequest{ID: id("born"), Version: 1, ManifestPath: r.stage("borndir", 1, "b1")}},
				{CreateTableVersion: &api.CreateTableVersionRequest{ID: id("base"), Version: 2, ManifestPath: r.stage(loc, 2, "b2")}},
			}})
			if err == nil {
				t.Fatal("the cut did not fire")
			}
			if flush {
				r.redis.FlushAll()
			}
			// A reader of one member (or the recovery it triggers) finishes it.
			dv := must(r.s.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: id("base"), Version: ptr(int64(2))}))
			if dv.Version.Version != 2 {
				t.Fatalf("base@2: %+v", dv.Version)
			}
			d := must(r.s.DescribeTable(ctx, api.DescribeTableRequest{ID: id("born")}))
			if d.Version == nil || *d.Version != 1 {
				t.Fatalf("born after the roll-forward: %+v", d)
			}
			if _, ok := r.s.Table().Object(manifesttable.TypeTable, "born"); !ok {
				if err := r.s.Table().Refresh(ctx); err != nil {
					t.Fatal(err)
				}
				if _, ok := r.s.Table().Object(manifesttable.TypeTable, "born"); !ok {
					t.Fatal("born is not in __manifest after the roll-forward")
				}
			}
		})
	}
}

// A table declared in a transaction that commits its first version has
// that version's __manifest row under its id, not its directory (the
// transaction logs the version before the table's row).
func TestAVersionOfATableDeclaredInTheSameTransactionIsTheTables(t *testing.T) {
	e := newTenv(t)
	ctx := context.Background()
	must(e.s.BatchCommitTables(ctx, api.BatchCommitTablesRequest{Operations: []api.CommitTableOperation{
		{DeclareTable: &api.DeclareTableRequest{ID: id("t1"), Location: "t1dir"}},
		{CreateTableVersion: &api.CreateTableVersionRequest{ID: id("t1"), Version: 1, ManifestPath: e.stage("t1dir", 1, "t1v1")}},
	}}))
	e.events(t, 0, 2) // the version's row is durable
	if rows, under := e.s.table.VersionRows("t1"), e.s.table.VersionRows("t1dir"); len(rows) != 1 || rows[0].TableVersion != 1 || len(under) != 0 {
		t.Fatalf("version rows of t1: %v; under its directory: %v", rows, under)
	}
}
