package namespace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/commitlog"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/redisclaim"
)

// MaxOperations bounds BatchCommitTables.
const MaxOperations = 1000

// batchExtra is what a BatchCommitTables transaction keeps in its commit
// record: the catalog entries to append once its versions are final, and
// what tells whether they were (for a recovery).
type batchExtra struct {
	Entries     [][]string `json:"entries"`
	Declares    []string   `json:"declares,omitempty"`
	Deregisters []string   `json:"deregisters,omitempty"`
}

// BatchCommitTables applies declare_table, create_table_version,
// delete_table_versions and deregister_table operations atomically: all of
// them or none.
//
// One claim script checks every precondition (ids free or existing,
// parents, locations, version == latest + 1) and makes every change in
// Redis, or none. With versions, the batch is a multi-table transaction
// (redisclaim): its commit record is the commit point, and the catalog
// rows are appended to the log once every version is final — by this
// call, by a reader that finishes the transaction, or by a recovery — and
// the reply waits until they are durable. Without versions the catalog
// rows go to the log in the same script.
func (s *Service) BatchCommitTables(ctx context.Context, req api.BatchCommitTablesRequest) (*api.BatchCommitTablesResponse, error) {
	n := len(req.Operations)
	if n == 0 || n > MaxOperations {
		return nil, nserror.New(nserror.InvalidInput, "BatchCommitTables takes 1 to %d operations, not %d", MaxOperations, n)
	}
	txnID := uuid.Must(uuid.NewV7()).String()
	b := &batchBuilder{indexChange: *s.newIndexChange(ctx), s: s, txnID: txnID, touched: map[string]string{}, declared: map[string]string{}}
	b.txn = txnID
	results := make([]api.CommitTableResult, n)
	for i, op := range req.Operations {
		if err := b.add(ctx, i, op, &results[i]); err != nil {
			return nil, nserror.New(nserror.CodeOf(err), "operation %d: %w", i, err)
		}
	}
	readLog, err := b.readVersions(req.Operations, results)
	if err != nil {
		return nil, err
	}
	x := &redisclaim.Extras{TxnID: txnID, Guards: b.guards, Writes: b.writes, Deletions: b.deletions}
	if len(b.entries) > 0 {
		extra, err := json.Marshal(batchExtra{Entries: b.log, Declares: b.declares, Deregisters: b.deregisters})
		if err != nil {
			return nil, err
		}
		x.Extra = extra
	} else {
		for _, e := range b.log {
			x.Log = append(x.Log, e)
		}
	}
	x.Log = append(x.Log, readLog...)
	if len(b.entries) == 0 && len(x.Log) == 0 {
		return nil, nserror.New(nserror.InvalidInput, "BatchCommitTables: assertions alone change nothing")
	}
	batch, err := s.claims.Commit(ctx, b.entries, x)
	var ge *redisclaim.GuardError
	if errors.As(err, &ge) {
		return nil, b.guardErr[ge.Index]
	}
	if err != nil {
		return nil, err
	}
	if len(b.entries) == 0 {
		if err := s.durable(ctx, batch.Seq); err != nil {
			return nil, err
		}
	}
	// (With versions, the commit hook already waited for the rows.)
	for i, r := range results {
		switch {
		case r.CreateTableVersion != nil:
			tv := s.tableVersion(batch.Locations[b.entryOf[i]])
			r.CreateTableVersion.Version = &tv
			r.CreateTableVersion.TransactionID = batch.TxnID
		case r.DeleteTableVersions != nil:
			r.DeleteTableVersions.DeletedCount = int64(batch.Deleted[b.deletionOf[i]])
		}
	}
	for _, loc := range b.deregisteredLocs {
		s.forgetTable(ctx, loc, false)
	}
	return &api.BatchCommitTablesResponse{TransactionID: batch.TxnID, Results: results}, nil
}

// batchBuilder turns operations into one claim: the versions, and one
// change of the object index (indexChange) with the guards of them all.
type batchBuilder struct {
	indexChange
	s                *Service
	txnID            string
	entries          []redisclaim.Entry
	entryOf          map[int]int // operation -> entry
	deletions        []redisstate.Deletion
	deletionOf       map[int]int // operation -> deletion
	declares         []string
	deregisters      []string
	deregisteredLocs []string
	touched          map[string]string // table id -> what the batch does to it
	declared         map[string]string // table id -> location, declared here
	readVersionOf    map[int]api.ID    // set_read_version operation -> table
}

