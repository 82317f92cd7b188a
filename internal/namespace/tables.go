package namespace

import (
	"context"
	"sort"
	"strconv"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/commitlog"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
)

// DeclareTable declares a table: a location for its data, no data yet.
// Without a location the service chooses <hash8>_<object_id> under the
// root; a given location must lie inside the root, meet no other table's
// directory (reserve.go), and hold no data unless the caller may write
// the whole catalog (claimLocation). Tables are managed
// (every commit goes through CreateTableVersion) unless the catalog is
// Unmanaged.
func (s *Service) DeclareTable(ctx context.Context, req api.DeclareTableRequest) (*api.DeclareTableResponse, error) {
	return s.DeclarePartitionTable(ctx, req, nil)
}

// DeclarePartitionTable is DeclareTable making the row a partition row by
// part (nil: a plain table). Go API only: the planner calls it; no request
// body can.
func (s *Service) DeclarePartitionTable(ctx context.Context, req api.DeclareTableRequest, part *PartitionRow) (*api.DeclareTableResponse, error) {
	if err := tableID(req.ID); err != nil {
		return nil, err
	}
	loc, err := s.claimLocation(ctx, req.ID, req.Location)
	if err != nil {
		return nil, err
	}
	// Credentials first: a store that cannot vend fails the call before
	// anything is declared.
	opts, err := s.storageOptions(ctx, req.ID, loc, req.VendCredentials)
	if err != nil {
		return nil, err
	}
	props, err := s.createTable(ctx, req.ID, loc, req.Properties, api.ModeCreate, part, api.EventTableDeclared)
	if err != nil {
		return nil, err
	}
	return &api.DeclareTableResponse{Location: s.root.uri(loc), StorageOptions: opts, Properties: props, ManagedVersioning: s.managed()}, nil
}

// RegisterTable makes an existing table directory (with at least one
// version) part of the catalog. Its versions are recorded from storage on
// first use, so old versions can be described. The directory must meet no
// other table's (reserve.go), and, since data no table owns has no known
// owner, registering it needs the write role on the whole catalog
// (claimLocation); a table re-registered at its own location keeps it.
func (s *Service) RegisterTable(ctx context.Context, req api.RegisterTableRequest) (*api.RegisterTableResponse, error) {
	if err := tableID(req.ID); err != nil {
		return nil, err
	}
	mode, err := normMode(req.Mode, api.ModeCreate, api.ModeCreate, api.ModeOverwrite)
	if err != nil {
		return nil, err
	}
	if req.Location == "" {
		return nil, nserror.New(nserror.InvalidInput, "RegisterTable needs a location")
	}
	loc, err := s.claimLocation(ctx, req.ID, req.Location)
	if err != nil {
		return nil, err
	}
	found := false
	for a, err := range s.objs.List(ctx, lancemanifest.Dir(loc).Versions()) {
		if err != nil {
			return nil, err
		}
		if _, m, err := lancemanifest.ParseManifestPath(a.Key); err == nil && !m.Staging {
			found = true
			break
		}
	}
	if !found {
		return nil, nserror.New(nserror.InvalidInput, "no Lance table at %q (no manifest in its _versions directory)", req.Location)
	}
	props, err := s.createTable(ctx, req.ID, loc, req.Properties, mode, nil, api.EventTableRegistered)
	if err != nil {
		return nil, err
	}
	return &api.RegisterTableResponse{Location: s.root.uri(loc), Properties: props}, nil
}

