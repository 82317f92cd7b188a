package flightserver

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/protobuf/proto"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/planner"
)

// The planner's operations are Flight actions too (planner.Ops): JSON in,
// JSON out, except PlanScan, whose one result is a serialized FlightInfo
// whose ticket DoGet streams as Arrow. Engines may also ask for a plan
// with GetFlightInfo on a CMD descriptor holding {"plan_scan": {"id": …,
// "filter": …}}.

// planTicketPrefix starts the tickets of plans; the rest is the parked
// plan's id, a newline, and the request (run again when the plan is gone).
const planTicketPrefix = "flightns-plan:"

// planCommandKey is the key of a plan_scan command descriptor.
const planCommandKey = `"plan_scan"`

// doPlannerAction runs one of the planner's operations, audited.
func (s *Server) doPlannerAction(op planner.Op, cmd *flight.Action, stream flight.FlightService_DoActionServer) error {
	return s.audited(stream.Context(), op.Name, op.Write, func(ctx context.Context) error {
		return s.runPlannerAction(ctx, op, cmd, stream)
	})
}

func (s *Server) runPlannerAction(ctx context.Context, op planner.Op, cmd *flight.Action, stream flight.FlightService_DoActionServer) error {
	body, err := s.once(ctx, op.Name, op.Write, cmd.GetBody(), func() ([]byte, error) {
		resp, err := op.Run(ctx, s.planner, cmd.GetBody(), nil) // the planner checks role and grants
		if err != nil {
			return nil, err
		}
		if pl, ok := resp.(*planner.Plan); ok {
			info, err := s.planInfo(ctx, pl, cmd.GetBody(), &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd.GetBody()})
			if err != nil {
				return nil, err
			}
			return proto.Marshal(info)
		}
		return json.Marshal(resp)
	})
	if err != nil {
		return err
	}
	return stream.Send(&flight.Result{Body: body})
}

// planInfo parks a plan for the caller of ctx and describes it.
func (s *Server) planInfo(ctx context.Context, pl *planner.Plan, request []byte, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	id, err := s.plans.park(pl, bindingOf(ctx), "")
	if err != nil {
		return nil, err
	}
	ticket := append([]byte(planTicketPrefix+id+"\n"), request...)
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(pl.Schema(), s.alloc),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: ticket}}},
		TotalRecords:     int64(len(pl.Leaves)),
		TotalBytes:       -1,
	}, nil
}

// GetFlightInfo answers a plan_scan or changes command, or hands the descriptor to
// the Flight SQL handler.
func (s *Server) GetFlightInfo(ctx context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	cmd := bytes.TrimSpace(desc.GetCmd())
	if desc.GetType() != flight.DescriptorCMD || len(cmd) == 0 || cmd[0] != '{' ||
		!bytes.Contains(cmd, []byte(planCommandKey)) && !bytes.Contains(cmd, []byte(changesCommandKey)) {
		return s.FlightServer.GetFlightInfo(ctx, desc)
	}
	var wrapper struct {
		PlanScan json.RawMessage `json:"plan_scan"`
		Changes  json.RawMessage `json:"changes"`
	}
	if err := json.Unmarshal(cmd, &wrapper); err != nil || wrapper.PlanScan == nil && wrapper.Changes == nil {
		return s.FlightServer.GetFlightInfo(ctx, desc)
	}
	if wrapper.Changes != nil {
		return s.changesInfo(desc, wrapper.Changes)
	}
	op, _ := planner.OpByName(api.OpPlanScan)
	resp, err := op.Run(ctx, s.planner, wrapper.PlanScan, nil)
	if err != nil {
		return nil, err
	}
	return s.planInfo(ctx, resp.(*planner.Plan), wrapper.PlanScan, desc)
}

// DoGet streams the change feed (changes.go), a parked plan (or plans its request again when the plan is
// gone, or was parked for another principal: auth.go), or hands the
// ticket to the Flight SQL handler.
func (s *Server) DoGet(tkt *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	if rest, ok := bytes.CutPrefix(tkt.GetTicket(), []byte(changesTicketPrefix)); ok {
		return s.doChanges(rest, stream)
	}
	rest, ok := bytes.CutPrefix(tkt.GetTicket(), []byte(planTicketPrefix))
	if !ok {
		return s.FlightServer.DoGet(tkt, stream)
	}
	ctx := stream.Context()
	id, request, _ := bytes.Cut(rest, []byte("\n"))
	pl := s.plans.take(string(id), bindingOf(ctx), "")
	if pl != nil {
		// A ticket is no credential: its holder must read the table.
		if err := s.planner.Authorize(ctx, auth.Read, pl.Table.ID); err != nil {
			return err
		}
	} else {
		op, _ := planner.OpByName(api.OpPlanScan)
		resp, err := op.Run(ctx, s.planner, request, nil)
		if err != nil {
			return err
		}
		pl = resp.(*planner.Plan)
	}
	recs := pl.Records(s.alloc)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	w := flight.NewRecordWriter(stream, ipc.WithSchema(pl.Schema()), ipc.WithAllocator(s.alloc))
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			return err
		}
	}
	return w.Close()
}
