package flightserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/testutil/nstest"
)

// FuzzFlightRPC drives every Flight RPC of a real server (one per fuzzing
// process, over a real Redis and a file:// root, reused by every input)
// with fuzzed and missing parts: DoAction of every action type
// ListActions lists (and the Flight SQL ones arrow-go routes besides)
// with any body, DoPut with any first message (no descriptor, any
// command, a real prepared statement's bind with any IPC bytes, any
// app_metadata), DoGet of any ticket (a change feed's among them, read
// for 2 s: one that follows streams for as long as it is read),
// DoExchange, GetFlightInfo,
// GetSchema and PollFlightInfo of any descriptor (type, path, command,
// any Any), Handshake with any payload and header, ListActions and
// ListFlights — as an admin, a principal with one namespace grant, a
// user, or nobody. What must hold: every answer is a success or a gRPC
// status with a client's code (never Unknown, Internal or Unavailable),
// no panic is recovered (Config.Panicked), and the server still answers
// a query after each input. Run it with
//
//	go test -tags duckdb_arrow -run XXX -fuzz FuzzFlightRPC ./flightserver
//
// (make fuzz runs it); the seeds, among them the two messages that took
// the process down in issue 43 (testdata/fuzz/FuzzFlightRPC), run in
// every go test.
//
// The inputs: rpc picks the RPC (its low 4 bits) and the caller (bits 4
// and 5); mode shapes the message (per RPC, below); name is an action
// type (empty: mode picks a listed one), an Any type or a header; a and b
// are the bytes of bodies, commands, tickets and payloads.
func FuzzFlightRPC(f *testing.F) {
	fz := startFuzzServer(f)
	for i, typ := range fz.actions {
		f.Add(uint8(rpcDoAction), uint8(i), typ, []byte{}, []byte{})
		f.Add(uint8(rpcDoAction), uint8(i), typ, []byte(`{"id":["ns","t"]}`), []byte{})
		f.Add(uint8(rpcDoAction), uint8(i)|0x80, typ, []byte("\x0a\x02ns\xff"), []byte{})
	}
	for rpc := range uint8(rpcCount) {
		for _, mode := range []uint8{0, 1, 2, 3, 4, 8, 16} {
			f.Add(rpc, mode, "", []byte{}, []byte{})
			f.Add(rpc|0x10, mode, "CommandStatementQuery", []byte("SELECT object_id FROM tables"), []byte("ns/t"))
		}
	}
	f.Add(uint8(rpcGetFlightInfo), uint8(4<<2|2), "", []byte(`{"id":["ns","pt"],"filter":"country = 'a'"}`), []byte{})
	f.Add(uint8(rpcDoGet), uint8(1), "", []byte("nope\n{\"id\":[\"ns\",\"pt\"]}"), []byte{})
	f.Add(uint8(rpcGetFlightInfo), uint8(5<<2|2), "", []byte(`{"after": 1, "bogus": 2}`), []byte{})
	for _, ticket := range []string{`{}`, `{"follow": false}`, `{"after": -1}`, `{"table": ["a", ""]}`, `{"types": [1]}`, `{"namespace": ["ns"], "follow": false} x`} {
		f.Add(uint8(rpcDoGet), uint8(4), "", []byte(ticket), []byte{})
	}
	f.Add(uint8(rpcDoPut), uint8(2), "", []byte{}, []byte{0xff, 0xff, 0xff, 0xff, 0x10, 0, 0, 0, 1, 2, 3})
	for i, b := range fz.bindBatches {
		f.Add(uint8(rpcDoPut), uint8(2|i<<5), "", b.DataHeader, b.DataBody)
	}
	f.Add(uint8(rpcHandshake)|0x20, uint8(3), "Basic YW5hOmFuYS1wdw==", []byte{}, []byte{})

	f.Fuzz(func(t *testing.T, rpc, mode uint8, name string, a, b []byte) {
		fz.logs.reset()
		ctx, cancel := context.WithTimeout(fz.as(rpc>>4&3), 30*time.Second)
		defer cancel()
		err := fz.call(ctx, rpc&0xf, mode, name, a, b)
		if err != nil {
			if ctx.Err() != nil {
				t.Fatalf("the call did not end within 30 s: %v", err)
			}
			st, ok := status.FromError(err)
			switch {
			case !ok:
				t.Fatalf("not a gRPC status: %v", err)
			case st.Code() == codes.Unknown || st.Code() == codes.Internal || st.Code() == codes.Unavailable || st.Code() == codes.DataLoss:
				t.Fatalf("a server's failure, not a client's: %v\n%s", err, fz.logs.String())
			}
		}
		if n := fz.panics.Load(); n != 0 {
			t.Fatalf("%d panics recovered:\n%s", n, fz.logs.String())
		}
		if err := fz.answers(); err != nil {
			t.Fatalf("the server answers no query after the input: %v\n%s", err, fz.logs.String())
		}
	})
}