// createTable indexes and logs a table row, then waits until it is durable.
func (s *Service) createTable(ctx context.Context, id api.ID, loc string, props api.Properties, mode string, part *PartitionRow, event string) (api.Properties, error) {
	if err := s.mayRetain(ctx, target{id: id, table: true, create: true}, props); err != nil {
		return nil, err
	}
	if props == nil {
		props = api.Properties{}
	}
	meta, err := propsJSON(props)
	if err != nil {
		return nil, err
	}
	row := manifesttable.Row{ObjectType: manifesttable.TypeTable, ObjectID: id.String(), Location: loc, Metadata: meta, CommittedAt: s.now().UTC()}
	part.apply(&row)
	b, err := manifesttable.MarshalRow(row)
	if err != nil {
		return nil, err
	}
	err = s.changeIndex(ctx, "table "+strconv.Quote(id.String()), func(c *indexChange) error {
		c.created = event
		noParent := nserror.New(nserror.NamespaceNotFound, "namespace %q of table %q does not exist", id.Parent().String(), id.String())
		if !c.stale && mode != api.ModeOverwrite {
			// The common case, assumed: the id and the location are free
			// (one claim, no read); otherwise a guard fails and the index
			// is read.
			c.parentIsNamespace(id, noParent)
			c.addTable(id, loc, "", b, errStale, errStale)
			return nil
		}
		if err := s.parentOf(ctx, c, id, noParent); err != nil {
			return err
		}
		typ, err := s.objectType(ctx, id)
		if err != nil {
			return err
		}
		switch {
		case typ == manifesttable.TypeNamespace:
			return nserror.New(nserror.TableAlreadyExists, "%q is already a namespace", id.String())
		case typ != "" && mode != api.ModeOverwrite:
			return nserror.New(nserror.TableAlreadyExists, "table %q already exists", id.String())
		}
		owner, taken, err := s.indexField(ctx, s.k.ByLoc(), loc)
		if err != nil {
			return err
		}
		if taken && owner != id.String() {
			return errOverlap(loc) // naming no owner: the caller may not see it
		}
		if typ == "" {
			c.addTable(id, loc, "", b, errStale, errOverlap(loc))
			return nil
		}
		// Overwrite: the table's row is replaced, and its location, which
		// must meet no reserved directory (its own old one included).
		old, err := s.tableLoc(ctx, id)
		if err != nil {
			return errStale
		}
		c.tableAt(id, old, errStale, errStale)
		if old != loc {
			c.guard(errStale, redisstate.GuardAbsent(c.k.ByLoc(), loc))
			c.reserve(loc, "", errOverlap(loc))
			c.writes = append(c.writes, redisstate.HDel(c.k.ByLoc(), old))
			c.release(old)
		}
		c.indexTable(id, loc)
		c.put(b)
		c.tableCreated(id, loc)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return props, nil
}

// tableLoc returns a table's location key, or TableNotFound.
func (s *Service) tableLoc(ctx context.Context, id api.ID) (string, error) {
	if err := tableID(id); err != nil {
		return "", err
	}
	loc, ok, err := s.indexField(ctx, s.k.Loc(), id.String())
	if err == nil && !ok {
		return "", nserror.New(nserror.TableNotFound, "table %q does not exist", id.String())
	}
	return loc, err
}

// DescribeTable describes a table: its location (a URI Lance opens), its
// properties, managed versioning, and its latest (or the asked) version.
func (s *Service) DescribeTable(ctx context.Context, req api.DescribeTableRequest) (*api.DescribeTableResponse, error) {
	table, err := s.tableLoc(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	branch := req.Branch
	loc, err := chainOf(table, branch)
	if err != nil {
		return nil, err
	}
	if req.Tag != "" {
		// The version a tag of Lance's points to.
		if req.Version != nil {
			return nil, nserror.New(nserror.InvalidInput, "describe a table at a version or at a tag, not both")
		}
		t, err := s.readTag(ctx, req.ID, table, req.Tag)
		if err != nil {
			return nil, err
		}
		branch = ""
		if t.Branch != nil {
			branch = *t.Branch
		}
		if loc, err = chainOf(table, branch); err != nil {
			return nil, err
		}
		req.Version = &t.Version
	}
	r, _, err := s.row(ctx, manifesttable.TypeTable, req.ID)
	if err != nil {
		return nil, err
	}
	opts, err := s.storageOptions(ctx, req.ID, table, req.VendCredentials)
	if err != nil {
		return nil, err
	}
	resp := &api.DescribeTableResponse{Table: req.ID.Name(), Namespace: req.ID.Parent(), Location: s.root.uri(table),
		StorageOptions: opts, Properties: propsOf(r), ManagedVersioning: s.managed()}
	if resp.Namespace == nil {
		resp.Namespace = []string{}
	}
	if req.WithTableURI != nil && *req.WithTableURI {
		resp.TableURI = resp.Location
	}
	if req.Version != nil {
		if *req.Version <= 0 {
			return nil, nserror.New(nserror.InvalidInput, "version %d is not a table version", *req.Version)
		}
		if err := s.versionExists(ctx, req.ID, loc, *req.Version); err != nil {
			return nil, s.orBranchNotFound(ctx, req.ID, loc, branch, err)
		}
		v := *req.Version
		resp.Version = &v
		if err := s.detailed(ctx, req, loc, branch, resp); err != nil {
			return nil, err
		}
		return resp, nil
	}
	latest, ok, err := s.latestVersion(ctx, req.ID, loc)
	if err != nil {
		return nil, err
	}
	if !ok && !onMain(branch) {
		return nil, noBranch(req.ID, branch)
	}
	declared := !ok
	resp.IsOnlyDeclared = &declared
	if ok {
		resp.Version = &latest
	}
	if err := s.detailed(ctx, req, loc, branch, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// detailed adds, with load_detailed_metadata, what the described
// version's manifest says: its schema, its basic statistics and Lance's
// table metadata. A declared-only table has no manifest: it is
// TableVersionNotFound, as the spec allows.
func (s *Service) detailed(ctx context.Context, req api.DescribeTableRequest, chain, branch string, resp *api.DescribeTableResponse) error {
	if req.LoadDetailedMetadata == nil || !*req.LoadDetailedMetadata {
		return nil
	}
	var v int64
	if resp.Version != nil {
		v = *resp.Version
	}
	m, err := s.manifestAt(ctx, req.ID, chain, branch, v)
	if err != nil {
		return err
	}
	schema := m.Schema()
	resp.Schema = &schema
	resp.Stats = &api.TableBasicStats{NumDeletedRows: int64(m.DeletedRows()), NumFragments: int64(len(m.Fragments))}
	resp.Metadata = m.TableMetadata
	return nil
}

// TableExists succeeds when the table (and the version, if asked) exists.
func (s *Service) TableExists(ctx context.Context, req api.TableExistsRequest) error {
	none := false // an existence check vends nothing
	_, err := s.DescribeTable(ctx, api.DescribeTableRequest{ID: req.ID, Version: req.Version, VendCredentials: &none})
	return err
}

// ListTables lists the tables directly inside a namespace, by name, in
// order; without a limit, all of them. IncludeDeclared false leaves out
// tables without versions.
func (s *Service) ListTables(ctx context.Context, req api.ListTablesRequest) (*api.ListTablesResponse, error) {
	names, err := s.children(ctx, req.ID, manifesttable.TypeTable)
	if err != nil {
		return nil, err
	}
	if req.IncludeDeclared != nil && !*req.IncludeDeclared {
		if names, err = s.withVersions(ctx, req.ID, names); err != nil {
			return nil, err
		}
	}
	out, token, err := page(names, req.PageToken, req.Limit)
	if err != nil {
		return nil, err
	}
	return &api.ListTablesResponse{Tables: out, PageToken: token}, nil
}

func (s *Service) withVersions(ctx context.Context, parent api.ID, names []string) ([]string, error) {
	if !s.managed() {
		ids := make([]string, len(names))
		for i, n := range names {
			ids[i] = parent.Child(n).String()
		}
		ids, err := s.unmanagedWithVersions(ctx, ids)
		for i, sid := range ids {
			id, _ := api.ParseID(sid, "")
			ids[i] = id.Name()
		}
		return ids, err
	}
	var out []string
	for _, n := range names {
		if s.table.HighestVersion(parent.Child(n).String()) > 0 {
			out = append(out, n)
		}
	}
	return out, nil
}

// ListAllTables lists every table of the catalog by its full id
// ($-joined), in order.
func (s *Service) ListAllTables(ctx context.Context, req api.ListTablesRequest) (*api.ListTablesResponse, error) {
	if err := s.table.Sync(ctx); err != nil {
		return nil, err
	}
	visible, err := s.visibility(ctx)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, r := range s.table.Objects() {
		if r.ObjectType != manifesttable.TypeTable {
			continue
		}
		if visible != nil {
			if id, _ := api.ParseID(r.ObjectID, ""); !visible(id, true) {
				continue
			}
		}
		if req.IncludeDeclared != nil && !*req.IncludeDeclared && s.managed() && s.table.HighestVersion(r.ObjectID) == 0 {
			continue
		}
		ids = append(ids, r.ObjectID)
	}
	if req.IncludeDeclared != nil && !*req.IncludeDeclared && !s.managed() {
		var err error
		if ids, err = s.unmanagedWithVersions(ctx, ids); err != nil {
			return nil, err
		}
	}
	sort.Strings(ids)
	out, token, err := page(ids, req.PageToken, req.Limit)
	if err != nil {
		return nil, err
	}
	return &api.ListTablesResponse{Tables: out, PageToken: token}, nil
}

// DeregisterTable forgets a table; its data stays where it is.
func (s *Service) DeregisterTable(ctx context.Context, req api.DeregisterTableRequest) (*api.DeregisterTableResponse, error) {
	return s.dropTable(ctx, req.ID, false)
}

// DropTable forgets a table and deletes its data.
func (s *Service) DropTable(ctx context.Context, req api.DropTableRequest) (*api.DropTableResponse, error) {
	return s.dropTable(ctx, req.ID, true)
}

func (s *Service) dropTable(ctx context.Context, id api.ID, data bool) (*api.DropTableResponse, error) {
	if err := tableID(id); err != nil {
		return nil, err
	}
	r, _, err := s.row(ctx, manifesttable.TypeTable, id)
	if err != nil {
		return nil, err
	}
	keep := data && s.retains() // DropTable keeps the table recoverable
	var loc, trash string
	err = s.changeIndex(ctx, "table "+strconv.Quote(id.String()), func(c *indexChange) error {
		var err error
		if loc, err = s.tableLoc(ctx, id); err != nil {
			return err
		}
		if !data {
			if err := s.keepDeregistered(ctx, loc); err != nil {
				return err
			}
		}
		c.tableAt(id, loc, errStale, errStale)
		c.removeTable(id, loc, !data) // a deregistration's data is nobody's now
		if !keep {
			return nil
		}
		s.untrash(ctx, trash) // an earlier build's
		trash, err = s.trashDrop(ctx, id, manifesttable.TypeTable, []indexed{{id: id, typ: manifesttable.TypeTable, loc: loc}})
		return err
	})
	if err != nil {
		s.settleTrash(ctx, trash, id, manifesttable.TypeTable)
		return nil, err
	}
	s.forgetTable(ctx, loc, data && !keep)
	return &api.DropTableResponse{ID: id, Properties: propsOf(r), Location: s.root.uri(loc)}, nil
}

// RenameTable gives a table a new name and/or namespace; its location and
// versions stay.
func (s *Service) RenameTable(ctx context.Context, req api.RenameTableRequest) (*api.RenameTableResponse, error) {
	if err := tableID(req.ID); err != nil {
		return nil, err
	}
	parent := req.ID.Parent()
	if req.NewNamespaceID != nil {
		parent = *req.NewNamespaceID
	}
	if req.NewTableName == "" {
		return nil, nserror.New(nserror.InvalidInput, "RenameTable needs new_table_name")
	}
	newID := parent.Child(req.NewTableName)
	if err := tableID(newID); err != nil {
		return nil, err
	}
	if newID.Equal(req.ID) {
		return nil, nserror.New(nserror.InvalidInput, "table %q already has that name", req.ID.String())
	}
	if err := s.mustBe(ctx, req.ID, manifesttable.TypeTable); err != nil {
		return nil, err
	}
	r, ok, err := s.row(ctx, manifesttable.TypeTable, req.ID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, nserror.New(nserror.TableNotFound, "table %q does not exist", req.ID.String())
	}
	r.ObjectID = newID.String()
	r.CommittedAt = s.now().UTC()
	b, err := manifesttable.MarshalRow(r)
	if err != nil {
		return nil, err
	}
	err = s.changeIndex(ctx, "table "+strconv.Quote(req.ID.String()), func(c *indexChange) error {
		loc, err := s.tableLoc(ctx, req.ID)
		if err != nil {
			return err
		}
		c.tableAt(req.ID, loc, errStale, errStale)
		if err := s.parentOf(ctx, c, newID, nserror.New(nserror.NamespaceNotFound, "namespace %q does not exist", parent.String())); err != nil {
			return err
		}
		typ, err := s.objectType(ctx, newID)
		if err != nil {
			return err
		}
		if typ != "" {
			return nserror.New(nserror.TableAlreadyExists, "%q already exists (a %s)", newID.String(), typ)
		}
		c.guard(errStale, redisstate.GuardAbsent(c.k.Obj(), newID.String()))
		c.writes = append(c.writes,
			redisstate.HDel(c.k.Obj(), req.ID.String()),
			redisstate.HDel(c.k.Loc(), req.ID.String()),
			redisstate.SRem(c.k.kids(req.ID.Parent()), req.ID.String()))
		c.indexTable(newID, loc)
		c.log = append(c.log, []string{commitlog.KindField, commitlog.RenameTable, "from", req.ID.String(), "to", newID.String()})
		c.event(api.Event{Type: api.EventTableRenamed, ID: newID, From: req.ID, Location: loc})
		c.deleteRow(manifesttable.TypeTable, req.ID.String())
		c.put(b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &api.RenameTableResponse{}, nil
}
