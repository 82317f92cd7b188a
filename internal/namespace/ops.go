package namespace

import (
	"context"

	"github.com/flightns/flightns/internal/audit"
	"github.com/flightns/flightns/nserror"
)

// Op is one Lance Namespace operation flightns serves: the one registry
// the REST routes and the Flight actions (with their roles and
// descriptions) are built from, and the docs' route tables are checked
// against (planner.Ops is its counterpart for partitioned tables).
//
// A surface runs an operation by its Run alone: the Flight action hands
// it the action's body, the REST route its body and a *REST with the
// path's id and the query. Neither surface knows an operation's request
// type; Run decodes into it, binds what REST adds, and calls the service.
type Op struct {
	// Name is the spec's operation name (also the metrics' op label).
	Name string
	// Path is the REST route after /v1/; {id} stands for the object id.
	Path string
	// Write is whether the operation changes the catalog: it needs the
	// write role (reads need the read role), and POST on REST.
	Write bool
	// Admin is whether it needs the admin role (on the namespace it
	// names: managing grants).
	Admin bool
	// Action is whether it is also a Flight action (the REST-only
	// CreateEmptyTable is a deprecated alias of DeclareTable).
	Action bool
	// Desc is one line for ListActions.
	Desc string
	// Run runs the operation on s.
	Run RunFunc
}

// RunFunc runs one operation: it decodes body (the operation's request
// model as JSON, strictly: DecodeRequest) into the request; on REST (rest
// non-nil) it binds the path's id and the query parameters into it; then
// it calls the service and returns the reply model, to be sent as JSON.
type RunFunc func(ctx context.Context, s *Service, body []byte, rest *REST) (any, error)

// REST is what a REST request adds to its JSON body.
type REST struct {
	// ID is the {id} of the route's path, parsed; nil on a route without
	// one (ParseID gives the root as ID{}, never nil). It is the
	// request's id: a body id that disagrees is InvalidInput, a missing
	// (or null) one takes it.
	ID ID
	// Query is the request's query string.
	Query Query
}

// Query is a REST request's query string as the REST adapter parses it,
// for the operations that take parameters from it (paging, flags). Each
// method sets *dst only when parameter name is given, and fails with
// InvalidInput when it is not of the type.
type Query interface {
	// Text sets *dst to the parameter's value.
	Text(name string, dst *string)
	// Bool sets *dst to the parameter, true or false.
	Bool(name string, dst **bool) error
	// Int sets *dst to the parameter, a 32-bit integer (as the protocol's
	// page limits are).
	Int(name string, dst **int) error
}

// Empty is the reply of the operations that answer only by succeeding
// (NamespaceExists, TableExists): {} as JSON; the REST adapter sends no
// body at all, as the spec has it.
type Empty struct{}