// The RPCs, by the low bits of FuzzFlightRPC's rpc.
const (
	rpcDoAction = iota
	rpcDoPut
	rpcDoGet
	rpcDoExchange
	rpcGetFlightInfo
	rpcGetSchema
	rpcPollFlightInfo
	rpcHandshake
	rpcListActions
	rpcListFlights
	rpcCount
)

// fuzzServer is the one server of a fuzzing process.
type fuzzServer struct {
	client  *flightsql.Client
	actions []string // every action type ListActions lists, then arrow-go's others
	handle  []byte   // a prepared statement of the admin's, for binds
	// bindSchemas are the IPC schema messages a bind starts with (an
	// int64 parameter, a dense union one), and bindBatches a valid batch
	// of each (seeds).
	bindSchemas, bindBatches [2]*flight.FlightData
	panics                   atomic.Int32
	logs                     syncBuffer
}

// fuzzUsers: an admin, a principal granted read on namespace ns and
// nothing else, and a user.
var fuzzUsers = auth.Config{
	Tokens: []auth.TokenEntry{{Token: "fuzz-admin", Name: "admin", Role: "admin"}, {Token: "fuzz-tenant", Name: "tenant", Role: "none"}},
	Users:  []auth.UserEntry{{Name: "ana", Password: "ana-pw", Role: "write"}},
}

func startFuzzServer(f *testing.F) *fuzzServer {
	f.Helper()
	fz := &fuzzServer{}
	env := nstest.New(f)
	svc := env.Open(f)
	a, err := auth.New(fuzzUsers)
	if err != nil {
		f.Fatal(err)
	}
	srv, err := New(Config{Service: svc, Auth: a, Version: "fuzz", Panicked: func() { fz.panics.Add(1) },
		Logger: slog.New(slog.NewTextHandler(&fz.logs, &slog.HandlerOptions{Level: slog.LevelError})),
		Limits: Limits{QueryTimeout: 5 * time.Second, MaxMessageBytes: 4 << 20}})
	if err != nil {
		f.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	f.Cleanup(srv.Stop)
	if fz.client, err = flightsql.NewClient(l.Addr().String(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20))); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = fz.client.Close() })

	ctx := fz.as(0)
	ctx0 := context.Background()
	must(svc.CreateNamespace(ctx0, api.CreateNamespaceRequest{ID: api.ID{"ns"}}))
	must(svc.DeclareTable(ctx0, api.DeclareTableRequest{ID: api.ID{"ns", "t"}}))
	if err := svc.Access().Grant(ctx0, auth.Grant{Namespace: []string{"ns"}, Principal: "tenant", Role: auth.Read}); err != nil {
		f.Fatal(err)
	}
	create := map[string]any{"id": []string{"ns", "pt"}, "schema": json.RawMessage(plannerSchema),
		"spec": map[string]any{"fields": []any{map[string]any{"source_ids": []int{2}, "transform": map[string]any{"type": "identity"}}}}}
	if err := doAction(ctx, fz.client.Client, "CreatePartitionedTable", create, nil); err != nil {
		f.Fatal(err)
	}
	prep, err := fz.client.Prepare(ctx, "SELECT CAST($1 AS BIGINT) AS n")
	if err != nil {
		f.Fatal(err)
	}
	fz.handle = prep.Handle()
	for i, col := range bindColumns() {
		rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "0", Type: col.DataType(), Nullable: true}}, nil), []arrow.Array{col}, int64(col.Len()))
		var msgs capturedData
		w := flight.NewRecordWriter(&msgs, ipc.WithSchema(rec.Schema()))
		if err := w.Write(rec); err != nil {
			f.Fatal(err)
		}
		_ = w.Close()
		rec.Release()
		col.Release()
		fz.bindSchemas[i], fz.bindBatches[i] = msgs[0], msgs[1]
	}
	la, err := fz.client.Client.ListActions(ctx, &flight.Empty{})
	if err != nil {
		f.Fatal(err)
	}
	for {
		at, err := la.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			f.Fatal(err)
		}
		fz.actions = append(fz.actions, at.GetType())
	}
	// Routed by arrow-go's Flight SQL server, though not listed.
	for _, typ := range []string{flightsql.BeginTransactionActionType, flightsql.BeginSavepointActionType, flightsql.EndTransactionActionType,
		flightsql.EndSavepointActionType, flightsql.CreatePreparedSubstraitPlanActionType} {
		if !strings.Contains(strings.Join(fz.actions, "\n")+"\n", typ+"\n") {
			fz.actions = append(fz.actions, typ)
		}
	}
	return fz
}

