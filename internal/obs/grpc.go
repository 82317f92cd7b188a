package obs

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/flightns/flightns/internal/grpcstatus"
	"github.com/flightns/flightns/nserror"
)

// Interceptors returns the gRPC interceptors of the Flight surface: each
// call gets a request id (kept from the caller's x-request-id, returned in
// the reply header), is counted and timed by operation and result code,
// and is logged (debug; warn when the server failed).
func Interceptors(m *Metrics, log *slog.Logger) (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		start := time.Now()
		id := incomingID(ctx)
		_ = grpc.SetHeader(ctx, metadata.Pairs(RequestIDHeader, id))
		op := methodName(info.FullMethod)
		if d, ok := req.(*flight.FlightDescriptor); ok {
			op += "/" + commandName(d.GetCmd())
		}
		resp, err := h(WithRequestID(ctx, id), req)
		finish(m, log, id, op, start, err)
		return resp, err
	}
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		start := time.Now()
		id := incomingID(ss.Context())
		_ = ss.SetHeader(metadata.Pairs(RequestIDHeader, id))
		w := &observedStream{ServerStream: ss, ctx: WithRequestID(ss.Context(), id), op: methodName(info.FullMethod)}
		err := h(srv, w)
		finish(m, log, id, w.op, start, err)
		return err
	}
	return unary, stream
}

func finish(m *Metrics, log *slog.Logger, id, op string, start time.Time, err error) {
	took := time.Since(start)
	code := codeName(err)
	if m != nil {
		m.Request("flight", op, code, took)
		if isQuery(op) {
			m.Query(took)
		}
	}
	if strings.HasPrefix(op, "Check") || strings.HasPrefix(op, "Watch") {
		return // health probes
	}
	lv := slog.LevelDebug
	if code == nserror.Internal.String() || code == "Unknown" || code == nserror.ServiceUnavailable.String() {
		lv = slog.LevelWarn
	}
	log.Log(context.Background(), lv, "request", "surface", "flight", "op", op, "code", code, "took", took, "request_id", id, "err", err)
}

func isQuery(op string) bool {
	return op == "DoGet" || op == "GetFlightInfo/CommandStatementQuery" || op == "GetFlightInfo/CommandPreparedStatementQuery"
}

func incomingID(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(RequestIDHeader); len(v) > 0 {
		return requestID(v[0])
	}
	return newRequestID()
}

// methodName is the last element of a full gRPC method name.
func methodName(full string) string {
	if i := strings.LastIndexByte(full, '/'); i >= 0 {
		return full[i+1:]
	}
	return full
}

// commandName is the Flight SQL command type packed in a descriptor's
// command ("CommandStatementQuery", …), or "cmd" when it is something else.
func commandName(cmd []byte) string {
	var a anypb.Any
	if proto.Unmarshal(cmd, &a) != nil || a.GetTypeUrl() == "" {
		return "cmd"
	}
	u := a.GetTypeUrl()
	return u[strings.LastIndexByte(u, '.')+1:]
}

// codeName is "OK", the Lance Namespace code's name when the error carries
// one, else the gRPC code's name.
func codeName(err error) string {
	if err == nil {
		return "OK"
	}
	st, ok := status.FromError(err)
	if !ok {
		if errors.Is(err, context.Canceled) {
			return codes.Canceled.String()
		}
		return nserror.CodeOf(err).String()
	}
	if code, ok := grpcstatus.Code(err); ok {
		return code.String()
	}
	return st.Code().String()
}

// observedStream carries the request id and learns a DoAction's action
// type from its first message.
type observedStream struct {
	grpc.ServerStream
	ctx context.Context
	op  string
}

func (s *observedStream) Context() context.Context { return s.ctx }

func (s *observedStream) RecvMsg(msg any) error {
	err := s.ServerStream.RecvMsg(msg)
	if a, ok := msg.(*flight.Action); ok && err == nil && s.op == "DoAction" {
		s.op = a.GetType()
	}
	return err
}