// Ops are the operations, in the spec's order of kinds.
var Ops = []Op{
	{"CreateNamespace", "namespace/{id}/create", true, false, true, "Create a namespace (mode create, exist_ok or overwrite).",
		run((*Service).CreateNamespace)},
	{"ListNamespaces", "namespace/{id}/list", false, false, true, "List the child namespaces of a namespace, paged.",
		runQuery((*Service).ListNamespaces, func(r *ListNamespacesRequest, q Query) error {
			return paging(q, &r.PageToken, &r.Limit)
		})},
	{"DescribeNamespace", "namespace/{id}/describe", false, false, true, "Describe a namespace: its properties.",
		run((*Service).DescribeNamespace)},
	{"NamespaceExists", "namespace/{id}/exists", false, false, true, "Succeed if the namespace exists, fail with NamespaceNotFound if not.",
		check((*Service).NamespaceExists)},
	{"DropNamespace", "namespace/{id}/drop", true, false, true, "Drop a namespace (behavior restrict or cascade).",
		runQuery((*Service).DropNamespace, func(r *DropNamespaceRequest, q Query) error {
			q.Text("mode", &r.Mode)
			q.Text("behavior", &r.Behavior)
			return nil
		})},
	{"UndropNamespace", "namespace/{id}/undrop", true, false, true, "Put a dropped namespace back with everything its drop removed, within the drop retention (flightns; drop_id: which drop, else the newest).",
		run((*Service).UndropNamespace)},
	{"ListTables", "namespace/{id}/table/list", false, false, true, "List the tables of a namespace, paged.",
		runQuery((*Service).ListTables, listTablesQuery)},
	// ListAllTables has no path id; a body id is meaningless and ignored.
	{"ListAllTables", "table", false, false, true, "List every table of the catalog, paged.",
		runQuery((*Service).ListAllTables, func(r *ListTablesRequest, q Query) error {
			r.ID = nil
			return listTablesQuery(r, q)
		})},
	{"DeclareTable", "table/{id}/declare", true, false, true, "Declare a table: reserve its name and location before its first version.",
		run((*Service).DeclareTable)},
	// CreateEmptyTable's request is DeclareTable's, its reply a subset.
	{"CreateEmptyTable", "table/{id}/create-empty", true, false, false, "Deprecated: DeclareTable.",
		run((*Service).DeclareTable)},
	{"RegisterTable", "table/{id}/register", true, false, true, "Register an existing Lance table at a location.",
		run((*Service).RegisterTable)},
	{"DescribeTable", "table/{id}/describe", false, false, true, "Describe a table: location, latest version, properties.",
		runQuery((*Service).DescribeTable, func(r *DescribeTableRequest, q Query) error {
			for _, f := range []struct {
				name string
				dst  **bool
			}{{"with_table_uri", &r.WithTableURI}, {"load_detailed_metadata", &r.LoadDetailedMetadata}, {"check_declared", &r.CheckDeclared}} {
				if err := q.Bool(f.name, f.dst); err != nil {
					return err
				}
			}
			return nil
		})},
	{"TableExists", "table/{id}/exists", false, false, true, "Succeed if the table exists, fail with TableNotFound if not.",
		check((*Service).TableExists)},
	{"DropTable", "table/{id}/drop", true, false, true, "Remove a table from the catalog and delete its data.",
		run((*Service).DropTable)},
	{"UndropTable", "table/{id}/undrop", true, false, true, "Put a dropped table back with its versions, branches and tags, within the drop retention (flightns; drop_id: which drop, else the newest).",
		run((*Service).UndropTable)},
	{"DeregisterTable", "table/{id}/deregister", true, false, true, "Remove a table from the catalog, keeping its data.",
		run((*Service).DeregisterTable)},
	{"RenameTable", "table/{id}/rename", true, false, true, "Rename a table, possibly into another namespace; its location stays.",
		run((*Service).RenameTable)},
	{"ListTableVersions", "table/{id}/version/list", false, false, true, "List a table's versions, paged, ascending or descending.",
		runQuery((*Service).ListTableVersions, func(r *ListTableVersionsRequest, q Query) error {
			if err := paging(q, &r.PageToken, &r.Limit); err != nil {
				return err
			}
			q.Text("branch", &r.Branch)
			return q.Bool("descending", &r.Descending)
		})},
	{"CreateTableVersion", "table/{id}/version/create", true, false, true, "Commit a staged manifest as the table's next version (put-if-not-exists).",
		run((*Service).CreateTableVersion)},
	{"DescribeTableVersion", "table/{id}/version/describe", false, false, true, "Describe one version of a table (the latest when none is named).",
		run((*Service).DescribeTableVersion)},
	{"BatchDeleteTableVersions", "table/{id}/version/delete", true, false, true, "Delete ranges of a table's versions from the catalog.",
		runQuery((*Service).BatchDeleteTableVersions, func(r *BatchDeleteTableVersionsRequest, q Query) error {
			q.Text("branch", &r.Branch)
			return nil
		})},
	{"ListTableTags", "table/{id}/tags/list", false, false, true, "List a table's tags (Lance's own, in its _refs/tags/), paged.",
		runQuery((*Service).ListTableTags, func(r *ListTableTagsRequest, q Query) error {
			return paging(q, &r.PageToken, &r.Limit)
		})},
	{"GetTableTagVersion", "table/{id}/tags/version", false, false, true, "The version a tag points to.",
		run((*Service).GetTableTagVersion)},
	{"CreateTableTag", "table/{id}/tags/create", true, false, true, "Tag a version of the table (create-only, in Lance's format).",
		run((*Service).CreateTableTag)},
	{"UpdateTableTag", "table/{id}/tags/update", true, false, true, "Point an existing tag to another version.",
		run((*Service).UpdateTableTag)},
	{"DeleteTableTag", "table/{id}/tags/delete", true, false, true, "Delete a tag.",
		run((*Service).DeleteTableTag)},
	{"ListTableBranches", "table/{id}/branches/list", false, false, true, "List the branches Lance recorded for a table (its _refs/branches/), paged.",
		runQuery((*Service).ListTableBranches, func(r *ListTableBranchesRequest, q Query) error {
			return paging(q, &r.PageToken, &r.Limit)
		})},
	{"CreateTableBranch", "table/{id}/branches/create", true, false, true, "Create a branch from a version of main or of another branch, as Lance does (a shallow clone committed as the branch's first version, and its _refs/branches/ file).",
		run((*Service).CreateTableBranch)},
	{"DeleteTableBranch", "table/{id}/branches/delete", true, false, true, "Delete a branch no branch forks from and no tag points into: its _refs/branches/ file and its tree/, as Lance does.",
		run((*Service).DeleteTableBranch)},
	{"RestoreTable", "table/{id}/restore", true, false, true, "Make a version of a table (or of a branch) its newest, as Lance's restore does: the version's content committed as the next version.",
		run((*Service).RestoreTable)},
	{"GetTableStats", "table/{id}/stats", false, false, true, "A table's statistics (rows, fragments, indices, bytes), read from its latest manifest.",
		run((*Service).GetTableStats)},
	// The two multi-table operations carry their ids in the body only.
	{"BatchCreateTableVersions", "table/version/batch-create", true, false, true, "Commit versions of several tables atomically: all or none.",
		run((*Service).BatchCreateTableVersions)},
	{"BatchCommitTables", "table/batch-commit", true, false, true, "Commit table versions, declarations and drops across tables atomically: all or none.",
		run((*Service).BatchCommitTables)},
	// flightns's own: cleanup of old versions (cleanup.go), by an admin
	// of the table's namespace.
	{"CleanupTable", "table/{id}/cleanup", true, true, true, "Clean up a table's old versions under its retention, or the one given: their records, manifests and the files no kept version references (flightns; dry_run reports only).",
		run((*Service).CleanupTable)},
	// flightns's own: grants (access.go) on a namespace's subtree, managed
	// by an admin of that subtree.
	{"CreateNamespaceGrant", "namespace/{id}/grants/create", true, true, true, "Give a principal or a group a role on the namespace and all it holds (flightns).",
		run((*Service).CreateNamespaceGrant)},
	{"DeleteNamespaceGrant", "namespace/{id}/grants/delete", true, true, true, "Take away what a principal or a group holds on the namespace (flightns).",
		run((*Service).DeleteNamespaceGrant)},
	{"ListNamespaceGrants", "namespace/{id}/grants/list", false, true, true, "List the grants on the namespace and inside it (flightns).",
		run((*Service).ListNamespaceGrants)},
}