// existingTable resolves a table the batch did not declare and guards that
// it still is that table, at that location.
func (b *batchBuilder) existingTable(ctx context.Context, id api.ID) (string, error) {
	if loc, ok := b.declared[id.String()]; ok {
		return loc, nil
	}
	loc, err := b.s.tableLoc(ctx, id)
	if err != nil {
		return "", err
	}
	b.tableAt(id, loc, nserror.New(nserror.TableNotFound, "table %q does not exist", id.String()),
		nserror.New(nserror.ConcurrentModification, "table %q changed during the batch", id.String()))
	return loc, nil
}

// touch records what the batch does to a table: it may declare it, commit
// a version and delete versions (each at most once), or deregister it
// alone.
func (b *batchBuilder) touch(id api.ID, what string) error {
	prev := b.touched[id.String()]
	if strings.Contains(prev, what+",") || (prev != "" && (what == "deregister" || strings.Contains(prev, "deregister,"))) {
		return nserror.New(nserror.InvalidInput, "table %q: %s%s in one batch", id.String(), prev, what)
	}
	b.touched[id.String()] = prev + what + ","
	return nil
}

func (b *batchBuilder) add(ctx context.Context, i int, op api.CommitTableOperation, res *api.CommitTableResult) error {
	set := 0
	for _, p := range []bool{op.DeclareTable != nil, op.CreateTableVersion != nil, op.DeleteTableVersions != nil, op.DeregisterTable != nil,
		op.AssertTableVersion != nil, op.SetReadVersion != nil} {
		if p {
			set++
		}
	}
	if set != 1 {
		return nserror.New(nserror.InvalidInput, "an operation sets exactly one of declare_table, create_table_version, delete_table_versions, deregister_table, assert_table_version, set_read_version (%d set)", set)
	}
	switch {
	case op.DeclareTable != nil:
		return b.declareTable(ctx, i, op.DeclareTable, res)
	case op.CreateTableVersion != nil:
		return b.createTableVersion(ctx, i, op.CreateTableVersion, res)
	case op.DeleteTableVersions != nil:
		return b.deleteTableVersions(ctx, i, op.DeleteTableVersions, res)
	case op.AssertTableVersion != nil:
		return b.assertTableVersion(ctx, i, op.AssertTableVersion, res)
	case op.SetReadVersion != nil:
		return b.setReadVersion(ctx, i, op.SetReadVersion, res)
	case op.DeregisterTable != nil:
		return b.deregisterTable(ctx, i, op.DeregisterTable, res)
	}
	return nil
}

// declareTable adds operation i, a DeclareTable.
func (b *batchBuilder) declareTable(ctx context.Context, _ int, req *api.DeclareTableRequest, res *api.CommitTableResult) error {
	s := b.s
	if err := tableID(req.ID); err != nil {
		return err
	}
	if err := b.touch(req.ID, "declare"); err != nil {
		return err
	}
	loc, err := s.claimLocation(ctx, req.ID, req.Location)
	if err != nil {
		return err
	}
	for other, l := range b.declared {
		if overlap(l, loc) {
			return nserror.New(nserror.InvalidInput, "tables %q and %q of this batch have overlapping locations %q and %q", other, req.ID.String(), l, loc)
		}
	}
	if err := b.s.mayRetain(ctx, target{id: req.ID, table: true, create: true}, req.Properties); err != nil {
		return err
	}
	props := req.Properties
	if props == nil {
		props = api.Properties{}
	}
	id := req.ID.String()
	b.declared[id] = loc
	meta, err := propsJSON(props)
	if err != nil {
		return err
	}
	row := manifesttable.Row{ObjectType: manifesttable.TypeTable, ObjectID: id, Location: loc, Metadata: meta,
		CommittedAt: s.now().UTC(), TxnID: b.txnID}
	raw, err := manifesttable.MarshalRow(row)
	if err != nil {
		return err
	}
	b.parentIsNamespace(req.ID, nserror.New(nserror.NamespaceNotFound, "namespace %q of table %q does not exist", req.ID.Parent().String(), id))
	b.addTable(req.ID, loc, "", raw, nserror.New(nserror.TableAlreadyExists, "table %q already exists", id), errOverlap(loc))
	b.declares = append(b.declares, id)
	res.DeclareTable = &api.DeclareTableResponse{TransactionID: b.txnID, Location: s.root.uri(loc), StorageOptions: s.root.options,
		Properties: props, ManagedVersioning: s.managed()}
	return nil
}