// as is the context of a caller: 0 the admin, 1 the tenant (one
// namespace), 2 nobody, 3 the user ana (Basic).
func (fz *fuzzServer) as(who uint8) context.Context {
	ctx := context.Background()
	switch who {
	case 0:
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer fuzz-admin")
	case 1:
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer fuzz-tenant")
	case 3:
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Basic YW5hOmFuYS1wdw==") // ana:ana-pw
	}
	return ctx
}

// answers runs a query as the admin.
func (fz *fuzzServer) answers() error {
	ctx, cancel := context.WithTimeout(fz.as(0), 30*time.Second)
	defer cancel()
	info, err := fz.client.Execute(ctx, "SELECT 42 AS n")
	if err != nil {
		return err
	}
	r, err := fz.client.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return err
	}
	defer r.Release()
	rows := int64(0)
	for r.Next() {
		rows += r.RecordBatch().NumRows()
	}
	if err := r.Err(); err != nil {
		return err
	}
	if rows != 1 {
		return errors.New("SELECT 42 answered no row")
	}
	return nil
}

// sqlAny packs value as an Any of the Flight SQL message typ
// ("CommandStatementQuery", …), whatever value holds.
func sqlAny(typ string, value []byte) []byte {
	b, _ := proto.Marshal(&anypb.Any{TypeUrl: "type.googleapis.com/arrow.flight.protocol.sql." + utf8(typ), Value: value})
	return b
}

func packed(m proto.Message) []byte {
	a, _ := anypb.New(m)
	b, _ := proto.Marshal(a)
	return b
}

// actionRequests are the request messages of the Flight SQL actions whose
// body is an Any.
var actionRequests = map[string]string{
	flightsql.CreatePreparedStatementActionType:     "ActionCreatePreparedStatementRequest",
	flightsql.ClosePreparedStatementActionType:      "ActionClosePreparedStatementRequest",
	flightsql.CreatePreparedSubstraitPlanActionType: "ActionCreatePreparedSubstraitPlanRequest",
	flightsql.CancelQueryActionType:                 "ActionCancelQueryRequest",
	flightsql.BeginTransactionActionType:            "ActionBeginTransactionRequest",
	flightsql.BeginSavepointActionType:              "ActionBeginSavepointRequest",
	flightsql.EndTransactionActionType:              "ActionEndTransactionRequest",
	flightsql.EndSavepointActionType:                "ActionEndSavepointRequest",
}