// run makes the RunFunc of a service method whose REST route takes
// nothing from the query.
func run[Req, Resp any](method func(*Service, context.Context, Req) (Resp, error)) RunFunc {
	return runQuery(method, nil)
}

// check makes the RunFunc of a method that answers only with an error
// (the Exists operations): success replies Empty.
func check[Req any](method func(*Service, context.Context, Req) error) RunFunc {
	return run(func(s *Service, ctx context.Context, req Req) (Empty, error) {
		return Empty{}, method(s, ctx, req)
	})
}

// runQuery makes the RunFunc of a service method: decode the body into its
// request; on REST, bind the path's id into the request's, then the query
// by bind (nil: the route takes no parameters); call the method.
func runQuery[Req, Resp any](method func(*Service, context.Context, Req) (Resp, error), bind func(*Req, Query) error) RunFunc {
	return func(ctx context.Context, s *Service, body []byte, rest *REST) (any, error) {
		var req Req
		if err := DecodeRequest(body, &req); err != nil {
			return nil, err
		}
		if rest != nil {
			if err := rest.bind(&req); err != nil {
				return nil, err
			}
			if bind != nil {
				if err := bind(&req, rest.Query); err != nil {
					return nil, err
				}
			}
		}
		if o, ok := any(&req).(identified); ok {
			audit.SetTarget(ctx, o.objectID().String())
		}
		if err := s.authorizeRequest(ctx, &req); err != nil {
			return nil, err
		}
		if AuthorizingOnly(ctx) {
			return Authorized{}, nil
		}
		return method(s, ctx, req)
	}
}

// Authorizing only. An idempotent retry (package idempotency) is
// answered from the first request's record, without running the
// operation; but the caller must still be allowed to make the request
// now, so that a grant revoked since is not outlived by a replay. A Run
// under AuthorizeOnly does all that decides whether the caller may make
// the request, in the order a first request does it (the role anywhere,
// then decoding, binding and the role on each object the request names),
// then returns Authorized instead of calling the service: what refuses
// the request is the very error a first request would get
// (PermissionDenied, or the NotFound that hides what the caller may not
// read), and nothing of the catalog is looked at or changed. planner.Ops
// honour the same marker.

type authorizeOnlyKey struct{}

// AuthorizeOnly is ctx for a Run that stops once its caller is
// authorized, answering Authorized.
func AuthorizeOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, authorizeOnlyKey{}, true)
}

// AuthorizingOnly reports whether ctx is AuthorizeOnly's.
func AuthorizingOnly(ctx context.Context) bool {
	only, _ := ctx.Value(authorizeOnlyKey{}).(bool)
	return only
}

