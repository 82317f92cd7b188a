package namespace

import (
	"context"
	"fmt"
	"sort"

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
	v, err := s.mutate(ctx, s.createS,
		[]string{s.k.Epoch(), s.k.Obj(), s.k.Loc(), s.k.ByLoc(), s.k.kids(req.ID.Parent()), s.k.Kids(id), s.k.Seq(), s.k.Log()},
		id, req.ID.Parent().String(), manifesttable.TypeNamespace, lower(mode), "", string(b), s.cfg.LogMaxLen)
	if err != nil {
		return nil, err
	}
	switch v[0] {
	case "OK":
		if err := s.durable(ctx, v[1]); err != nil {
			return nil, err
		}
		return &CreateNamespaceResponse{Properties: props}, nil
	case "EXISTING":
		r, _, err := s.row(ctx, manifesttable.TypeNamespace, req.ID)
		if err != nil {
			return nil, err
		}
		return &CreateNamespaceResponse{Properties: propsOf(r)}, nil
	case "NOPARENT":
		return nil, nserror.New(nserror.NamespaceNotFound, "parent namespace %q of %q does not exist", req.ID.Parent().String(), id)
	case "EXISTS":
		if v[1] == manifesttable.TypeTable {
			return nil, nserror.New(nserror.NamespaceAlreadyExists, "%q is already a table", id)
		}
		return nil, nserror.New(nserror.NamespaceAlreadyExists, "namespace %q already exists", id)
	case "NOTEMPTY":
		return nil, nserror.New(nserror.NamespaceNotEmpty, "namespace %q is not empty; it cannot be overwritten", id)
	}
	return nil, fmt.Errorf("namespace: create_object replied %v", v)
}

func lower(mode string) string {
	switch mode {
	case ModeExistOk:
		return "existok"
	case ModeOverwrite:
		return "overwrite"
	}
	return "create"
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
		objs := []objRef{{id: req.ID.String(), typ: manifesttable.TypeNamespace}}
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

type objRef struct{ id, typ string }

// descendants lists everything inside namespace id, depth first.
func (s *Service) descendants(id string) []objRef {
	var out []objRef
	for _, r := range s.table.Children(id) {
		out = append(out, objRef{id: r.ObjectID, typ: r.ObjectType})
		if r.ObjectType == manifesttable.TypeNamespace {
			out = append(out, s.descendants(r.ObjectID)...)
		}
	}
	return out
}

// drop runs drop_objects.lua for objs (the top one first) and waits until
// the drop is durable. It returns the dropped tables' locations; changed
// reports that a namespace listed has children not listed (retry).
func (s *Service) drop(ctx context.Context, objs []objRef, restrict bool) (locs []string, changed bool, err error) {
	topID, _ := ParseID(objs[0].id, "")
	keys := []string{s.k.Epoch(), s.k.Obj(), s.k.Loc(), s.k.ByLoc(), s.k.Seq(), s.k.Log(), s.k.kids(topID.Parent())}
	r := "0"
	if restrict {
		r = "1"
	}
	args := []any{s.cfg.LogMaxLen, r}
	for _, o := range objs {
		args = append(args, o.id, o.typ)
		if o.typ == manifesttable.TypeNamespace {
			keys = append(keys, s.k.Kids(o.id))
		}
	}
	v, err := s.mutate(ctx, s.dropS, keys, args...)
	if err != nil {
		return nil, false, err
	}
	switch v[0] {
	case "OK":
		if err := s.durable(ctx, v[1]); err != nil {
			return nil, false, err
		}
		for _, l := range v[2:] {
			locs = append(locs, fmt.Sprint(l))
		}
		return locs, false, nil
	case "CHANGED":
		return nil, true, nil
	case "NOTEMPTY":
		return nil, false, nserror.New(nserror.NamespaceNotEmpty, "namespace %q is not empty", objs[0].id)
	case "NOTFOUND":
		if objs[0].typ == manifesttable.TypeTable {
			return nil, false, nserror.New(nserror.TableNotFound, "table %q does not exist", v[1])
		}
		if fmt.Sprint(v[1]) != objs[0].id {
			return nil, true, nil // something inside went away meanwhile
		}
		return nil, false, nserror.New(nserror.NamespaceNotFound, "namespace %q does not exist", v[1])
	}
	return nil, false, fmt.Errorf("namespace: drop_objects replied %v", v)
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