// descriptor is a fuzzed FlightDescriptor: mode's low 2 bits its type
// (unknown, path, cmd, or one no protocol defines), the path b split at
// "/", and by mode's next bits a command that is a, an Any of the type
// name holding a, a statement query of a, a prepared statement query of
// the handle a, or a plan_scan command of a.
func descriptor(mode uint8, name string, a, b []byte) *flight.FlightDescriptor {
	d := &flight.FlightDescriptor{Type: []flight.DescriptorType{flight.DescriptorUNKNOWN, flight.DescriptorPATH, flight.DescriptorCMD, 7}[mode&3]}
	if len(b) > 0 {
		d.Path = strings.Split(utf8(string(b)), "/")
	}
	switch mode >> 2 % 6 {
	case 0:
		d.Cmd = a
	case 1:
		d.Cmd = sqlAny(name, a)
	case 2:
		d.Cmd = packed(&pb.CommandStatementQuery{Query: utf8(string(a))})
	case 3:
		d.Cmd = packed(&pb.CommandPreparedStatementQuery{PreparedStatementHandle: a})
	case 4:
		d.Cmd = append(append([]byte(`{"plan_scan": `), a...), '}')
	case 5:
		d.Cmd = append(append([]byte(`{"changes": `), a...), '}')
	}
	return d
}

// call runs one RPC to its end and returns its error.
func (fz *fuzzServer) call(ctx context.Context, rpc, mode uint8, name string, a, b []byte) error {
	c := fz.client.Client
	switch rpc {
	case rpcDoAction:
		typ := utf8(name)
		if typ == "" {
			typ = fz.actions[int(mode&0x7f)%len(fz.actions)]
		}
		body := a
		if req, ok := actionRequests[typ]; ok && mode&0x80 != 0 {
			body = sqlAny(req, a)
		}
		s, err := c.DoAction(ctx, &flight.Action{Type: typ, Body: body})
		if err != nil {
			return err
		}
		return drainRecv(func() error { _, err := s.Recv(); return err })
	case rpcDoPut, rpcDoExchange:
		return fz.upload(ctx, rpc, mode, name, a, b)
	case rpcDoGet:
		var tk []byte
		switch mode & 3 {
		case 0:
			tk = a
		case 1:
			tk = append([]byte(planTicketPrefix), a...)
		case 2:
			tk = packed(&pb.TicketStatementQuery{StatementHandle: a})
		case 3:
			tk = sqlAny(name, a)
		}
		if mode&4 != 0 {
			// The change feed: a ticket that asks to follow streams for
			// as long as it is read, so it is read for 2 s.
			tk = append([]byte(changesTicketPrefix), a...)
			fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			s, err := c.DoGet(fctx, &flight.Ticket{Ticket: tk})
			if err == nil {
				err = drainRecv(func() error { _, err := s.Recv(); return err })
			}
			if fctx.Err() != nil && ctx.Err() == nil {
				return nil
			}
			return err
		}
		s, err := c.DoGet(ctx, &flight.Ticket{Ticket: tk})
		if err != nil {
			return err
		}
		return drainRecv(func() error { _, err := s.Recv(); return err })
	case rpcGetFlightInfo:
		_, err := c.GetFlightInfo(ctx, descriptor(mode, name, a, b))
		return err
	case rpcGetSchema:
		_, err := c.GetSchema(ctx, descriptor(mode, name, a, b))
		return err
	case rpcPollFlightInfo:
		_, err := c.PollFlightInfo(ctx, descriptor(mode, name, a, b))
		return err
	case rpcHandshake:
		if mode&1 != 0 {
			if strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
				return nil // gRPC sends printable ASCII header values only
			}
			ctx = metadata.AppendToOutgoingContext(context.Background(), "authorization", name)
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
		}
		s, err := c.Handshake(ctx)
		if err != nil {
			return err
		}
		if mode&2 != 0 {
			_ = s.Send(&flight.HandshakeRequest{Payload: a, ProtocolVersion: uint64(len(b))})
		}
		_ = s.CloseSend()
		return drainRecv(func() error { _, err := s.Recv(); return err })
	case rpcListActions:
		s, err := c.ListActions(ctx, &flight.Empty{})
		if err != nil {
			return err
		}
		return drainRecv(func() error { _, err := s.Recv(); return err })
	default:
		s, err := c.ListFlights(ctx, &flight.Criteria{Expression: a})
		if err != nil {
			return err
		}
		return drainRecv(func() error { _, err := s.Recv(); return err })
	}
}