// createTableVersion adds operation i, a CreateTableVersion.
func (b *batchBuilder) createTableVersion(ctx context.Context, i int, req *api.CreateTableVersionRequest, res *api.CommitTableResult) error {
	s := b.s
	if err := tableID(req.ID); err != nil {
		return err
	}
	if err := b.touch(req.ID, "version"); err != nil {
		return err
	}
	loc, err := b.existingTable(ctx, req.ID)
	if err != nil {
		return err
	}
	chain, err := chainOf(loc, req.Branch)
	if err != nil {
		return err
	}
	e, err := s.entryAt(chain, req.Version, req.ManifestPath, req.ManifestSize, req.ETag, req.NamingScheme)
	if err != nil {
		return err
	}
	if err := s.forked(ctx, e, req.Branch); err != nil {
		return err
	}
	if b.entryOf == nil {
		b.entryOf = map[int]int{}
	}
	b.entryOf[i] = len(b.entries)
	b.entries = append(b.entries, e)
	res.CreateTableVersion = &api.CreateTableVersionResponse{}
	return nil
}

// deleteTableVersions adds operation i, a DeleteTableVersions.
func (b *batchBuilder) deleteTableVersions(ctx context.Context, i int, req *api.BatchDeleteTableVersionsRequest, res *api.CommitTableResult) error {
	if err := tableID(req.ID); err != nil {
		return err
	}
	if err := b.touch(req.ID, "delete"); err != nil {
		return err
	}
	table, err := b.existingTable(ctx, req.ID)
	if err != nil {
		return err
	}
	loc, err := chainOf(table, req.Branch)
	if err != nil {
		return err
	}
	ranges, err := versionRanges(req.Ranges)
	if err != nil {
		return err
	}
	if b.deletionOf == nil {
		b.deletionOf = map[int]int{}
	}
	b.deletionOf[i] = len(b.deletions)
	b.deletions = append(b.deletions, redisstate.Deletion{Table: loc, Ranges: ranges})
	b.log = append(b.log, []string{commitlog.KindField, commitlog.DeleteVersionRanges, "t", loc, "ranges", commitlog.EncodeRanges(ranges), "txn", b.txnID})
	res.DeleteTableVersions = &api.BatchDeleteTableVersionsResponse{TransactionID: b.txnID}
	return nil
}

// assertTableVersion adds operation i, a AssertTableVersion.
func (b *batchBuilder) assertTableVersion(ctx context.Context, _ int, req *api.AssertTableVersionRequest, res *api.CommitTableResult) error {
	s := b.s
	if err := tableID(req.ID); err != nil {
		return err
	}
	if req.Version < 0 {
		return nserror.New(nserror.InvalidInput, "assert_table_version: version %d is negative", req.Version)
	}
	loc, err := b.existingTable(ctx, req.ID)
	if err != nil {
		return err
	}
	// The head is seeded first (from storage, or "0" for a table
	// without versions), so the guard compares against a present field.
	head, err := s.claims.SeedHead(ctx, loc)
	if err != nil {
		return err
	}
	if head != uint64(req.Version) {
		return nserror.New(nserror.ConcurrentModification, "table %q is at version %d, not %d", req.ID.String(), head, req.Version)
	}
	b.guard(nserror.New(nserror.ConcurrentModification, "table %q changed since version %d was read", req.ID.String(), req.Version),
		s.k.HeadIs(loc, uint64(req.Version)))
	res.AssertTableVersion = &struct{}{}
	return nil
}

// setReadVersion adds operation i, a SetReadVersion.
func (b *batchBuilder) setReadVersion(ctx context.Context, i int, req *api.SetReadVersionRequest, res *api.CommitTableResult) error {
	s := b.s
	if err := tableID(req.ID); err != nil {
		return err
	}
	if err := b.touch(req.ID, "read_version"); err != nil {
		return err
	}
	if req.Version < 0 {
		return nserror.New(nserror.InvalidInput, "set_read_version: version %d is negative", req.Version)
	}
	if _, ok := b.declared[req.ID.String()]; ok {
		return nserror.New(nserror.InvalidInput, "set_read_version: table %q is declared in this batch; declare it first", req.ID.String())
	}
	loc, err := b.existingTable(ctx, req.ID)
	if err != nil {
		return err
	}
	if req.Version > 0 {
		heads, _, err := s.claims.LatestVersions(ctx, []string{loc})
		if err != nil {
			return err
		}
		if uint64(req.Version) > heads[0] {
			return nserror.New(nserror.TableVersionNotFound, "set_read_version: table %q has no version %d (latest %d)", req.ID.String(), req.Version, heads[0])
		}
	}
	if b.readVersionOf == nil {
		b.readVersionOf = map[int]api.ID{}
	}
	b.readVersionOf[i] = req.ID
	res.SetReadVersion = &api.SetReadVersionResponse{Version: req.Version}
	return nil
}

