package flightserver

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/flightns/flightns/nserror"
)

// Messages that lack a part the protocol says they carry (issue 43: two
// of them took the whole process down) are refused as InvalidArgument,
// or passed over where the protocol allows it, and the server answers
// the next query. None of them is a recovered panic.

// answers fails unless the server still runs a query.
func (e *fenv) answers(c *flightsql.Client) {
	e.t.Helper()
	ctx := context.Background()
	info, err := c.Execute(ctx, "SELECT 42 AS n")
	_, recs := fetch(e.t, ctx, c, info, err)
	if got := column(e.t, recs, "n"); !slices.Equal(got, []string{"42"}) {
		e.t.Fatalf("SELECT 42 answers %v", got)
	}
}

// countPanics has a server count its recovered panics in n.
func countPanics(n *atomic.Int32) func(*Config) {
	return func(c *Config) { c.Panicked = func() { n.Add(1) } }
}

// action runs one raw action and reads its results to the end.
func rawAction(ctx context.Context, c flight.Client, typ string, body []byte) error {
	s, err := c.DoAction(ctx, &flight.Action{Type: typ, Body: body})
	if err != nil {
		return err
	}
	for {
		if _, err := s.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

func marshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRenewFlightEndpointWithoutAnEndpointOrTicketIsInvalidArgument(t *testing.T) {
	var panics atomic.Int32
	e := start(t, countPanics(&panics))
	c := e.client()
	ctx := context.Background()
	for name, body := range map[string][]byte{
		"an empty body (the crash of issue 43)": nil,
		"an endpoint without a ticket":          marshal(t, &flight.RenewFlightEndpointRequest{Endpoint: &flight.FlightEndpoint{}}),
		"an endpoint with an empty ticket":      marshal(t, &flight.RenewFlightEndpointRequest{Endpoint: &flight.FlightEndpoint{Ticket: &flight.Ticket{}}}),
	} {
		err := rawAction(ctx, c.Client, flight.RenewFlightEndpointActionType, body)
		wantStatus(t, name, err, codes.InvalidArgument)
		wantLanceCode(t, name, err, nserror.InvalidInput)
	}
	e.answers(c)
	if n := panics.Load(); n != 0 {
		t.Fatalf("%d panics recovered", n)
	}
}

func TestCancelOfEndpointsWithoutTicketsCancelsNothing(t *testing.T) {
	var panics atomic.Int32
	e := start(t, countPanics(&panics))
	c := e.client()
	ctx := context.Background()
	info := &flight.FlightInfo{Endpoint: []*flight.FlightEndpoint{{}, {Ticket: &flight.Ticket{}}}}
	for name, body := range map[string][]byte{
		"no info":                       nil,
		"endpoints without tickets":     marshal(t, &flight.CancelFlightInfoRequest{Info: info}),
		"an info with no endpoint":      marshal(t, &flight.CancelFlightInfoRequest{Info: &flight.FlightInfo{}}),
		"an endpoint with an empty one": marshal(t, &flight.CancelFlightInfoRequest{Info: &flight.FlightInfo{Endpoint: []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: []byte{}}}}}}),
	} {
		s, err := c.Client.DoAction(ctx, &flight.Action{Type: flight.CancelFlightInfoActionType, Body: body})
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Recv()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var out flight.CancelFlightInfoResult
		if err := proto.Unmarshal(res.GetBody(), &out); err != nil || out.GetStatus() != flight.CancelStatusNotCancellable {
			t.Fatalf("%s: %v (%v), want not cancellable", name, out.GetStatus(), err)
		}
	}
	// The deprecated CancelQuery action takes the same path.
	var anyReq anypb.Any
	//nolint:staticcheck // CancelQuery is deprecated, and still served
	if err := anyReq.MarshalFrom(&pb.ActionCancelQueryRequest{Info: marshal(t, info)}); err != nil {
		t.Fatal(err)
	}
	if err := rawAction(ctx, c.Client, flightsql.CancelQueryActionType, marshal(t, &anyReq)); err != nil {
		t.Fatalf("CancelQuery of endpoints without tickets: %v", err)
	}
	e.answers(c)
	if n := panics.Load(); n != 0 {
		t.Fatalf("%d panics recovered", n)
	}
}

