package reliability

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// hostileFlight are Flight messages missing a part the protocol says they
// carry, or malformed, each with the code it must get. The first two took
// the whole process down — its private Redis and its SQL worker with it —
// for any caller, role none included, and for anyone with authentication
// off (issue 43); so did the last (found while fixing them).
func hostileFlight(c *flightClient) []struct {
	name string
	want codes.Code
	call func(ctx context.Context) error
} {
	action := func(typ string, body []byte) func(ctx context.Context) error {
		return func(ctx context.Context) error { _, err := c.action(ctx, typ, body); return err }
	}
	put := func(msgs ...*flight.FlightData) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			s, err := c.DoPut(c.ctx(ctx))
			if err != nil {
				return err
			}
			for _, m := range msgs {
				_ = s.Send(m)
			}
			_ = s.CloseSend()
			return drain(func() error { _, err := s.Recv(); return err })
		}
	}
	noTicket := mustMarshal(&flight.FlightInfo{Endpoint: []*flight.FlightEndpoint{{}, {Ticket: &flight.Ticket{}}}})
	cancelQuery, _ := anypb.New(&pb.ActionCancelQueryRequest{Info: noTicket}) //nolint:staticcheck // deprecated, still served
	unknownCmd := mustMarshal(&anypb.Any{TypeUrl: "type.googleapis.com/arrow.flight.protocol.sql.NoSuchCommand"})
	return []struct {
		name string
		want codes.Code
		call func(ctx context.Context) error
	}{
		{"RenewFlightEndpoint with an empty body", codes.InvalidArgument, action(flight.RenewFlightEndpointActionType, nil)},
		{"DoPut whose first message has no descriptor", codes.InvalidArgument, put(&flight.FlightData{})},
		{"RenewFlightEndpoint of an endpoint without a ticket", codes.InvalidArgument,
			action(flight.RenewFlightEndpointActionType, mustMarshal(&flight.RenewFlightEndpointRequest{Endpoint: &flight.FlightEndpoint{}}))},
		{"CancelFlightInfo of endpoints without tickets", codes.OK,
			action(flight.CancelFlightInfoActionType, mustMarshal(&flight.CancelFlightInfoRequest{Info: &flight.FlightInfo{Endpoint: []*flight.FlightEndpoint{{}}}}))},
		{"CancelQuery of endpoints without tickets", codes.OK, action(flightsql.CancelQueryActionType, mustMarshal(cancelQuery))},
		{"CreatePreparedStatement with an empty body", codes.InvalidArgument, action(flightsql.CreatePreparedStatementActionType, nil)},
		{"DoPut with data and no descriptor", codes.InvalidArgument, put(&flight.FlightData{DataHeader: []byte{0xff}, AppMetadata: []byte("x")})},
		{"DoPut without a message", codes.InvalidArgument, put()},
		{"DoPut whose descriptor has no command", codes.InvalidArgument, put(&flight.FlightData{FlightDescriptor: &flight.FlightDescriptor{}})},
		{"DoGet of an empty ticket", codes.InvalidArgument, func(ctx context.Context) error {
			s, err := c.DoGet(c.ctx(ctx), &flight.Ticket{})
			if err != nil {
				return err
			}
			return drain(func() error { _, err := s.Recv(); return err })
		}},
		{"GetFlightInfo of a path descriptor", codes.InvalidArgument, func(ctx context.Context) error {
			_, err := c.GetFlightInfo(c.ctx(ctx), &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"ns", "t"}})
			return err
		}},
		{"GetSchema of an unknown command", codes.InvalidArgument, func(ctx context.Context) error {
			_, err := c.GetSchema(c.ctx(ctx), &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: unknownCmd})
			return err
		}},
		{"PollFlightInfo of an empty descriptor", codes.Unimplemented, func(ctx context.Context) error {
			_, err := c.PollFlightInfo(c.ctx(ctx), &flight.FlightDescriptor{})
			return err
		}},
		{"DoExchange without a message", codes.Unimplemented, func(ctx context.Context) error {
			s, err := c.DoExchange(c.ctx(ctx))
			if err != nil {
				return err
			}
			_ = s.CloseSend()
			return drain(func() error { _, err := s.Recv(); return err })
		}},
		{"a bind of a union parameter whose type code names no child", codes.InvalidArgument, func(ctx context.Context) error {
			sc := &flightsql.Client{Client: c.Client}
			prep, err := sc.Prepare(c.ctx(ctx), "SELECT CAST($1 AS VARCHAR) AS n")
			if err != nil {
				return err
			}
			defer func() { _ = prep.Close(c.ctx(ctx)) }()
			ut := arrow.DenseUnionOf([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, []arrow.UnionTypeCode{0})
			b := array.NewInt64Builder(memory.DefaultAllocator)
			b.Append(1)
			child := b.NewArray()
			defer child.Release()
			u := array.MakeFromData(array.NewData(ut, 1, []*memory.Buffer{nil, memory.NewBufferBytes([]byte{100}),
				memory.NewBufferBytes(arrow.Int32Traits.CastToBytes([]int32{0}))}, []arrow.ArrayData{child.Data()}, 0, 0))
			defer u.Release()
			params := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "0", Type: ut}}, nil), []arrow.Array{u}, 1)
			defer params.Release()
			prep.SetParameters(params)
			_, err = prep.Execute(c.ctx(ctx))
			return err
		}},
	}
}

func mustMarshal(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// drain receives until the stream ends: nil at its end, else its error.
func drain(recv func() error) error {
	for {
		if err := recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// alive fails the test if the server process has exited.
func (s *server) alive(t *testing.T, after string) {
	t.Helper()
	s.mu.Lock()
	exited := s.exited
	s.mu.Unlock()
	select {
	case <-exited:
		t.Fatalf("flightns exited after %s:\n%s", after, tail(s.Log(), 4000))
	default:
	}
}

// The Flight messages that took the process down in issue 43, and others
// that lack a part, sent to the binary — with authentication on, as a
// reader, and off, as anyone: each gets its client error, the process
// lives, serves a query after each, and recovered no panic (none of them
// is a bug's Internal).
func TestHostileFlightMessages(t *testing.T) {
	authOn, _, _, _ := hostileServer(t)
	authOff := startServer(t, nil, "--data", filepath.Join(t.TempDir(), "data"))
	for _, run := range []struct {
		name   string
		srv    *server
		caller []string
	}{
		{"a reader", authOn, []string{"authorization", "Bearer " + readToken}},
		{"anyone, with authentication off", authOff, nil},
	} {
		c := newFlight(t, run.srv.flight, run.caller...)
		for _, h := range hostileFlight(c) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := h.call(ctx)
			cancel()
			if status.Code(err) != h.want {
				t.Errorf("%s, %s: %v, want %v", run.name, h.name, err, h.want)
			}
			run.srv.alive(t, h.name)
			caughtUp(t, run.srv) // a query, as the admin (or anyone)
		}
		if n, err := run.srv.metric(`flightns_panics_recovered_total{surface="flight"}`); err != nil || n != 0 {
			t.Errorf("%s: %v Flight panics recovered (%v)", run.name, n, err)
		}
	}
}
