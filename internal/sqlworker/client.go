package sqlworker

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/flightns/flightns/internal/grpcstatus"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/nserror"
)

// Client calls one worker over its socket.
type Client struct {
	cc    *grpc.ClientConn
	fc    flight.FlightServiceClient
	token string
	alloc memory.Allocator
}

// Dial connects to the worker listening on the Unix socket path.
func Dial(path, token string) (*Client, error) {
	// The worker is on this machine: reconnect quickly (it restarts in
	// well under a second).
	params := grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
		MinConnectTimeout: time.Second}
	cc, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithConnectParams(params),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage), grpc.MaxCallSendMsgSize(maxMessage)))
	if err != nil {
		return nil, err
	}
	return &Client{cc: cc, fc: flight.NewFlightServiceClient(cc), token: token, alloc: memory.DefaultAllocator}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.cc.Close() }

func (c *Client) ctx(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, tokenHeader, c.token)
}

// action runs one action and returns its one result's body.
func (c *Client) action(ctx context.Context, typ string, body []byte) ([]byte, error) {
	st, err := c.fc.DoAction(c.ctx(ctx), &flight.Action{Type: typ, Body: body})
	if err != nil {
		return nil, fromStatus(ctx, err)
	}
	r, err := st.Recv()
	if err != nil {
		return nil, fromStatus(ctx, err)
	}
	return r.GetBody(), nil
}

// Status asks the worker how it is.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var s Status
	b, err := c.action(ctx, actionStatus, nil)
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	return s, err
}

// Schema returns a query's result schema and parameter types (the gate
// runs in the worker; nothing of the query runs).
func (c *Client) Schema(ctx context.Context, query string) (*arrow.Schema, []arrow.DataType, error) {
	b, err := c.action(ctx, actionSchema, marshal(schemaRequest{Query: query, Scope: sqlengine.ScopeFrom(ctx)}))
	if err != nil {
		return nil, nil, err
	}
	var r schemaReply
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, nil, err
	}
	schema, err := flight.DeserializeSchema(r.Schema, c.alloc)
	if err != nil {
		return nil, nil, err
	}
	ps, err := flight.DeserializeSchema(r.Params, c.alloc)
	if err != nil {
		return nil, nil, err
	}
	params := make([]arrow.DataType, ps.NumFields())
	for i, f := range ps.Fields() {
		params[i] = f.Type
	}
	return schema, params, nil
}

// Query runs a query in the worker once sequence after is visible there,
// and streams its result.
func (c *Client) Query(ctx context.Context, query string, args []any, after uint64) (*sqlengine.Result, error) {
	targs, err := encodeArgs(args)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(c.ctx(ctx))
	stream, err := c.fc.DoGet(sctx, &flight.Ticket{Ticket: marshal(queryTicket{Query: query, Args: targs, After: after, Scope: sqlengine.ScopeFrom(ctx)})})
	if err != nil {
		cancel()
		return nil, fromStatus(ctx, err)
	}
	rdr, err := flight.NewRecordReader(stream, ipc.WithAllocator(c.alloc))
	if err != nil {
		cancel()
		return nil, fromStatus(ctx, err)
	}
	var seq uint64
	if md, err := stream.Header(); err == nil {
		if v := md.Get(seqHeader); len(v) == 1 {
			seq, _ = strconv.ParseUint(v[0], 10, 64)
		}
	}
	return sqlengine.NewResult(&streamReader{Reader: rdr, ctx: ctx}, seq, func() {
		rdr.Release()
		cancel()
	}), nil
}

// streamReader turns the errors of a worker's stream into flightns errors.
type streamReader struct {
	*flight.Reader
	ctx context.Context
}

func (r *streamReader) Err() error { return fromStatus(r.ctx, r.Reader.Err()) }

// Next skips empty batches (the worker sends one with the schema).
func (r *streamReader) Next() bool {
	for r.Reader.Next() {
		if r.Reader.RecordBatch().NumRows() > 0 {
			return true
		}
	}
	return false
}

// fromStatus turns a worker's status error back into the error it was:
// its Lance code when it carries one; the worker's absence is
// ServiceUnavailable; the caller's own deadline or cancel stays what it
// is.
func fromStatus(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return nserror.New(nserror.ServiceUnavailable, "query stopped: %w", ctx.Err())
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	if code, ok := grpcstatus.Code(err); ok {
		return nserror.New(code, "%s", st.Message())
	}
	switch st.Code() {
	case codes.Unavailable, codes.Canceled, codes.Unknown, codes.Internal:
		return nserror.New(nserror.ServiceUnavailable, "the SQL worker stopped answering (it is restarted; retry): %s", st.Message())
	case codes.DeadlineExceeded:
		return nserror.New(nserror.ServiceUnavailable, "query stopped: %w", context.DeadlineExceeded)
	}
	return errors.New(st.Message())
}
