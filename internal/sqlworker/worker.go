package sqlworker

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/flightns/flightns/internal/grpcstatus"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/obs"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
	"github.com/flightns/flightns/planner"
)

// ServeConfig configures a worker process.
type ServeConfig struct {
	Objects *objstore.Store
	Redis   redisstate.Client // a go-redis UniversalClient
	Catalog string
	Engine  sqlengine.Config
	// Token is what every call must carry.
	Token string
	// StopGrace is how long a query may go on after its interrupt (its
	// deadline, its client's cancel) before the worker gives up on it and
	// exits (default 5 s).
	StopGrace time.Duration
	Logger    *slog.Logger

	// beforeCall, when set, runs as every call starts, inside the
	// recovery (a test seam: a test plants a bug there).
	beforeCall func(method string)
}

// ErrStuck ends Serve when a stopped query did not end within StopGrace.
var ErrStuck = errors.New("sqlworker: a stopped query did not end; the worker exits so that a new one takes its place")

// maxMessage bounds one message of the private protocol, and
// maxHeaderList the metadata of one call (its token and a request id).
const (
	maxMessage    = 64 << 20
	maxHeaderList = 64 << 10
)

// Serve opens the catalog read-only with its SQL engine and answers the
// server on l until ctx ends (nil) or a stopped query overstays (ErrStuck).
func Serve(ctx context.Context, l net.Listener, cfg ServeConfig) error {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := cfg.Logger
	start := time.Now()
	table, err := manifesttable.Open(ctx, manifesttable.Config{Objects: cfg.Objects, Redis: cfg.Redis, Catalog: cfg.Catalog,
		Engine: cfg.Engine, ReadOnly: true, Logger: log})
	if err != nil {
		return fmt.Errorf("sqlworker: opening the catalog: %w", err)
	}
	stuck := false
	defer func() {
		if !stuck { // closing DuckDB would wait for the stuck query
			_ = table.Close()
		}
	}()
	uri, err := namespace.LocationURI(cfg.Objects)
	if err != nil {
		return err
	}
	if err := planner.NewScanner(scanCatalog{Table: table, uri: uri}).RegisterSQL(ctx); err != nil {
		return fmt.Errorf("sqlworker: the plan_scan SQL function: %w", err)
	}
	w := &worker{table: table, token: cfg.Token, watch: newWatch(cfg.StopGrace), alloc: memory.DefaultAllocator, beforeCall: cfg.beforeCall}
	// The recovery is outermost: a panic, in a handler or in the token's
	// check, is Internal, logged with its stack, and counted in Status
	// (the supervisor reports it: SupervisorConfig.Panicked).
	recoverUnary, recoverStream := obs.RecoveryInterceptors(log, "sql-worker", func() { w.panics.Add(1) })
	gs := grpc.NewServer(grpc.MaxRecvMsgSize(maxMessage), grpc.MaxSendMsgSize(maxMessage), grpc.MaxHeaderListSize(maxHeaderList),
		grpc.ChainUnaryInterceptor(recoverUnary, w.unary), grpc.ChainStreamInterceptor(recoverStream, w.stream))
	flight.RegisterFlightServiceServer(gs, w)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(l) }()
	log.Info("SQL worker ready", "took", time.Since(start).Round(time.Millisecond), "catalog_seq", table.Visible())
	overstayed := w.watch.run(ctx)
	select {
	case <-ctx.Done():
		gs.Stop()
		return nil
	case <-overstayed:
		stuck = true
		return ErrStuck
	case err := <-served:
		return err
	}
}

// scanCatalog is what the worker's planner reads: its own replica.
type scanCatalog struct {
	*manifesttable.Table
	uri func(string) string
}

func (c scanCatalog) LocationURI(loc string) string    { return c.uri(loc) }
func (w *worker) authorized(ctx context.Context) error { return checkToken(ctx, w.token) }

// worker answers the private protocol.
type worker struct {
	flight.BaseFlightServer
	table      *manifesttable.Table
	token      string
	watch      *watch
	alloc      memory.Allocator
	panics     atomic.Uint64 // recovered, reported by Status
	beforeCall func(method string)
}

