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
// its REST response model as JSON. Its name, description and role come
// from namespace.Ops.
type action struct {
	name string
	desc string
	need auth.Role
	run  actionFunc
}

type actionFunc func(ctx context.Context, s *namespace.Service, body []byte) (any, error)

// op adapts one service method.
func op[Req, Resp any](f func(*namespace.Service, context.Context, Req) (Resp, error)) actionFunc {
	return func(ctx context.Context, s *namespace.Service, body []byte) (any, error) {
		var req Req
		if err := namespace.DecodeRequest(body, &req); err != nil {
			return nil, err
		}
		return f(s, ctx, req)
	}
}

// check adapts a method that answers only with an error (the Exists
// operations): success replies {}.
func check[Req any](f func(*namespace.Service, context.Context, Req) error) actionFunc {
	return op(func(s *namespace.Service, ctx context.Context, req Req) (struct{}, error) {
		return struct{}{}, f(s, ctx, req)
	})
}

type svc = namespace.Service

// actionFuncs run the operations of namespace.Ops that are actions, by name.
var actionFuncs = map[string]actionFunc{
	"CreateNamespace":          op((*svc).CreateNamespace),
	"ListNamespaces":           op((*svc).ListNamespaces),
	"DescribeNamespace":        op((*svc).DescribeNamespace),
	"NamespaceExists":          check((*svc).NamespaceExists),
	"DropNamespace":            op((*svc).DropNamespace),
	"DeclareTable":             op((*svc).DeclareTable),
	"RegisterTable":            op((*svc).RegisterTable),
	"DescribeTable":            op((*svc).DescribeTable),
	"TableExists":              check((*svc).TableExists),
	"ListTables":               op((*svc).ListTables),
	"ListAllTables":            op((*svc).ListAllTables),
	"DeregisterTable":          op((*svc).DeregisterTable),
	"DropTable":                op((*svc).DropTable),
	"RenameTable":              op((*svc).RenameTable),
	"CreateTableVersion":       op((*svc).CreateTableVersion),
	"DescribeTableVersion":     op((*svc).DescribeTableVersion),
	"ListTableVersions":        op((*svc).ListTableVersions),
	"BatchDeleteTableVersions": op((*svc).BatchDeleteTableVersions),
	"ListTableTags":            op((*svc).ListTableTags),
	"GetTableTagVersion":       op((*svc).GetTableTagVersion),
	"CreateTableTag":           op((*svc).CreateTableTag),
	"UpdateTableTag":           op((*svc).UpdateTableTag),
	"DeleteTableTag":           op((*svc).DeleteTableTag),
	"GetTableStats":            op((*svc).GetTableStats),
	"ListTableBranches":        op((*svc).ListTableBranches),
	"BatchCreateTableVersions": op((*svc).BatchCreateTableVersions),
	"BatchCommitTables":        op((*svc).BatchCommitTables),
}

// actions are the Lance Namespace operations, in namespace.Ops's order;
// an operation without its function here, or a function without its
// operation, stops the program at start (and its test).
var actions = func() []action {
	var out []action
	for _, o := range namespace.Ops {
		if !o.Action {
			continue
		}
		f, ok := actionFuncs[o.Name]
		if !ok {
			panic("flightserver: no action function for " + o.Name)
		}
		need := auth.Read
		if o.Write {
			need = auth.Write
		}
		out = append(out, action{name: o.Name, desc: o.Desc, need: need, run: f})
	}
	if len(out) != len(actionFuncs) {
		panic("flightserver: an action function has no operation in namespace.Ops")
	}
	return out
}()

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