// upload runs a DoPut or a DoExchange: by mode's low 2 bits its first
// message carries no descriptor, one whose command is a, a bind of the
// admin's prepared statement, or an Any of the type name holding a; its
// data header and body are the halves of b; mode 4 adds a as its
// app_metadata, mode 8 a second message, mode 16 sends no message at
// all. A bind's first message is the IPC schema of an int64 or (mode
// 32) a dense union parameter, and its second one, always sent, the
// record batch whose header is a and body b.
func (fz *fuzzServer) upload(ctx context.Context, rpc, mode uint8, name string, a, b []byte) error {
	c := fz.client.Client
	type stream interface {
		Send(*flight.FlightData) error
		CloseSend() error
	}
	var (
		s    stream
		recv func() error
	)
	if rpc == rpcDoPut {
		ps, err := c.DoPut(ctx)
		if err != nil {
			return err
		}
		s, recv = ps, func() error { _, err := ps.Recv(); return err }
	} else {
		xs, err := c.DoExchange(ctx)
		if err != nil {
			return err
		}
		s, recv = xs, func() error { _, err := xs.Recv(); return err }
	}
	first := &flight.FlightData{DataHeader: b[:len(b)/2], DataBody: b[len(b)/2:]}
	switch mode & 3 {
	case 1:
		first.FlightDescriptor = &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: a}
	case 2:
		first.FlightDescriptor = &flight.FlightDescriptor{Type: flight.DescriptorCMD,
			Cmd: packed(&pb.CommandPreparedStatementQuery{PreparedStatementHandle: fz.handle})}
		first.DataHeader, first.DataBody = fz.bindSchemas[mode>>5&1].DataHeader, nil
		mode |= 8
	case 3:
		first.FlightDescriptor = &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: sqlAny(name, a)}
	}
	if mode&4 != 0 {
		first.AppMetadata = a
	}
	if mode&16 == 0 {
		_ = s.Send(first)
		if mode&8 != 0 {
			_ = s.Send(&flight.FlightData{DataHeader: a, DataBody: b, AppMetadata: []byte(name)})
		}
	}
	_ = s.CloseSend()
	return drainRecv(recv)
}

// bindColumns are the parameter columns of the bind seeds: an int64 and
// a dense union of an int64 and a string.
func bindColumns() []arrow.Array {
	ib := array.NewInt64Builder(memory.DefaultAllocator)
	ib.AppendValues([]int64{1, 2}, nil)
	ub := array.NewDenseUnionBuilder(memory.DefaultAllocator, arrow.DenseUnionOf(
		[]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}},
		[]arrow.UnionTypeCode{0, 1}))
	ub.Append(0)
	ub.Child(0).(*array.Int64Builder).Append(7)
	ub.Append(1)
	ub.Child(1).(*array.StringBuilder).Append("x")
	return []arrow.Array{ib.NewArray(), ub.NewArray()}
}

// capturedData keeps the messages a Flight record writer sends.
type capturedData []*flight.FlightData

func (c *capturedData) Send(fd *flight.FlightData) error {
	*c = append(*c, proto.Clone(fd).(*flight.FlightData))
	return nil
}

// utf8 is s with each invalid byte replaced: protobuf's strings are
// UTF-8, and a client refuses to send one that is not.
func utf8(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// drainRecv receives until the stream ends: nil at its end, else its
// error.
func drainRecv(recv func() error) error {
	for {
		if err := recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// syncBuffer is a bytes.Buffer for a logger many goroutines write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}