// deregisterTable adds operation i, a DeregisterTable.
func (b *batchBuilder) deregisterTable(ctx context.Context, _ int, req *api.DeregisterTableRequest, res *api.CommitTableResult) error {
	s := b.s
	if err := tableID(req.ID); err != nil {
		return err
	}
	if err := b.touch(req.ID, "deregister"); err != nil {
		return err
	}
	if _, ok := b.declared[req.ID.String()]; ok {
		return nserror.New(nserror.InvalidInput, "table %q is declared and deregistered in one batch", req.ID.String())
	}
	loc, err := b.existingTable(ctx, req.ID)
	if err != nil {
		return err
	}
	if err := s.keepDeregistered(ctx, loc); err != nil {
		return err
	}
	id := req.ID.String()
	b.removeTable(req.ID, loc, true)
	b.deregisters = append(b.deregisters, id)
	b.deregisteredLocs = append(b.deregisteredLocs, loc)
	res.DeregisterTable = &api.DeregisterTableResponse{TransactionID: b.txnID, ID: req.ID, Location: s.root.uri(loc)}
	return nil
}

// readVersions turns the batch's set_read_version operations into log
// entries of the claim itself, so the read versions appear in __manifest
// at the claim's catalog sequence, in claim order (a later commit's
// read_version never lands before an earlier one's). Version 0 names the
// version the batch commits for that table.
func (b *batchBuilder) readVersions(ops []api.CommitTableOperation, results []api.CommitTableResult) ([]redisstate.LogEntry, error) {
	var out []redisstate.LogEntry
	for i, op := range ops {
		id, ok := b.readVersionOf[i]
		if !ok {
			continue
		}
		v := op.SetReadVersion.Version
		if v == 0 {
			for _, o := range ops {
				if o.CreateTableVersion != nil && o.CreateTableVersion.ID.Equal(id) {
					v = o.CreateTableVersion.Version
				}
			}
			if v == 0 {
				return nil, nserror.New(nserror.InvalidInput, "operation %d: set_read_version of %q without a version needs a create_table_version of that table in the batch", i, id.String())
			}
			results[i].SetReadVersion.Version = v
		}
		out = append(out, redisstate.LogEntry{commitlog.KindField, commitlog.ReadVersion, "t", id.String(), "v", strconv.FormatInt(v, 10)})
	}
	return out, nil
}

// txnCommitted is redisclaim's hook for a committed BatchCommitTables
// transaction: append its catalog entries (once) and wait until they are
// durable.
func (s *Service) txnCommitted(ctx context.Context, c redisclaim.TxnCommit) error {
	var x batchExtra
	if err := json.Unmarshal(c.Extra, &x); err != nil {
		return fmt.Errorf("namespace: transaction %s: bad catalog part: %w", c.ID, err)
	}
	if len(x.Entries) == 0 {
		return nil
	}
	if c.RecoveryToken != "" {
		// Redis lost the transaction's hash: __manifest tells whether the
		// entries were applied (they are all in one segment or none).
		if err := s.table.Refresh(ctx); err != nil {
			return err
		}
		switch {
		case len(x.Declares) > 0:
			if r, ok := s.table.Object(manifesttable.TypeTable, x.Declares[0]); ok && r.TxnID == c.ID {
				return nil
			}
		case len(x.Deregisters) > 0:
			if _, ok := s.table.Object(manifesttable.TypeTable, x.Deregisters[0]); !ok {
				return nil
			}
		}
	}
	entries := make([]redisstate.LogEntry, len(x.Entries))
	for i, e := range x.Entries {
		entries[i] = e
	}
	r, err := s.rs.TxnApply(ctx, c.ID, c.RecoveryToken, entries)
	if err != nil {
		return fmt.Errorf("namespace: applying transaction %s: %w", c.ID, err)
	}
	switch r.Status {
	case redisstate.OK, redisstate.Done:
		return s.durable(ctx, r.Seq)
	case redisstate.NoEpoch:
		return nserror.New(nserror.ServiceUnavailable, "Redis lost its state while transaction %s was finishing; recovery finishes it", c.ID)
	}
	return redisstate.UnexpectedReply("txn_apply.lua", r)
}
