package namespace

import (
	"context"
	"errors"
	"sort"
	"strconv"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
)

// CreateNamespace creates a namespace. Mode Create (default) fails with
// NamespaceAlreadyExists when it exists; ExistOk keeps the existing one;
// Overwrite replaces its properties (it must be empty).
func (s *Service) CreateNamespace(ctx context.Context, req api.CreateNamespaceRequest) (*api.CreateNamespaceResponse, error) {
	return s.CreatePartitionNamespace(ctx, req, nil)
}

// CreatePartitionNamespace is CreateNamespace making the row a partition
// row by part (nil: a plain namespace). Go API only: the planner calls it;
// no request body can.
func (s *Service) CreatePartitionNamespace(ctx context.Context, req api.CreateNamespaceRequest, part *PartitionRow) (*api.CreateNamespaceResponse, error) {
	if err := req.ID.Validate("namespace"); err != nil {
		return nil, err
	}
	mode, err := normMode(req.Mode, api.ModeCreate, api.ModeCreate, api.ModeExistOk, api.ModeOverwrite)
	if err != nil {
		return nil, err
	}
	if req.ID.IsRoot() {
		if mode == api.ModeCreate {
			return nil, nserror.New(nserror.NamespaceAlreadyExists, "the root namespace always exists")
		}
		return &api.CreateNamespaceResponse{Properties: api.Properties{}}, nil
	}
	if err := s.mayRetain(ctx, target{id: req.ID, create: true}, req.Properties); err != nil {
		return nil, err
	}
	props := req.Properties
	if props == nil {
		props = api.Properties{}
	}
	meta, err := propsJSON(props)
	if err != nil {
		return nil, err
	}
	row := manifesttable.Row{ObjectType: manifesttable.TypeNamespace, ObjectID: req.ID.String(), Metadata: meta, CommittedAt: s.now().UTC()}
	part.apply(&row)
	b, err := manifesttable.MarshalRow(row)
	if err != nil {
		return nil, err
	}
	id := req.ID.String()
	err = s.changeIndex(ctx, "namespace "+strconv.Quote(id), func(c *indexChange) error {
		noParent := nserror.New(nserror.NamespaceNotFound, "parent namespace %q of %q does not exist", req.ID.Parent().String(), id)
		if !c.stale && mode != api.ModeOverwrite {
			// The common case, assumed: the id is free (one claim, no
			// read); otherwise the guard fails and the index is read.
			c.parentIsNamespace(req.ID, noParent)
			c.addNamespace(req.ID, b, errStale)
			return nil
		}
		if err := s.parentOf(ctx, c, req.ID, noParent); err != nil {
			return err
		}
		typ, err := s.objectType(ctx, req.ID)
		if err != nil {
			return err
		}
		switch {
		case typ == manifesttable.TypeTable:
			return nserror.New(nserror.NamespaceAlreadyExists, "%q is already a table", id)
		case typ != "" && mode == api.ModeCreate:
			return nserror.New(nserror.NamespaceAlreadyExists, "namespace %q already exists", id)
		case typ != "" && mode == api.ModeExistOk:
			return errUnchanged
		}
		if typ == "" {
			c.addNamespace(req.ID, b, errStale)
			return nil
		}
		// Overwrite: the namespace stays in the index, empty; its row is replaced.
		c.guard(errStale, redisstate.GuardEq(c.k.Obj(), id, manifesttable.TypeNamespace))
		c.guard(nserror.New(nserror.NamespaceNotEmpty, "namespace %q is not empty; it cannot be overwritten", id), redisstate.GuardEmpty(c.k.Kids(id)))
		c.put(b)
		c.event(api.Event{Type: api.EventNamespaceUpdated, ID: req.ID, Properties: props})
		return nil
	})
	if errors.Is(err, errUnchanged) {
		r, _, err := s.row(ctx, manifesttable.TypeNamespace, req.ID)
		if err != nil {
			return nil, err
		}
		return &api.CreateNamespaceResponse{Properties: propsOf(r)}, nil
	}
	if err != nil {
		return nil, err
	}
	return &api.CreateNamespaceResponse{Properties: props}, nil
}

// DescribeNamespace returns a namespace's properties.
func (s *Service) DescribeNamespace(ctx context.Context, req api.DescribeNamespaceRequest) (*api.DescribeNamespaceResponse, error) {
	if err := req.ID.Validate("namespace"); err != nil {
		return nil, err
	}
	if req.ID.IsRoot() {
		return &api.DescribeNamespaceResponse{Properties: api.Properties{}}, nil
	}
	if err := s.mustBe(ctx, req.ID, manifesttable.TypeNamespace); err != nil {
		return nil, err
	}
	r, ok, err := s.row(ctx, manifesttable.TypeNamespace, req.ID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, nserror.New(nserror.NamespaceNotFound, "namespace %q does not exist", req.ID.String())
	}
	return &api.DescribeNamespaceResponse{Properties: propsOf(r)}, nil
}

// mustBe fails with the NotFound code of typ unless id is an object of
// that type.
func (s *Service) mustBe(ctx context.Context, id api.ID, typ string) error {
	t, err := s.objectType(ctx, id)
	if err != nil {
		return err
	}
	if t == typ {
		return nil
	}
	if typ == manifesttable.TypeTable {
		return nserror.New(nserror.TableNotFound, "table %q does not exist", id.String())
	}
	return nserror.New(nserror.NamespaceNotFound, "namespace %q does not exist", id.String())
}