func TestDoPutWithoutADescriptorIsInvalidArgument(t *testing.T) {
	var panics atomic.Int32
	e := start(t, countPanics(&panics))
	c := e.client()
	ctx := context.Background()
	put := func(msgs ...*flight.FlightData) error {
		s, err := c.Client.DoPut(ctx)
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if err := s.Send(m); err != nil {
				return err
			}
		}
		_ = s.CloseSend()
		for {
			if _, err := s.Recv(); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
		}
	}
	for name, msgs := range map[string][]*flight.FlightData{
		"a first message without a descriptor (the crash of issue 43)": {{}},
		"data without a descriptor":                                    {{DataHeader: []byte("x"), DataBody: []byte("y"), AppMetadata: []byte("z")}},
		"a descriptor only later":                                      {{}, {FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorCMD}}},
		"no message at all":                                            nil,
		"a descriptor without a cmd":                                   {{FlightDescriptor: &flight.FlightDescriptor{}}},
		"a path descriptor":                                            {{FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"a"}}}},
		"a cmd that is not a command":                                  {{FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte("\xff")}}},
	} {
		err := put(msgs...)
		wantStatus(t, name, err, codes.InvalidArgument)
	}
	// The first message the check read is the one the Flight SQL router
	// reads: a bind still binds.
	prep, err := c.Prepare(ctx, "SELECT CAST($1 AS BIGINT) + 1 AS n")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = prep.Close(ctx) }()
	params := record(int64(41))
	defer params.Release()
	prep.SetParameters(params)
	info, err := prep.Execute(ctx)
	_, recs := fetch(t, ctx, c, info, err)
	if got := column(t, recs, "n"); !slices.Equal(got, []string{"42"}) {
		t.Fatalf("the bound query answers %v", got)
	}
	e.answers(c)
	if n := panics.Load(); n != 0 {
		t.Fatalf("%d panics recovered", n)
	}
}

// A bind whose parameters are malformed Arrow (here a dense union whose
// type code names no child, and whose offset lies past its child) is
// InvalidArgument: reading the value panicked, and before the recovery
// that ended the process.
func TestAMalformedParameterArrayIsInvalidArgument(t *testing.T) {
	var panics atomic.Int32
	e := start(t, countPanics(&panics))
	c := e.client()
	ctx := context.Background()
	prep, err := c.Prepare(ctx, "SELECT CAST($1 AS VARCHAR) AS n")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = prep.Close(ctx) }()
	ut := arrow.DenseUnionOf([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, []arrow.UnionTypeCode{0})
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.Append(1)
	child := b.NewArray()
	defer child.Release()
	for name, buffers := range map[string][]*memory.Buffer{
		"a type code that names no child": {nil, memory.NewBufferBytes([]byte{100}), memory.NewBufferBytes(arrow.Int32Traits.CastToBytes([]int32{0}))},
		"an offset past its child's end":  {nil, memory.NewBufferBytes([]byte{0}), memory.NewBufferBytes(arrow.Int32Traits.CastToBytes([]int32{5}))},
	} {
		u := array.MakeFromData(array.NewData(ut, 1, buffers, []arrow.ArrayData{child.Data()}, 0, 0))
		params := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "0", Type: ut}}, nil), []arrow.Array{u}, 1)
		prep.SetParameters(params)
		_, err := prep.Execute(ctx)
		wantStatus(t, name, err, codes.InvalidArgument)
		wantLanceCode(t, name, err, nserror.InvalidInput)
		params.Release()
		u.Release()
	}
	e.answers(c)
	if n := panics.Load(); n != 0 {
		t.Fatalf("%d panics recovered", n)
	}
}