func checkToken(ctx context.Context, token string) error {
	md, _ := metadata.FromIncomingContext(ctx)
	got := md.Get(tokenHeader)
	if len(got) != 1 || subtle.ConstantTimeCompare([]byte(got[0]), []byte(token)) != 1 {
		return status.Error(codes.Unauthenticated, "sqlworker: wrong or missing token")
	}
	return nil
}

func (w *worker) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if w.beforeCall != nil {
		w.beforeCall(info.FullMethod)
	}
	if err := w.authorized(ctx); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (w *worker) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if w.beforeCall != nil {
		w.beforeCall(info.FullMethod)
	}
	if err := w.authorized(ss.Context()); err != nil {
		return err
	}
	done := w.watch.begin(ss.Context())
	defer done()
	return grpcstatus.FromError(h(srv, ss))
}

// DoGet runs the query a ticket names and streams its result.
func (w *worker) DoGet(tk *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	ctx := stream.Context()
	var t queryTicket
	if err := json.Unmarshal(tk.GetTicket(), &t); err != nil {
		return nserror.New(nserror.InvalidInput, "sqlworker: a bad ticket: %v", err)
	}
	args, err := decodeArgs(t.Args)
	if err != nil {
		return err
	}
	res, err := w.table.QueryAfter(sqlengine.WithScope(ctx, t.Scope), t.After, t.Query, args...)
	if err != nil {
		return err
	}
	defer res.Release()
	if err := stream.SetHeader(metadata.Pairs(seqHeader, strconv.FormatUint(res.Seq, 10))); err != nil {
		return err
	}
	wr := flight.NewRecordWriter(stream, ipc.WithSchema(res.Schema()), ipc.WithAllocator(w.alloc))
	// The schema goes now, with an empty batch (the server's reader skips
	// it): the server waits for it to start the query's stream, and a
	// query whose first rows take long (an aggregate) would hold that
	// wait — and the client's GetFlightInfo, and any cancel of it — until
	// they come.
	if err := writeSchema(wr, res.Schema(), w.alloc); err != nil {
		return err
	}
	b := batcher{schema: res.Schema(), alloc: w.alloc, write: wr.Write}
	for res.Next() {
		if err := b.add(res.RecordBatch()); err != nil {
			b.drop()
			_ = wr.Close()
			return err
		}
	}
	err = b.flush()
	if err == nil {
		err = res.Err()
	}
	if err != nil {
		_ = wr.Close()
		return err
	}
	return wr.Close()
}

// writeSchema writes schema's message, and an empty batch with it (the
// IPC writer writes a schema only before a batch).
func writeSchema(wr *flight.Writer, schema *arrow.Schema, alloc memory.Allocator) error {
	cols := make([]arrow.Array, schema.NumFields())
	for i, f := range schema.Fields() {
		cols[i] = array.MakeArrayOfNull(alloc, f.Type, 0)
	}
	rec := array.NewRecordBatch(schema, cols, 0)
	for _, c := range cols {
		c.Release()
	}
	defer rec.Release()
	return wr.Write(rec)
}

// A streamed result goes to the server in batches of up to batchRows rows
// or batchBytes bytes, or what came within batchWait: DuckDB yields 2,048
// rows at a time, and the server relays every message at normal priority
// (beside commits), at a cost per message as much as per byte.
const (
	batchRows  = 64 << 10
	batchBytes = 4 << 20
	batchWait  = 50 * time.Millisecond
)

// batcher gathers record batches into larger ones for write.
type batcher struct {
	schema  *arrow.Schema
	alloc   memory.Allocator
	write   func(arrow.RecordBatch) error
	pending []arrow.RecordBatch
	rows    int64
	bytes   int64
	since   time.Time // when the first pending batch came
}

