package flightserver

import (
	"context"
	"encoding/json"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/flightns/flightns/internal/idempotency"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/planner"
)

// actions are the Lance Namespace operations exposed as Flight actions,
// in namespace.Ops's order, and nothing else: the body is the
// operation's REST request model as JSON, the one result its REST
// response model as JSON. Name, description, role and Run all come from
// namespace.Ops.
var actions = func() []namespace.Op {
	var out []namespace.Op
	for _, o := range namespace.Ops {
		if o.Action {
			out = append(out, o)
		}
	}
	return out
}()

// actionsByName are the actions by name, for DoAction.
var actionsByName = func() map[string]namespace.Op {
	m := make(map[string]namespace.Op, len(actions))
	for _, a := range actions {
		m[a.Name] = a
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
	{Type: flight.CancelFlightInfoActionType, Description: "Flight SQL: cancel the queries of a FlightInfo."},
	{Type: flightsql.CancelQueryActionType, Description: "Flight SQL (deprecated): cancel a query; as CancelFlightInfo."},
	{Type: flight.RenewFlightEndpointActionType, Description: "Flight SQL: renew an endpoint (flightns's do not expire)."},
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
	return s.audited(stream.Context(), a.Name, a.Write, func(ctx context.Context) error {
		body, err := s.once(ctx, a.Name, a.Write, cmd.GetBody(), func() ([]byte, error) {
			// Run checks the caller's role and grants on what it names.
			resp, err := a.Run(ctx, s.svc, cmd.GetBody(), nil)
			if err != nil {
				return nil, err
			}
			return json.Marshal(resp)
		})
		if err != nil {
			return err
		}
		return stream.Send(&flight.Result{Body: body})
	})
}

// IdempotencyMetadata is the metadata key of an action's Idempotency-Key.
const IdempotencyMetadata = "idempotency-key"

// once runs a mutation whose call carries an idempotency-key at most once
// per key (package idempotency): a retry gets the first answer again,
// with the header idempotent-replayed: true, once the operation has
// authorized its caller again (Authorize of namespace.Ops' or
// planner.Ops' op: a caller refused now is refused as a first request
// is). Anything else just runs.
func (s *Server) once(ctx context.Context, op string, write bool, request []byte, run func() ([]byte, error)) ([]byte, error) {
	keys := metadata.ValueFromIncomingContext(ctx, IdempotencyMetadata)
	if !write || s.idem == nil || len(keys) == 0 {
		return run()
	}
	if len(keys) != 1 {
		return nil, nserror.New(nserror.InvalidInput, "one %s, not %d", IdempotencyMetadata, len(keys))
	}
	authorize := func() error {
		if a, ok := actionsByName[op]; ok {
			return a.Authorize(ctx, s.svc, request, nil)
		}
		if o, ok := planner.OpByName(op); ok {
			return o.Authorize(ctx, s.planner, request, nil)
		}
		return nserror.New(nserror.Internal, "no operation %s to authorize a retry of", op)
	}
	rep, replayed, err := s.idem.Do(ctx, principalOf(ctx).Name, op, keys[0], request, authorize, func() idempotency.Reply {
		return idempotency.ReplyOf(run())
	})
	if err != nil {
		return nil, err
	}
	if replayed {
		if err := s.svc.AuthorizeReplay(ctx, op, rep.Body); err != nil {
			return nil, err
		}
		_ = grpc.SetHeader(ctx, metadata.Pairs("idempotent-replayed", "true"))
	}
	if err := rep.Err(); err != nil {
		return nil, err
	}
	return rep.Body, nil
}

// ListActions lists the Lance Namespace operations and the Flight SQL
// actions, each with a description.
func (s *Server) ListActions(_ *flight.Empty, stream flight.FlightService_ListActionsServer) error {
	for _, a := range actions {
		if err := stream.Send(&flight.ActionType{Type: a.Name, Description: a.Desc}); err != nil {
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
