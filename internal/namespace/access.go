package namespace

import (
	"context"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/nserror"
)

// Access control, once for every surface. A call that came through a
// surface carries its caller (auth.WithPrincipal); the caller's role on
// an object is its catalog-wide role or what the catalog's grants give
// it on a namespace holding the object (auth.Grants.RoleOn). Every
// operation of Ops is checked here against each object its request
// names, before anything of it runs; the lists leave out what the caller
// may not read. A call with no caller (the Go API) holds the catalog.
//
// What a caller may not read does not exist for it: such an object is
// answered with the very error a missing one gets, decided before the
// catalog is looked at, so that neither the answer nor its time says
// whether it exists. A namespace that holds a subtree the caller may
// read leads to it: the caller may see it exists and list its way down
// (ListNamespaces, NamespaceExists, ListTables), and nothing more. An
// object the caller may read but not change is refused with
// PermissionDenied.

// A target is one object a request acts on.
type target struct {
	id     api.ID
	table  bool // a table (else a namespace)
	browse bool // a look at a namespace that leading to a grant allows
	create bool // an object the request makes: missing, its parent is
}

type needKey struct{}

// withNeed is ctx of an operation that needs role need (Ops' Write).
func withNeed(ctx context.Context, need auth.Role) context.Context {
	return context.WithValue(ctx, needKey{}, need)
}

func init() {
	for i := range Ops {
		run, need := Ops[i].Run, auth.Read
		switch {
		case Ops[i].Admin:
			need = auth.Admin
		case Ops[i].Write:
			need = auth.Write
		}
		Ops[i].Run = func(ctx context.Context, s *Service, body []byte, rest *REST) (any, error) {
			if err := s.Access().Permits(ctx, need); err != nil {
				return nil, err
			}
			return run(withNeed(ctx, need), s, body, rest)
		}
	}
}

// authorizeRequest checks the caller of ctx against every object req
// names, with the role its operation needs.
func (s *Service) authorizeRequest(ctx context.Context, req any) error {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return nil
	}
	need, known := ctx.Value(needKey{}).(auth.Role)
	if !known {
		need = auth.Write
	}
	if p.Role >= need {
		return nil
	}
	ts, err := targets(req)
	if err != nil {
		return err
	}
	if len(ts) == 0 && need > auth.Read {
		// A change that names nothing (an empty batch) is the catalog's.
		return nserror.New(nserror.PermissionDenied, "this operation needs the %s role; %q has %s", need, p.Name, p.Role)
	}
	return s.authorize(ctx, p, need, ts...)
}

// Permits fails with PermissionDenied, before anything of a request is
// read, when its caller holds role need nowhere: neither catalog-wide nor
// by any grant (a reader's write is refused whatever its body says).
func (ac Access) Permits(ctx context.Context, need auth.Role) error {
	s := ac.s
	p, ok := auth.PrincipalFrom(ctx)
	if !ok || p.Role >= need {
		return nil
	}
	gs, err := s.Access().Grants(ctx)
	if err != nil {
		return err
	}
	if gs.Reaches(p, need) {
		return nil
	}
	return nserror.New(nserror.PermissionDenied, "this operation needs the %s role; %q has %s, and no grant gives it more", need, p.Name, p.Role)
}

// authorize checks p against each target.
func (s *Service) authorize(ctx context.Context, p auth.Principal, need auth.Role, ts ...target) error {
	if p.Role >= need {
		return nil
	}
	gs, err := s.Access().Grants(ctx)
	if err != nil {
		return err
	}
	for _, t := range ts {
		if err := allowed(gs, p, need, t); err != nil {
			return err
		}
	}
	return nil
}

// allowed is authorize's answer for one target.
func allowed(gs auth.Grants, p auth.Principal, need auth.Role, t target) error {
	r := gs.RoleOn(p, t.id)
	switch {
	case r >= need:
		return nil
	case r >= auth.Read:
		return denied(p, need, r, t.id)
	case !t.table && gs.Leads(p, t.id):
		if t.browse && need == auth.Read {
			return nil
		}
		return denied(p, need, r, t.id)
	case t.create:
		parent := t.id.Parent()
		if gs.RoleOn(p, parent) >= auth.Read || gs.Leads(p, parent) {
			return denied(p, need, r, t.id)
		}
		return missing(false, parent)
	}
	return missing(t.table, t.id)
}

func denied(p auth.Principal, need, has auth.Role, id api.ID) error {
	return nserror.New(nserror.PermissionDenied, "this operation needs the %s role on %q; %q has %s there", need, id.String(), p.Name, has)
}

// missing is the error of an object that does not exist, word for word
// the service's own.
func missing(table bool, id api.ID) error {
	if table {
		return nserror.New(nserror.TableNotFound, "table %q does not exist", id.String())
	}
	return nserror.New(nserror.NamespaceNotFound, "namespace %q does not exist", id.String())
}

