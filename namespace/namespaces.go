package namespace

import (
	"context"
	"sort"

	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
)

// CreateNamespace creates a namespace. Mode Create (default) fails with
// NamespaceAlreadyExists when it exists; ExistOk keeps the existing one;
// Overwrite replaces its properties (it must be empty).
func (s *Service) CreateNamespace(ctx context.Context, req CreateNamespaceRequest) (*CreateNamespaceResponse, error) {
	if err := req.ID.Validate("namespace"); err != nil {
		return nil, err
	}
	mode, err := normMode(req.Mode, ModeCreate, ModeCreate, ModeExistOk, ModeOverwrite)
	if err != nil {
		return nil, err
	}
	if req.ID.IsRoot() {
		if mode == ModeCreate {
			return nil, nserror.New(nserror.NamespaceAlreadyExists, "the root namespace always exists")
		}
		return &CreateNamespaceResponse{Properties: Properties{}}, nil
	}
	props := req.Properties
	if props == nil {
		props = Properties{}
	}
	meta, err := propsJSON(props)
	if err != nil {
		return nil, err
	}
	row := manifesttable.Row{ObjectType: manifesttable.TypeNamespace, ObjectID: req.ID.String(), Metadata: meta, CommittedAt: s.now().UTC()}
	req.Partition.apply(&row)
	b, err := manifesttable.MarshalRow(row)
	if err != nil {
		return nil, err
	}
	id := req.ID.String()
	v, err := s.createObject(ctx, redisstate.Object{ID: id, Parent: req.ID.Parent().String(), Type: manifesttable.TypeNamespace, Row: string(b)}, mode)
	if err != nil {
		return nil, err
	}
	switch v.Status {
	case redisstate.OK:
		if err := s.durable(ctx, v.Seq); err != nil {
			return nil, err
		}
		return &CreateNamespaceResponse{Properties: props}, nil
	case redisstate.Existing:
		r, _, err := s.row(ctx, manifesttable.TypeNamespace, req.ID)
		if err != nil {
			return nil, err
		}
		return &CreateNamespaceResponse{Properties: propsOf(r)}, nil
	case redisstate.NoParent:
		return nil, nserror.New(nserror.NamespaceNotFound, "parent namespace %q of %q does not exist", req.ID.Parent().String(), id)
	case redisstate.Exists:
		if v.Type == manifesttable.TypeTable {
			return nil, nserror.New(nserror.NamespaceAlreadyExists, "%q is already a table", id)
		}
		return nil, nserror.New(nserror.NamespaceAlreadyExists, "namespace %q already exists", id)
	case redisstate.NotEmpty:
		return nil, nserror.New(nserror.NamespaceNotEmpty, "namespace %q is not empty; it cannot be overwritten", id)
	}
	return nil, redisstate.UnexpectedReply("create_object.lua", v)
}

// createObject runs create_object.lua for o in a request's mode
// (ModeCreate, ModeExistOk, ModeOverwrite).
func (s *Service) createObject(ctx context.Context, o redisstate.Object, mode string) (redisstate.CreateObjectReply, error) {
	m := redisstate.CreateNew
	switch mode {
	case ModeExistOk:
		m = redisstate.CreateExistOK
	case ModeOverwrite:
		m = redisstate.CreateOverwrite
	}
	var r redisstate.CreateObjectReply
	err := s.mutate(ctx, func() (redisstate.Status, error) {
		var err error
		r, err = s.rs.CreateObject(ctx, o, m)
		return r.Status, err
	})
	return r, err
}