// add takes rec (the caller keeps its reference) and writes what has
// gathered once it is large or old enough.
func (b *batcher) add(rec arrow.RecordBatch) error {
	rec.Retain()
	if len(b.pending) == 0 {
		b.since = time.Now()
	}
	b.pending = append(b.pending, rec)
	b.rows += rec.NumRows()
	b.bytes += sqlengine.RecordBytes(rec)
	if b.rows >= batchRows || b.bytes >= batchBytes || time.Since(b.since) >= batchWait {
		return b.flush()
	}
	return nil
}

// flush writes what has gathered as one batch (as it came, if its
// columns cannot be joined).
func (b *batcher) flush() error {
	defer b.drop()
	if len(b.pending) < 2 {
		for _, r := range b.pending {
			if err := b.write(r); err != nil {
				return err
			}
		}
		return nil
	}
	cols := make([]arrow.Array, b.schema.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	parts := make([]arrow.Array, len(b.pending))
	for i := range cols {
		for j, r := range b.pending {
			parts[j] = r.Column(i)
		}
		c, err := array.Concatenate(parts, b.alloc)
		if err != nil {
			for _, r := range b.pending {
				if err := b.write(r); err != nil {
					return err
				}
			}
			return nil
		}
		cols[i] = c
	}
	rec := array.NewRecordBatch(b.schema, cols, b.rows)
	defer rec.Release()
	return b.write(rec)
}

// drop releases what has gathered.
func (b *batcher) drop() {
	for _, r := range b.pending {
		r.Release()
	}
	b.pending, b.rows, b.bytes = b.pending[:0], 0, 0
}

// DoAction answers "schema" and "status".
func (w *worker) DoAction(a *flight.Action, stream flight.FlightService_DoActionServer) error {
	var body []byte
	switch a.GetType() {
	case actionSchema:
		var req schemaRequest
		if err := json.Unmarshal(a.GetBody(), &req); err != nil {
			return nserror.New(nserror.InvalidInput, "sqlworker: a bad schema request: %v", err)
		}
		schema, params, err := w.table.QuerySchema(sqlengine.WithScope(stream.Context(), req.Scope), req.Query)
		if err != nil {
			return err
		}
		fields := make([]arrow.Field, len(params))
		for i, t := range params {
			fields[i] = arrow.Field{Name: "$" + strconv.Itoa(i+1), Type: t, Nullable: true}
		}
		body = marshal(schemaReply{Schema: flight.SerializeSchema(schema, w.alloc),
			Params: flight.SerializeSchema(arrow.NewSchema(fields, nil), w.alloc)})
	case actionStatus:
		body = marshal(Status{Pid: os.Getpid(), Visible: w.table.Visible(), Panics: w.panics.Load()})
	default:
		return status.Errorf(codes.Unimplemented, "sqlworker: no action %q", a.GetType())
	}
	return stream.Send(&flight.Result{Body: body})
}

// watch notices a call that goes on StopGrace after its context ended:
// DuckDB did not honour the interrupt.
type watch struct {
	grace time.Duration

	mu    sync.Mutex
	calls map[*call]struct{}
}

type call struct {
	ctx     context.Context
	endedAt time.Time // when ctx ended, once seen
}

func newWatch(grace time.Duration) *watch {
	return &watch{grace: grace, calls: map[*call]struct{}{}}
}

// begin registers a call; the function it returns ends it.
func (w *watch) begin(ctx context.Context) func() {
	c := &call{ctx: ctx}
	w.mu.Lock()
	w.calls[c] = struct{}{}
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		delete(w.calls, c)
		w.mu.Unlock()
	}
}

// run checks the calls until ctx ends; the channel closes when one is
// stuck.
func (w *watch) run(ctx context.Context) <-chan struct{} {
	stuck := make(chan struct{})
	go func() {
		t := time.NewTicker(w.grace / 10)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				if w.check(now) {
					close(stuck)
					return
				}
			}
		}
	}()
	return stuck
}

func (w *watch) check(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for c := range w.calls {
		if c.ctx.Err() == nil {
			continue
		}
		if c.endedAt.IsZero() {
			c.endedAt = now
		} else if now.Sub(c.endedAt) > w.grace {
			return true
		}
	}
	return false
}
