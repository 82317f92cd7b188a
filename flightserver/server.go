package flightserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/flightns/flightns/internal/audit"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/grpcstatus"
	"github.com/flightns/flightns/internal/idempotency"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/obs"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/planner"
)

// SQL runs the catalog's queries, each one read-only statement that the
// gate admits: in this process's SQL engine, or in a SQL worker process.
type SQL interface {
	// Schema returns the result schema of a query and the Arrow types of
	// its parameters, running nothing.
	Schema(ctx context.Context, query string) (*arrow.Schema, []arrow.DataType, error)
	// Query runs a query once every change up to catalog sequence after
	// is visible, and streams its result; past MaxQueries running at once
	// it fails at once with Throttling. Its engine's semaphore is the
	// server's one bound on queries.
	Query(ctx context.Context, query string, args []any, after uint64) (*sqlengine.Result, error)
	// MaxQueries is how many queries run at once
	// (sqlengine.Config.MaxQueries).
	MaxQueries() int
}

// Config configures a Server.
type Config struct {
	Service *namespace.Service
	// Planner plans partitioned tables (default planner.New(Service));
	// give the REST adapter the same one, so both share its cache.
	Planner *planner.Planner
	// SQL runs the queries (default: the SQL engine of Service's table, in
	// this process).
	SQL SQL
	// Auth authenticates callers; nil or one with no tokens and no users
	// admits everyone as auth.Anonymous.
	Auth *auth.Authenticator
	// Audit records every mutation and every refused request (nil: none).
	Audit *audit.Log
	// Idempotency answers retried mutating actions that carry an
	// idempotency-key (nil: the metadata is ignored).
	Idempotency *idempotency.Store
	// TLSCertFile and TLSKeyFile, both set, serve TLS; with
	// TLSClientCAFile every client must present a certificate that CA
	// signed (mutual TLS; auth.TLSConfig).
	TLSCertFile, TLSKeyFile, TLSClientCAFile string
	Limits                                   Limits
	Logger                                   *slog.Logger
	// Version is reported as the server version in SqlInfo.
	Version string
	// UnaryInterceptors and StreamInterceptors run before authentication,
	// outermost first (metrics, request ids, logs): they see every call,
	// refused ones included.
	UnaryInterceptors  []grpc.UnaryServerInterceptor
	StreamInterceptors []grpc.StreamServerInterceptor
	// Health, when set, is served as grpc.health.v1.Health on the same
	// port, to every caller without credentials (load balancers and
	// orchestrators probe it).
	Health healthgrpc.HealthServer
	// Panicked is called once for each panic a call (or a goroutine it
	// started) recovered from: a bug, answered Internal and logged with
	// its stack (optional; metrics).
	Panicked func()
}

// Server is the Flight service: Flight SQL over __manifest, the Lance
// Namespace operations as actions, and a Handshake that hands out bearer
// tokens. It embeds the Flight SQL router and overrides Handshake,
// DoAction and ListActions.
type Server struct {
	flight.FlightServer

	svc      *namespace.Service
	table    *manifesttable.Table
	auth     *auth.Authenticator
	log      *slog.Logger
	audit    *audit.Log
	idem     *idempotency.Store
	limits   Limits
	alloc    memory.Allocator
	sql      SQL
	prepared *preparedSet
	grpc     *grpc.Server
	planner  *planner.Planner
	plans    *parked[*planner.Plan] // plans between the PlanScan action and DoGet
	started  *parked[*running]      // queries GetFlightInfo started, until their DoGet
	live     *liveQueries           // queries DoGet streams, by their tickets' ids
	panicked func()                 // Config.Panicked (nil: none)
	// closing is closed as the server stops: the change feed's streams
	// end (they would hold a graceful stop for ever).
	closing   chan struct{}
	closeOnce sync.Once
}