// AuthorizeNamespace checks that the caller of ctx may act on namespace
// id with role need (for the planner's operations: a partitioned table
// is a namespace); a caller that may not read it is told it does not
// exist.
func (ac Access) AuthorizeNamespace(ctx context.Context, need auth.Role, id api.ID) error {
	s := ac.s
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return nil
	}
	return s.authorize(ctx, p, need, target{id: id})
}

// mayWrite reports whether the caller of ctx may write object id (the
// Go API may).
func (s *Service) mayWrite(ctx context.Context, id api.ID) (bool, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok || p.Role >= auth.Write {
		return true, nil
	}
	gs, err := s.Access().Grants(ctx)
	if err != nil {
		return false, err
	}
	return gs.RoleOn(p, id) >= auth.Write, nil
}

// visibility is what the caller of ctx may see in a list: nil when it
// may see everything, else whether it may see the object id (a namespace
// also when it leads to a grant).
func (s *Service) visibility(ctx context.Context) (func(id api.ID, table bool) bool, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok || p.Role >= auth.Read {
		return nil, nil
	}
	gs, err := s.Access().Grants(ctx)
	if err != nil {
		return nil, err
	}
	return func(id api.ID, table bool) bool {
		return gs.RoleOn(p, id) >= auth.Read || (!table && gs.Leads(p, id))
	}, nil
}

// Readable is what the caller of ctx may read: everything (all), or the
// subtrees of these namespaces (for the SQL engine's filter).
func (ac Access) Readable(ctx context.Context) (all bool, subtrees []api.ID, err error) {
	s := ac.s
	p, ok := auth.PrincipalFrom(ctx)
	if !ok || p.Role >= auth.Read {
		return true, nil, nil
	}
	gs, err := s.Access().Grants(ctx)
	if err != nil {
		return false, nil, err
	}
	all, trees := gs.Readable(p)
	for _, t := range trees {
		subtrees = append(subtrees, api.ID(t))
	}
	return all, subtrees, nil
}

// targets are the objects req acts on.
func targets(req any) ([]target, error) {
	ns := func(id api.ID) target { return target{id: id} }
	table := func(id api.ID) target { return target{id: id, table: true} }
	switch r := req.(type) {
	case *api.CreateNamespaceRequest:
		return []target{{id: r.ID, create: true}}, nil
	case *api.ListNamespacesRequest:
		return []target{{id: r.ID, browse: true}}, nil
	case *api.NamespaceExistsRequest:
		return []target{{id: r.ID, browse: true}}, nil
	case *api.DescribeNamespaceRequest:
		return []target{ns(r.ID)}, nil
	case *api.DropNamespaceRequest:
		return []target{ns(r.ID)}, nil
	case *api.NamespaceGrantRequest:
		return []target{ns(r.ID)}, nil
	case *api.ListNamespaceGrantsRequest:
		return []target{ns(r.ID)}, nil
	case *api.ListTablesRequest:
		if r.ID == nil { // ListAllTables: the list leaves out what is hidden
			return nil, nil
		}
		return []target{{id: r.ID, browse: true}}, nil
	case *api.DeclareTableRequest:
		return []target{{id: r.ID, table: true, create: true}}, nil
	case *api.RegisterTableRequest:
		return []target{{id: r.ID, table: true, create: true}}, nil
	case *api.UndropTableRequest:
		return []target{{id: r.ID, table: true, create: true}}, nil
	case *api.UndropNamespaceRequest:
		return []target{{id: r.ID, create: true}}, nil
	case *api.RenameTableRequest:
		dest := r.ID.Parent()
		if r.NewNamespaceID != nil {
			dest = *r.NewNamespaceID
		}
		return []target{table(r.ID), {id: dest.Child(r.NewTableName), table: true, create: true}}, nil
	case *api.BatchCreateTableVersionsRequest:
		out := make([]target, len(r.Entries))
		for i, e := range r.Entries {
			out[i] = table(e.ID)
		}
		return out, nil
	case *api.BatchCommitTablesRequest:
		var out []target
		for _, op := range r.Operations {
			switch {
			case op.DeclareTable != nil:
				out = append(out, target{id: op.DeclareTable.ID, table: true, create: true})
			case op.CreateTableVersion != nil:
				out = append(out, table(op.CreateTableVersion.ID))
			case op.DeleteTableVersions != nil:
				out = append(out, table(op.DeleteTableVersions.ID))
			case op.DeregisterTable != nil:
				out = append(out, table(op.DeregisterTable.ID))
			case op.AssertTableVersion != nil:
				out = append(out, table(op.AssertTableVersion.ID))
			case op.SetReadVersion != nil:
				out = append(out, table(op.SetReadVersion.ID))
			}
		}
		return out, nil
	}
	if id := objectID(req); id != nil { // the operations on one table
		return []target{table(*id)}, nil
	}
	return nil, nserror.New(nserror.Internal, "no access rule for a %T", req)
}
