package flightserver

import (
	"context"
	"encoding/json"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/flightns/flightns/auth"
	"github.com/flightns/flightns/namespace"
	"github.com/flightns/flightns/planner"
)

// action is a Lance Namespace operation exposed as a Flight action: the
// body is the operation's REST request model as JSON, the one result is
// its REST response model as JSON.
type action struct {
	name string
	desc string
	need auth.Role
	run  func(ctx context.Context, s *namespace.Service, body []byte) (any, error)
}

// op adapts one service method.
func op[Req, Resp any](name, desc string, need auth.Role, f func(*namespace.Service, context.Context, Req) (Resp, error)) action {
	return action{name: name, desc: desc, need: need, run: func(ctx context.Context, s *namespace.Service, body []byte) (any, error) {
		var req Req
		if err := namespace.DecodeRequest(body, &req); err != nil {
			return nil, err
		}
		return f(s, ctx, req)
	}}
}

// check adapts a method that answers only with an error (the Exists
// operations): success replies {}.
func check[Req any](name, desc string, f func(*namespace.Service, context.Context, Req) error) action {
	return op(name, desc, auth.Read, func(s *namespace.Service, ctx context.Context, req Req) (struct{}, error) {
		return struct{}{}, f(s, ctx, req)
	})
}

type svc = namespace.Service

// actions are the Lance Namespace operations, by name.
var actions = []action{
	op("CreateNamespace", "Create a namespace (mode create, exist_ok or overwrite).", auth.Write, (*svc).CreateNamespace),
	op("ListNamespaces", "List the child namespaces of a namespace, paged.", auth.Read, (*svc).ListNamespaces),
	op("DescribeNamespace", "Describe a namespace: its properties.", auth.Read, (*svc).DescribeNamespace),
	check("NamespaceExists", "Succeed if the namespace exists, fail with NamespaceNotFound if not.", (*svc).NamespaceExists),
	op("DropNamespace", "Drop a namespace (behavior restrict or cascade).", auth.Write, (*svc).DropNamespace),
	op("DeclareTable", "Declare a table: reserve its name and location before its first version.", auth.Write, (*svc).DeclareTable),
	op("RegisterTable", "Register an existing Lance table at a location.", auth.Write, (*svc).RegisterTable),
	op("DescribeTable", "Describe a table: location, latest version, properties.", auth.Read, (*svc).DescribeTable),
	check("TableExists", "Succeed if the table exists, fail with TableNotFound if not.", (*svc).TableExists),
	op("ListTables", "List the tables of a namespace, paged.", auth.Read, (*svc).ListTables),
	op("ListAllTables", "List every table of the catalog, paged.", auth.Read, (*svc).ListAllTables),
	op("DeregisterTable", "Remove a table from the catalog, keeping its data.", auth.Write, (*svc).DeregisterTable),
	op("DropTable", "Remove a table from the catalog and delete its data.", auth.Write, (*svc).DropTable),
	op("RenameTable", "Rename a table, possibly into another namespace; its location stays.", auth.Write, (*svc).RenameTable),
	op("CreateTableVersion", "Commit a staged manifest as the table's next version (put-if-not-exists).", auth.Write, (*svc).CreateTableVersion),
	op("DescribeTableVersion", "Describe one version of a table (the latest when none is named).", auth.Read, (*svc).DescribeTableVersion),
	op("ListTableVersions", "List a table's versions, paged, ascending or descending.", auth.Read, (*svc).ListTableVersions),
	op("BatchDeleteTableVersions", "Delete ranges of a table's versions from the catalog.", auth.Write, (*svc).BatchDeleteTableVersions),
	op("ListTableTags", "List a table's tags (Lance's own, in its _refs/tags/), paged.", auth.Read, (*svc).ListTableTags),
	op("GetTableTagVersion", "The version a tag points to.", auth.Read, (*svc).GetTableTagVersion),
	op("CreateTableTag", "Tag a version of the table (create-only, in Lance's format).", auth.Write, (*svc).CreateTableTag),
	op("UpdateTableTag", "Point an existing tag to another version.", auth.Write, (*svc).UpdateTableTag),
	op("DeleteTableTag", "Delete a tag.", auth.Write, (*svc).DeleteTableTag),
	op("GetTableStats", "A table's statistics (rows, fragments, indices, bytes), read from its latest manifest.", auth.Read, (*svc).GetTableStats),
	op("ListTableBranches", "List the branches Lance recorded for a table (its _refs/branches/), paged.", auth.Read, (*svc).ListTableBranches),
	op("BatchCreateTableVersions", "Commit versions of several tables atomically: all or none.", auth.Write, (*svc).BatchCreateTableVersions),
	op("BatchCommitTables", "Commit table versions, declarations and drops across tables atomically: all or none.", auth.Write, (*svc).BatchCommitTables),
}

var actionsByName = func() map[string]action {
	m := make(map[string]action, len(actions))
	for _, a := range actions {
		m[a.name] = a
	}
	return m
}()

// flightSQLActions are the Flight SQL actions this server answers, listed
// with the Lance ones by ListActions.
var flightSQLActions = []*flight.ActionType{
	{Type: flightsql.CreatePreparedStatementActionType, Description: "Flight SQL: prepare a query; returns its result and parameter schemas."},
	{Type: flightsql.ClosePreparedStatementActionType, Description: "Flight SQL: close a prepared statement."},
	{Type: flight.SetSessionOptionsActionType, Description: "Flight SQL: set session options (catalog=flightns, schema=main)."},
	{Type: flight.GetSessionOptionsActionType, Description: "Flight SQL: get the session options."},
	{Type: flight.CloseSessionActionType, Description: "Flight SQL: close the session."},
}

// DoAction runs a Lance Namespace operation, or hands a Flight SQL action
// to the Flight SQL handler.
func (s *Server) DoAction(cmd *flight.Action, stream flight.FlightService_DoActionServer) error {
	a, ok := actionsByName[cmd.GetType()]
	if !ok {
		if op, ok := planner.OpByName(cmd.GetType()); ok {
			return s.doPlannerAction(op, cmd, stream)
		}
		return s.FlightServer.DoAction(cmd, stream)
	}
	ctx := stream.Context()
	if err := auth.Allow(principalOf(ctx), a.need, a.name); err != nil {
		return err
	}
	resp, err := a.run(ctx, s.svc, cmd.GetBody())
	if err != nil {
		return err
	}
	body, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	return stream.Send(&flight.Result{Body: body})
}

// ListActions lists the Lance Namespace operations and the Flight SQL
// actions, each with a description.
func (s *Server) ListActions(_ *flight.Empty, stream flight.FlightService_ListActionsServer) error {
	for _, a := range actions {
		if err := stream.Send(&flight.ActionType{Type: a.name, Description: a.desc}); err != nil {
			return err
		}
	}
	for _, op := range planner.Ops {
		if err := stream.Send(&flight.ActionType{Type: op.Name, Description: op.Desc}); err != nil {
			return err
		}
	}
	for _, a := range flightSQLActions {
		if err := stream.Send(a); err != nil {
			return err
		}
	}
	return nil
}