// EnsureDefaults fills what is unset (call Validate first: the
// defaults of Planner and SQL are Service's).
func (c *Config) EnsureDefaults() {
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Planner == nil {
		c.Planner = planner.New(c.Service)
	}
	if c.SQL == nil {
		c.SQL = tableSQL{t: c.Service.Table()}
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	c.Limits.EnsureDefaults()
	if c.Limits.MaxStartedQueries <= 0 {
		c.Limits.MaxStartedQueries = c.SQL.MaxQueries() / 4
	}
	if c.Limits.MaxStartedQueriesPerPrincipal <= 0 {
		c.Limits.MaxStartedQueriesPerPrincipal = quarter(c.Limits.MaxStartedQueries)
	}
}

// Validate refuses a configuration New cannot run.
func (c *Config) Validate() error {
	if c.Service == nil {
		return fmt.Errorf("flightserver: no namespace service")
	}
	return c.Limits.Validate()
}

// New builds a Server; Serve starts it.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.EnsureDefaults()
	log := cfg.Logger
	a := cfg.Auth
	if a == nil {
		var err error
		if a, err = auth.New(auth.Config{}); err != nil {
			return nil, err
		}
	}
	lim, sq := cfg.Limits, cfg.SQL
	shares := lim
	if !a.Enabled() { // one anonymous principal: its share is the pool
		shares.MaxStartedQueriesPerPrincipal = lim.MaxStartedQueries
		shares.MaxUnfetchedResultsPerPrincipal = lim.MaxUnfetchedResults
		shares.MaxPreparedStatementsPerPrincipal = lim.MaxPreparedStatements
	}
	s := &Server{
		sql: sq,
		svc: cfg.Service, table: cfg.Service.Table(), auth: a, log: log, limits: lim, audit: cfg.Audit, idem: cfg.Idempotency,
		alloc:    memory.DefaultAllocator,
		prepared: newPreparedSet(lim.PreparedTTL, lim.MaxPreparedStatements, shares.MaxPreparedStatementsPerPrincipal),
		planner:  cfg.Planner,
		panicked: cfg.Panicked,
		closing:  make(chan struct{}),
	}
	s.plans = newParked("plans", lim.QueryTimeout, lim.MaxUnfetchedResults, shares.MaxUnfetchedResultsPerPrincipal,
		func(*planner.Plan) {}, s.recovered)
	s.started = newParked("started queries", lim.StalledResultTimeout, lim.MaxStartedQueries, shares.MaxStartedQueriesPerPrincipal,
		s.release, s.recovered)
	s.live = newLiveQueries()
	if _, local := sq.(tableSQL); local { // SQL in this process: plan_scan is answered here
		if err := s.planner.RegisterSQL(context.Background()); err != nil {
			return nil, fmt.Errorf("flightserver: the plan_scan SQL function: %w", err)
		}
	}
	q := &sqlServer{s: s}
	q.Alloc = s.alloc
	for id, v := range sqlInfo(cfg.Version, lim, sq.MaxQueries()) {
		if err := q.RegisterSqlInfo(id, v); err != nil {
			return nil, fmt.Errorf("flightserver: sql info %s: %w", id, err)
		}
	}
	s.FlightServer = flightsql.NewFlightServerWithAllocator(q, s.alloc)

	// The recovery is outermost: it covers the embedder's interceptors
	// and authentication as well as the handlers.
	recoverUnary, recoverStream := obs.RecoveryInterceptors(log, "flight", s.panicked)
	unary := append([]grpc.UnaryServerInterceptor{recoverUnary}, cfg.UnaryInterceptors...)
	stream := append([]grpc.StreamServerInterceptor{recoverStream}, cfg.StreamInterceptors...)
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(lim.MaxMessageBytes),
		grpc.MaxSendMsgSize(lim.MaxMessageBytes),
		serverCodec(), // the change feed's shared messages (codec.go)
		// A compressed change feed batch (tens of KiB) leaves in one
		// write(2), not one per 32 KiB; the buffer is shared between
		// flushes (gRPC's default), so an idle stream holds none.
		grpc.WriteBufferSize(writeBuffer),
		grpc.MaxHeaderListSize(uint32(min(lim.MaxMetadataBytes, 1<<30))),
		grpc.ChainUnaryInterceptor(append(unary, publicUnary(s.unaryInterceptor))...),
		grpc.ChainStreamInterceptor(append(stream, publicStream(s.streamInterceptor))...),
	}
	if cfg.TLSCertFile != "" || cfg.TLSKeyFile != "" || cfg.TLSClientCAFile != "" {
		tc, err := auth.TLSConfig(cfg.TLSCertFile, cfg.TLSKeyFile, cfg.TLSClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("flightserver: %w", err)
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(tc)))
	}
	s.grpc = grpc.NewServer(opts...)
	flight.RegisterFlightServiceServer(s.grpc, s)
	if cfg.Health != nil {
		healthgrpc.RegisterHealthServer(s.grpc, cfg.Health)
	}
	return s, nil
}