// NamespaceExists succeeds when the namespace exists, else
// NamespaceNotFound.
func (s *Service) NamespaceExists(ctx context.Context, req api.NamespaceExistsRequest) error {
	if err := req.ID.Validate("namespace"); err != nil {
		return err
	}
	return s.mustBe(ctx, req.ID, manifesttable.TypeNamespace)
}

// ListNamespaces lists the namespaces directly inside a namespace, by name,
// in order; without a limit, all of them.
func (s *Service) ListNamespaces(ctx context.Context, req api.ListNamespacesRequest) (*api.ListNamespacesResponse, error) {
	names, err := s.children(ctx, req.ID, manifesttable.TypeNamespace)
	if err != nil {
		return nil, err
	}
	out, token, err := page(names, req.PageToken, req.Limit)
	if err != nil {
		return nil, err
	}
	return &api.ListNamespacesResponse{Namespaces: out, PageToken: token}, nil
}

// children lists the names of a namespace's children of one type, sorted,
// after catching up with what other processes made durable.
func (s *Service) children(ctx context.Context, parent api.ID, typ string) ([]string, error) {
	if err := parent.Validate("namespace"); err != nil {
		return nil, err
	}
	if err := s.mustBe(ctx, parent, manifesttable.TypeNamespace); err != nil {
		return nil, err
	}
	if err := s.table.Sync(ctx); err != nil {
		return nil, err
	}
	visible, err := s.visibility(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, r := range s.table.Children(parent.String()) {
		if r.ObjectType == typ {
			id, _ := api.ParseID(r.ObjectID, "")
			if visible == nil || visible(id, typ == manifesttable.TypeTable) {
				names = append(names, id.Name())
			}
		}
	}
	sort.Strings(names)
	return names, nil
}

// DropNamespace drops a namespace. Mode Fail (default) reports a missing
// namespace as NamespaceNotFound, Skip succeeds. Behavior Restrict
// (default) refuses a namespace that holds anything (NamespaceNotEmpty);
// Cascade drops everything inside it, tables with their data.
func (s *Service) DropNamespace(ctx context.Context, req api.DropNamespaceRequest) (*api.DropNamespaceResponse, error) {
	if err := req.ID.Validate("namespace"); err != nil {
		return nil, err
	}
	mode, err := normMode(req.Mode, api.ModeFail, api.ModeFail, api.ModeSkip)
	if err != nil {
		return nil, err
	}
	behavior, err := normMode(req.Behavior, api.BehaviorRestrict, api.BehaviorRestrict, api.BehaviorCascade)
	if err != nil {
		return nil, err
	}
	if req.ID.IsRoot() {
		return nil, nserror.New(nserror.InvalidInput, "the root namespace cannot be dropped")
	}
	var gone []indexed
	var trash string // the record of the drop, when it is kept
	err = s.changeIndex(ctx, "namespace "+strconv.Quote(req.ID.String()), func(c *indexChange) error {
		gone = gone[:0]
		if err := s.mustBe(ctx, req.ID, manifesttable.TypeNamespace); err != nil {
			return err
		}
		if err := s.removeTree(ctx, c, req.ID, behavior == api.BehaviorRestrict, &gone); err != nil {
			return err
		}
		if !s.retains() {
			return nil
		}
		s.untrash(ctx, trash) // an earlier build's
		var err error
		trash, err = s.trashDrop(ctx, req.ID, manifesttable.TypeNamespace, gone)
		return err
	})
	if err != nil {
		s.settleTrash(ctx, trash, req.ID, manifesttable.TypeNamespace)
	}
	if mode == api.ModeSkip && nserror.CodeOf(err) == nserror.NamespaceNotFound {
		return &api.DropNamespaceResponse{}, nil
	}
	if err != nil {
		return nil, err
	}
	for _, o := range gone {
		if o.typ == manifesttable.TypeTable {
			s.forgetTable(ctx, o.loc, !s.retains())
		}
	}
	return &api.DropNamespaceResponse{}, nil
}

// forgetTable removes a dropped table's claim state and, with data, its
// files (but what another table holds: Sparing), then releases its
// directory. Failures are logged: the table is already gone from the
// catalog, and a directory whose deletion failed stays reserved (its
// tombstone lets gc finish and release it).
func (s *Service) forgetTable(ctx context.Context, loc string, data bool) {
	if err := s.claims.Delete(ctx, loc); err != nil {
		s.log.Warn("namespace: forgetting a dropped table's versions", "location", loc, "err", err)
	}
	if !data {
		return
	}
	sp, err := s.Index().Sparing(ctx, loc, nil)
	if err == nil {
		err = s.deleteTableData(ctx, loc, sp)
	}
	if err != nil {
		s.log.Warn("namespace: deleting a dropped table's files", "location", loc, "err", err)
		return
	}
	if err := s.Index().ReleaseLocation(ctx, loc); err != nil {
		s.log.Warn("namespace: releasing a dropped table's directory", "location", loc, "err", err)
	}
}