// DescribeNamespace returns a namespace's properties.
func (s *Service) DescribeNamespace(ctx context.Context, req DescribeNamespaceRequest) (*DescribeNamespaceResponse, error) {
	if err := req.ID.Validate("namespace"); err != nil {
		return nil, err
	}
	if req.ID.IsRoot() {
		return &DescribeNamespaceResponse{Properties: Properties{}}, nil
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
	return &DescribeNamespaceResponse{Properties: propsOf(r)}, nil
}

// mustBe fails with the NotFound code of typ unless id is an object of
// that type.
func (s *Service) mustBe(ctx context.Context, id ID, typ string) error {
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
func (s *Service) NamespaceExists(ctx context.Context, req NamespaceExistsRequest) error {
	if err := req.ID.Validate("namespace"); err != nil {
		return err
	}
	return s.mustBe(ctx, req.ID, manifesttable.TypeNamespace)
}

// ListNamespaces lists the namespaces directly inside a namespace, by name,
// in order; without a limit, all of them.
func (s *Service) ListNamespaces(ctx context.Context, req ListNamespacesRequest) (*ListNamespacesResponse, error) {
	names, err := s.children(ctx, req.ID, manifesttable.TypeNamespace)
	if err != nil {
		return nil, err
	}
	out, token, err := page(names, req.PageToken, req.Limit)
	if err != nil {
		return nil, err
	}
	return &ListNamespacesResponse{Namespaces: out, PageToken: token}, nil
}

// children lists the names of a namespace's children of one type, sorted,
// after catching up with what other processes made durable.
func (s *Service) children(ctx context.Context, parent ID, typ string) ([]string, error) {
	if err := parent.Validate("namespace"); err != nil {
		return nil, err
	}
	if err := s.mustBe(ctx, parent, manifesttable.TypeNamespace); err != nil {
		return nil, err
	}
	if err := s.table.Sync(ctx); err != nil {
		return nil, err
	}
	var names []string
	for _, r := range s.table.Children(parent.String()) {
		if r.ObjectType == typ {
			id, _ := ParseID(r.ObjectID, "")
			names = append(names, id.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// DropNamespace drops a namespace. Mode Fail (default) reports a missing
// namespace as NamespaceNotFound, Skip succeeds. Behavior Restrict
// (default) refuses a namespace that holds anything (NamespaceNotEmpty);
// Cascade drops everything inside it, tables with their data.
func (s *Service) DropNamespace(ctx context.Context, req DropNamespaceRequest) (*DropNamespaceResponse, error) {
	if err := req.ID.Validate("namespace"); err != nil {
		return nil, err
	}
	mode, err := normMode(req.Mode, ModeFail, ModeFail, ModeSkip)
	if err != nil {
		return nil, err
	}
	behavior, err := normMode(req.Behavior, BehaviorRestrict, BehaviorRestrict, BehaviorCascade)
	if err != nil {
		return nil, err
	}
	if req.ID.IsRoot() {
		return nil, nserror.New(nserror.InvalidInput, "the root namespace cannot be dropped")
	}
	for attempt := 0; attempt < 5; attempt++ {
		if err := s.mustBe(ctx, req.ID, manifesttable.TypeNamespace); err != nil {
			if mode == ModeSkip && nserror.CodeOf(err) == nserror.NamespaceNotFound {
				return &DropNamespaceResponse{}, nil
			}
			return nil, err
		}
		objs := []redisstate.ObjectRef{{ID: req.ID.String(), Type: manifesttable.TypeNamespace}}
		if behavior == BehaviorCascade {
			if err := s.table.Sync(ctx); err != nil {
				return nil, err
			}
			objs = append(objs, s.descendants(req.ID.String())...)
		}
		locs, changed, err := s.drop(ctx, objs, behavior == BehaviorRestrict)
		if err != nil {
			if mode == ModeSkip && nserror.CodeOf(err) == nserror.NamespaceNotFound {
				return &DropNamespaceResponse{}, nil
			}
			return nil, err
		}
		if changed {
			continue // something was created inside meanwhile: list again
		}
		for _, loc := range locs {
			s.forgetTable(ctx, loc, true)
		}
		return &DropNamespaceResponse{}, nil
	}
	return nil, nserror.New(nserror.ConcurrentModification, "namespace %q kept changing while it was dropped", req.ID.String())
}

// descendants lists everything inside namespace id, depth first.
func (s *Service) descendants(id string) []redisstate.ObjectRef {
	var out []redisstate.ObjectRef
	for _, r := range s.table.Children(id) {
		out = append(out, redisstate.ObjectRef{ID: r.ObjectID, Type: r.ObjectType})
		if r.ObjectType == manifesttable.TypeNamespace {
			out = append(out, s.descendants(r.ObjectID)...)
		}
	}
	return out
}

// drop runs drop_objects.lua for objs (the top one first) and waits until
// the drop is durable. It returns the dropped tables' locations; changed
// reports that a namespace listed has children not listed (retry).
func (s *Service) drop(ctx context.Context, objs []redisstate.ObjectRef, restrict bool) (locs []string, changed bool, err error) {
	topID, _ := ParseID(objs[0].ID, "")
	var v redisstate.DropObjectsReply
	err = s.mutate(ctx, func() (redisstate.Status, error) {
		var err error
		v, err = s.rs.DropObjects(ctx, topID.Parent().String(), objs, restrict)
		return v.Status, err
	})
	if err != nil {
		return nil, false, err
	}
	switch v.Status {
	case redisstate.OK:
		if err := s.durable(ctx, v.Seq); err != nil {
			return nil, false, err
		}
		return v.Locations, false, nil
	case redisstate.Changed:
		return nil, true, nil
	case redisstate.NotEmpty:
		return nil, false, nserror.New(nserror.NamespaceNotEmpty, "namespace %q is not empty", objs[0].ID)
	case redisstate.NotFound:
		if objs[0].Type == manifesttable.TypeTable {
			return nil, false, nserror.New(nserror.TableNotFound, "table %q does not exist", v.Missing)
		}
		if v.Missing != objs[0].ID {
			return nil, true, nil // something inside went away meanwhile
		}
		return nil, false, nserror.New(nserror.NamespaceNotFound, "namespace %q does not exist", v.Missing)
	}
	return nil, false, redisstate.UnexpectedReply("drop_objects.lua", v)
}

// forgetTable removes a dropped table's claim state and, with data, its
// files. Failures are logged: the table is already gone from the catalog.
func (s *Service) forgetTable(ctx context.Context, loc string, data bool) {
	if err := s.claims.Delete(ctx, loc); err != nil {
		s.log.Warn("namespace: forgetting a dropped table's versions", "location", loc, "err", err)
	}
	if data {
		if err := s.markDropped(ctx, loc); err != nil {
			s.log.Warn("namespace: marking a dropped table's location for gc", "location", loc, "err", err)
		}
		if _, err := s.objs.DeletePrefix(ctx, loc+"/"); err != nil {
			s.log.Warn("namespace: deleting a dropped table's data", "location", loc, "err", err)
		}
	}
}