// healthPrefix starts the methods of the gRPC health service, which need
// no credentials.
const healthPrefix = "/grpc.health.v1.Health/"

// writeBuffer is how much gRPC gathers before a write(2) on a connection.
const writeBuffer = 128 << 10

// publicUnary skips authentication for the health service.
func publicUnary(authn grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if strings.HasPrefix(info.FullMethod, healthPrefix) {
			return h(ctx, req)
		}
		return authn(ctx, req, info, h)
	}
}

// publicStream skips authentication for the health service.
func publicStream(authn grpc.StreamServerInterceptor) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		if strings.HasPrefix(info.FullMethod, healthPrefix) {
			return h(srv, ss)
		}
		return authn(srv, ss, info, h)
	}
}

// Serve accepts Flight calls on l until Stop or GracefulStop.
func (s *Server) Serve(l net.Listener) error { return s.grpc.Serve(l) }

// GracefulStop stops accepting calls and waits for running ones; the
// queries started for a DoGet that can no longer come are stopped.
func (s *Server) GracefulStop() {
	s.closeOnce.Do(func() { close(s.closing) })
	s.grpc.GracefulStop()
	s.started.dropAll()
}

// Stop closes every connection at once and stops the started queries.
func (s *Server) Stop() {
	s.closeOnce.Do(func() { close(s.closing) })
	s.grpc.Stop()
	s.started.dropAll()
}

// recovered logs and counts a panic v that a goroutine of a call (where
// names its job) recovered from, and returns the error to end the call
// with (obs.Recovered).
func (s *Server) recovered(where string, v any) error {
	return grpcstatus.FromError(obs.Recovered(s.log, s.panicked, "flight", where, v))
}

// DoPut checks the first message of an upload before the Flight SQL
// router sees it: that message must carry the FlightDescriptor saying
// what the upload is for (the router would dereference a missing one).
// The message read here is not lost: the router's stream replays it.
func (s *Server) DoPut(stream flight.FlightService_DoPutServer) error {
	first, err := stream.Recv()
	if errors.Is(err, io.EOF) {
		return nserror.New(nserror.InvalidInput, "DoPut sent no message: its first one carries the FlightDescriptor of what it uploads")
	}
	if err != nil {
		return err
	}
	if first.GetFlightDescriptor() == nil {
		return nserror.New(nserror.InvalidInput, "the first message of a DoPut carries no FlightDescriptor: it must say what the upload is for (a Flight SQL command)")
	}
	return s.FlightServer.DoPut(&replayedPut{FlightService_DoPutServer: stream, first: first})
}

// replayedPut is a DoPut stream whose first message was read already:
// Recv answers it again, once, then reads on.
type replayedPut struct {
	flight.FlightService_DoPutServer
	first *flight.FlightData
}

func (r *replayedPut) Recv() (*flight.FlightData, error) {
	if fd := r.first; fd != nil {
		r.first = nil
		return fd, nil
	}
	return r.FlightService_DoPutServer.Recv()
}