// Authorized is the reply of a Run under AuthorizeOnly whose caller may
// make the request.
type Authorized struct{}

// Authorize checks that the caller of ctx may make the request (body,
// and on REST rest) of o, without running it: nil, or the error a first
// request would be refused with.
func (o Op) Authorize(ctx context.Context, s *Service, body []byte, rest *REST) error {
	out, err := o.Run(AuthorizeOnly(ctx), s, body, rest)
	return OnlyAuthorized(o.Name, out, err)
}

// OnlyAuthorized is the answer of an Authorize from what operation op's
// Run under AuthorizeOnly returned: its error, or nil once it answered
// Authorized. A Run that answered anything else ran the operation; every
// Run (runQuery's, the planner's decodeRun) must learn AuthorizingOnly
// before it is registered.
func OnlyAuthorized(op string, out any, err error) error {
	if err != nil {
		return err
	}
	if _, ok := out.(Authorized); !ok {
		return nserror.New(nserror.Internal, "operation %s ran instead of only authorizing its caller", op)
	}
	return nil
}

// bind makes the path's id, when the route has one, req's.
func (r *REST) bind(req any) error {
	if r.ID == nil {
		return nil
	}
	o, ok := req.(identified)
	if !ok {
		return nserror.New(nserror.Internal, "the route has an id in its path, but its request (%T) has none", req)
	}
	id := o.objectID()
	if *id != nil && !id.Equal(r.ID) {
		return nserror.New(nserror.InvalidInput, "the id in the body %q disagrees with the id in the path %q", []string(*id), []string(r.ID))
	}
	*id = append(ID{}, r.ID...)
	return nil
}

// paging applies page_token and limit.
func paging(q Query, token *string, limit **int) error {
	q.Text("page_token", token)
	return q.Int("limit", limit)
}

// listTablesQuery binds ListTables's and ListAllTables's parameters.
func listTablesQuery(r *ListTablesRequest, q Query) error {
	if err := paging(q, &r.PageToken, &r.Limit); err != nil {
		return err
	}
	return q.Bool("include_declared", &r.IncludeDeclared)
}

// identified is a request named by one object id, into which a REST
// route binds the {id} of its path.
type identified interface{ objectID() *ID }

func (r *CreateNamespaceRequest) objectID() *ID          { return &r.ID }
func (r *ListNamespacesRequest) objectID() *ID           { return &r.ID }
func (r *DescribeNamespaceRequest) objectID() *ID        { return &r.ID }
func (r *NamespaceExistsRequest) objectID() *ID          { return &r.ID }
func (r *DropNamespaceRequest) objectID() *ID            { return &r.ID }
func (r *ListTablesRequest) objectID() *ID               { return &r.ID }
func (r *DeclareTableRequest) objectID() *ID             { return &r.ID }
func (r *RegisterTableRequest) objectID() *ID            { return &r.ID }
func (r *DescribeTableRequest) objectID() *ID            { return &r.ID }
func (r *TableExistsRequest) objectID() *ID              { return &r.ID }
func (r *DropTableRequest) objectID() *ID                { return &r.ID }
func (r *DeregisterTableRequest) objectID() *ID          { return &r.ID }
func (r *RenameTableRequest) objectID() *ID              { return &r.ID }
func (r *ListTableVersionsRequest) objectID() *ID        { return &r.ID }
func (r *CreateTableVersionRequest) objectID() *ID       { return &r.ID }
func (r *DescribeTableVersionRequest) objectID() *ID     { return &r.ID }
func (r *BatchDeleteTableVersionsRequest) objectID() *ID { return &r.ID }
func (r *ListTableTagsRequest) objectID() *ID            { return &r.ID }
func (r *GetTableTagVersionRequest) objectID() *ID       { return &r.ID }
func (r *CreateTableTagRequest) objectID() *ID           { return &r.ID }
func (r *DeleteTableTagRequest) objectID() *ID           { return &r.ID }
func (r *ListTableBranchesRequest) objectID() *ID        { return &r.ID }
func (r *CreateTableBranchRequest) objectID() *ID        { return &r.ID }
func (r *DeleteTableBranchRequest) objectID() *ID        { return &r.ID }
func (r *RestoreTableRequest) objectID() *ID             { return &r.ID }
func (r *UndropTableRequest) objectID() *ID              { return &r.ID }
func (r *UndropNamespaceRequest) objectID() *ID          { return &r.ID }
func (r *GetTableStatsRequest) objectID() *ID            { return &r.ID }
func (r *NamespaceGrantRequest) objectID() *ID           { return &r.ID }
func (r *ListNamespaceGrantsRequest) objectID() *ID      { return &r.ID }
