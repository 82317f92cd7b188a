package namespace

import (
	"context"

	"github.com/flightns/flightns/api"
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
	// Name is the spec's operation name, an api.Op… constant (also the
	// metrics' op label).
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
// model as JSON, strictly: api.DecodeRequest) into the request; on REST (rest
// non-nil) it binds the path's id and the query parameters into it; then
// it calls the service and returns the reply model, to be sent as JSON.
type RunFunc func(ctx context.Context, s *Service, body []byte, rest *REST) (any, error)

// REST is what a REST request adds to its JSON body.
type REST struct {
	// ID is the {id} of the route's path, parsed; nil on a route without
	// one (ParseID gives the root as ID{}, never nil). It is the
	// request's id: a body id that disagrees is InvalidInput, a missing
	// (or null) one takes it.
	ID api.ID
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

// Ops are the operations, in the spec's order of kinds.
var Ops = []Op{
	{Name: api.OpCreateNamespace, Path: "namespace/{id}/create", Write: true, Action: true, Desc: "Create a namespace (mode create, exist_ok or overwrite).",
		Run: run((*Service).CreateNamespace)},
	{Name: api.OpListNamespaces, Path: "namespace/{id}/list", Action: true, Desc: "List the child namespaces of a namespace, paged.",
		Run: runQuery((*Service).ListNamespaces, func(r *api.ListNamespacesRequest, q Query) error {
			return paging(q, &r.PageToken, &r.Limit)
		})},
	{Name: api.OpDescribeNamespace, Path: "namespace/{id}/describe", Action: true, Desc: "Describe a namespace: its properties.",
		Run: run((*Service).DescribeNamespace)},
	{Name: api.OpNamespaceExists, Path: "namespace/{id}/exists", Action: true, Desc: "Succeed if the namespace exists, fail with NamespaceNotFound if not.",
		Run: check((*Service).NamespaceExists)},
	{Name: api.OpDropNamespace, Path: "namespace/{id}/drop", Write: true, Action: true, Desc: "Drop a namespace (behavior restrict or cascade).",
		Run: runQuery((*Service).DropNamespace, func(r *api.DropNamespaceRequest, q Query) error {
			q.Text("mode", &r.Mode)
			q.Text("behavior", &r.Behavior)
			return nil
		})},
	{Name: api.OpUndropNamespace, Path: "namespace/{id}/undrop", Write: true, Action: true, Desc: "Put a dropped namespace back with everything its drop removed, within the drop retention (flightns; drop_id: which drop, else the newest).",
		Run: run(on((*Service).Drops, Drops.UndropNamespace))},
	{Name: api.OpListTables, Path: "namespace/{id}/table/list", Action: true, Desc: "List the tables of a namespace, paged.",
		Run: runQuery((*Service).ListTables, listTablesQuery)},
	// ListAllTables has no path id; a body id is meaningless and ignored.
	{Name: api.OpListAllTables, Path: "table", Action: true, Desc: "List every table of the catalog, paged.",
		Run: runQuery((*Service).ListAllTables, func(r *api.ListTablesRequest, q Query) error {
			r.ID = nil
			return listTablesQuery(r, q)
		})},
	{Name: api.OpDeclareTable, Path: "table/{id}/declare", Write: true, Action: true, Desc: "Declare a table: reserve its name and location before its first version.",
		Run: run((*Service).DeclareTable)},
	// CreateEmptyTable's request is DeclareTable's, its reply a subset.
	{Name: api.OpCreateEmptyTable, Path: "table/{id}/create-empty", Write: true, Desc: "Deprecated: DeclareTable.",
		Run: run((*Service).DeclareTable)},
	{Name: api.OpRegisterTable, Path: "table/{id}/register", Write: true, Action: true, Desc: "Register an existing Lance table at a location.",
		Run: run((*Service).RegisterTable)},
	{Name: api.OpDescribeTable, Path: "table/{id}/describe", Action: true, Desc: "Describe a table: location, latest version, properties.",
		Run: runQuery((*Service).DescribeTable, func(r *api.DescribeTableRequest, q Query) error {
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
	{Name: api.OpTableExists, Path: "table/{id}/exists", Action: true, Desc: "Succeed if the table exists, fail with TableNotFound if not.",
		Run: check((*Service).TableExists)},
	{Name: api.OpDropTable, Path: "table/{id}/drop", Write: true, Action: true, Desc: "Remove a table from the catalog and delete its data.",
		Run: run((*Service).DropTable)},
	{Name: api.OpUndropTable, Path: "table/{id}/undrop", Write: true, Action: true, Desc: "Put a dropped table back with its versions, branches and tags, within the drop retention (flightns; drop_id: which drop, else the newest).",
		Run: run(on((*Service).Drops, Drops.UndropTable))},
	{Name: api.OpDeregisterTable, Path: "table/{id}/deregister", Write: true, Action: true, Desc: "Remove a table from the catalog, keeping its data.",
		Run: run((*Service).DeregisterTable)},
	{Name: api.OpRenameTable, Path: "table/{id}/rename", Write: true, Action: true, Desc: "Rename a table, possibly into another namespace; its location stays.",
		Run: run((*Service).RenameTable)},
	{Name: api.OpListTableVersions, Path: "table/{id}/version/list", Action: true, Desc: "List a table's versions, paged, ascending or descending.",
		Run: runQuery(on((*Service).Versions, Versions.ListTableVersions), func(r *api.ListTableVersionsRequest, q Query) error {
			if err := paging(q, &r.PageToken, &r.Limit); err != nil {
				return err
			}
			q.Text("branch", &r.Branch)
			return q.Bool("descending", &r.Descending)
		})},
	{Name: api.OpCreateTableVersion, Path: "table/{id}/version/create", Write: true, Action: true, Desc: "Commit a staged manifest as the table's next version (put-if-not-exists).",
		Run: run(on((*Service).Versions, Versions.CreateTableVersion))},
	{Name: api.OpDescribeTableVersion, Path: "table/{id}/version/describe", Action: true, Desc: "Describe one version of a table (the latest when none is named).",
		Run: run(on((*Service).Versions, Versions.DescribeTableVersion))},
	{Name: api.OpBatchDeleteTableVersions, Path: "table/{id}/version/delete", Write: true, Action: true, Desc: "Delete ranges of a table's versions from the catalog.",
		Run: runQuery(on((*Service).Versions, Versions.BatchDeleteTableVersions), func(r *api.BatchDeleteTableVersionsRequest, q Query) error {
			q.Text("branch", &r.Branch)
			return nil
		})},
	{Name: api.OpListTableTags, Path: "table/{id}/tags/list", Action: true, Desc: "List a table's tags (Lance's own, in its _refs/tags/), paged.",
		Run: runQuery(on((*Service).Branches, Branches.ListTableTags), func(r *api.ListTableTagsRequest, q Query) error {
			return paging(q, &r.PageToken, &r.Limit)
		})},
	{Name: api.OpGetTableTagVersion, Path: "table/{id}/tags/version", Action: true, Desc: "The version a tag points to.",
		Run: run(on((*Service).Branches, Branches.GetTableTagVersion))},
	{Name: api.OpCreateTableTag, Path: "table/{id}/tags/create", Write: true, Action: true, Desc: "Tag a version of the table (create-only, in Lance's format).",
		Run: run(on((*Service).Branches, Branches.CreateTableTag))},
	{Name: api.OpUpdateTableTag, Path: "table/{id}/tags/update", Write: true, Action: true, Desc: "Point an existing tag to another version.",
		Run: run(on((*Service).Branches, Branches.UpdateTableTag))},
	{Name: api.OpDeleteTableTag, Path: "table/{id}/tags/delete", Write: true, Action: true, Desc: "Delete a tag.",
		Run: run(on((*Service).Branches, Branches.DeleteTableTag))},
	{Name: api.OpListTableBranches, Path: "table/{id}/branches/list", Action: true, Desc: "List the branches Lance recorded for a table (its _refs/branches/), paged.",
		Run: runQuery(on((*Service).Branches, Branches.ListTableBranches), func(r *api.ListTableBranchesRequest, q Query) error {
			return paging(q, &r.PageToken, &r.Limit)
		})},
	{Name: api.OpCreateTableBranch, Path: "table/{id}/branches/create", Write: true, Action: true, Desc: "Create a branch from a version of main or of another branch, as Lance does (a shallow clone committed as the branch's first version, and its _refs/branches/ file).",
		Run: run(on((*Service).Branches, Branches.CreateTableBranch))},
	{Name: api.OpDeleteTableBranch, Path: "table/{id}/branches/delete", Write: true, Action: true, Desc: "Delete a branch no branch forks from and no tag points into: its _refs/branches/ file and its tree/, as Lance does.",
		Run: run(on((*Service).Branches, Branches.DeleteTableBranch))},
	{Name: api.OpRestoreTable, Path: "table/{id}/restore", Write: true, Action: true, Desc: "Make a version of a table (or of a branch) its newest, as Lance's restore does: the version's content committed as the next version.",
		Run: run(on((*Service).Branches, Branches.RestoreTable))},
	{Name: api.OpGetTableStats, Path: "table/{id}/stats", Action: true, Desc: "A table's statistics (rows, fragments, indices, bytes), read from its latest manifest.",
		Run: run(on((*Service).Versions, Versions.GetTableStats))},
	// The two multi-table operations carry their ids in the body only.
	{Name: api.OpBatchCreateTableVersions, Path: "table/version/batch-create", Write: true, Action: true, Desc: "Commit versions of several tables atomically: all or none.",
		Run: run(on((*Service).Versions, Versions.BatchCreateTableVersions))},
	{Name: api.OpBatchCommitTables, Path: "table/batch-commit", Write: true, Action: true, Desc: "Commit table versions, declarations and drops across tables atomically: all or none.",
		Run: run((*Service).BatchCommitTables)},
	// flightns's own: cleanup of old versions (cleanup.go), by an admin
	// of the table's namespace.
	{Name: api.OpCleanupTable, Path: "table/{id}/cleanup", Write: true, Admin: true, Action: true, Desc: "Clean up a table's old versions under its retention, or the one given: their records, manifests and the files no kept version references (flightns; dry_run reports only).",
		Run: run((*Service).CleanupTable)},
	// flightns's own: compaction jobs (compaction.go), handed to workers
	// that may write the jobs' tables.
	{Name: api.OpClaimCompaction, Path: "compaction/claim", Write: true, Action: true, Desc: "Claim the next compaction job due among the tables the caller may write, leased to a worker; none due: no job (flightns).",
		Run: runCompaction(Compaction.Claim)},
	{Name: api.OpHeartbeatCompaction, Path: "compaction/heartbeat", Write: true, Action: true, Desc: "Renew the lease of a compaction job the worker holds (flightns).",
		Run: runCompaction(Compaction.Heartbeat)},
	{Name: api.OpCompleteCompaction, Path: "compaction/complete", Write: true, Action: true, Desc: "Report a compaction job the worker holds done (flightns).",
		Run: runCompaction(Compaction.Complete)},
	{Name: api.OpFailCompaction, Path: "compaction/fail", Write: true, Action: true, Desc: "Report a compaction job the worker holds failed; its table waits for a new version (flightns).",
		Run: runCompaction(Compaction.Fail)},
	{Name: api.OpListCompactions, Path: "compaction/list", Action: true, Desc: "List the compaction jobs in progress of the tables the caller may read (flightns).",
		Run: runCompaction(Compaction.List)},
	// flightns's own: grants (access.go) on a namespace's subtree, managed
	// by an admin of that subtree.
	{Name: api.OpCreateNamespaceGrant, Path: "namespace/{id}/grants/create", Write: true, Admin: true, Action: true, Desc: "Give a principal or a group a role on the namespace and all it holds (flightns).",
		Run: run(on((*Service).Access, Access.CreateNamespaceGrant))},
	{Name: api.OpDeleteNamespaceGrant, Path: "namespace/{id}/grants/delete", Write: true, Admin: true, Action: true, Desc: "Take away what a principal or a group holds on the namespace (flightns).",
		Run: run(on((*Service).Access, Access.DeleteNamespaceGrant))},
	{Name: api.OpListNamespaceGrants, Path: "namespace/{id}/grants/list", Admin: true, Action: true, Desc: "List the grants on the namespace and inside it (flightns).",
		Run: run(on((*Service).Access, Access.ListNamespaceGrants))},
}

// on makes a method of a part of the service (parts.go) a method of the
// service.
func on[P, Req, Resp any](part func(*Service) P, method func(P, context.Context, Req) (Resp, error)) func(*Service, context.Context, Req) (Resp, error) {
	return func(s *Service, ctx context.Context, req Req) (Resp, error) { return method(part(s), ctx, req) }
}

// run makes the RunFunc of a service method whose REST route takes
// nothing from the query.
func run[Req, Resp any](method func(*Service, context.Context, Req) (Resp, error)) RunFunc {
	return runQuery(method, nil)
}

// check makes the RunFunc of a method that answers only with an error
// (the Exists operations): success replies api.Empty.
func check[Req any](method func(*Service, context.Context, Req) error) RunFunc {
	return run(func(s *Service, ctx context.Context, req Req) (api.Empty, error) {
		return api.Empty{}, method(s, ctx, req)
	})
}

// runQuery makes the RunFunc of a service method: decode the body into its
// request; on REST, bind the path's id into the request's, then the query
// by bind (nil: the route takes no parameters); call the method.
func runQuery[Req, Resp any](method func(*Service, context.Context, Req) (Resp, error), bind func(*Req, Query) error) RunFunc {
	return func(ctx context.Context, s *Service, body []byte, rest *REST) (any, error) {
		var req Req
		if err := api.DecodeRequest(body, &req); err != nil {
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
		if id := objectID(&req); id != nil {
			audit.SetTarget(ctx, id.String())
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
	id := objectID(req)
	if id == nil {
		return nserror.New(nserror.Internal, "the route has an id in its path, but its request (%T) has none", req)
	}
	if *id != nil && !id.Equal(r.ID) {
		return nserror.New(nserror.InvalidInput, "the id in the body %q disagrees with the id in the path %q", []string(*id), []string(r.ID))
	}
	*id = append(api.ID{}, r.ID...)
	return nil
}

// paging applies page_token and limit.
func paging(q Query, token *string, limit **int) error {
	q.Text("page_token", token)
	return q.Int("limit", limit)
}

// listTablesQuery binds ListTables's and ListAllTables's parameters.
func listTablesQuery(r *api.ListTablesRequest, q Query) error {
	if err := paging(q, &r.PageToken, &r.Limit); err != nil {
		return err
	}
	return q.Bool("include_declared", &r.IncludeDeclared)
}

// objectID is the id that names req (a pointer to a request model), into
// which a REST route binds the {id} of its path; nil when req is named by
// no one object id.
//
//nolint:gocyclo // one case per request model: the list reads best whole
func objectID(req any) *api.ID {
	switch r := req.(type) {
	case *api.CreateNamespaceRequest:
		return &r.ID
	case *api.ListNamespacesRequest:
		return &r.ID
	case *api.DescribeNamespaceRequest:
		return &r.ID
	case *api.NamespaceExistsRequest:
		return &r.ID
	case *api.DropNamespaceRequest:
		return &r.ID
	case *api.ListTablesRequest:
		return &r.ID
	case *api.DeclareTableRequest:
		return &r.ID
	case *api.RegisterTableRequest:
		return &r.ID
	case *api.DescribeTableRequest:
		return &r.ID
	case *api.TableExistsRequest:
		return &r.ID
	case *api.DropTableRequest:
		return &r.ID
	case *api.DeregisterTableRequest:
		return &r.ID
	case *api.RenameTableRequest:
		return &r.ID
	case *api.ListTableVersionsRequest:
		return &r.ID
	case *api.CreateTableVersionRequest:
		return &r.ID
	case *api.DescribeTableVersionRequest:
		return &r.ID
	case *api.BatchDeleteTableVersionsRequest:
		return &r.ID
	case *api.ListTableTagsRequest:
		return &r.ID
	case *api.GetTableTagVersionRequest:
		return &r.ID
	case *api.CreateTableTagRequest:
		return &r.ID
	case *api.DeleteTableTagRequest:
		return &r.ID
	case *api.ListTableBranchesRequest:
		return &r.ID
	case *api.CreateTableBranchRequest:
		return &r.ID
	case *api.DeleteTableBranchRequest:
		return &r.ID
	case *api.RestoreTableRequest:
		return &r.ID
	case *api.UndropTableRequest:
		return &r.ID
	case *api.UndropNamespaceRequest:
		return &r.ID
	case *api.GetTableStatsRequest:
		return &r.ID
	case *api.CleanupTableRequest:
		return &r.ID
	case *api.NamespaceGrantRequest:
		return &r.ID
	case *api.ListNamespaceGrantsRequest:
		return &r.ID
	}
	return nil
}
