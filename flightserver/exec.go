package flightserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
)

// A query runs once. GetFlightInfo executes it (so the FlightInfo carries
// the schema of the real result, and the result is pinned to the catalog
// sequence of that moment), reads ahead up to readAhead bytes, and parks
// the execution under an id that the ticket carries; DoGet streams it. A
// small result is read whole at GetFlightInfo and holds neither an engine
// connection nor a concurrency slot while parked. A ticket whose execution
// is gone (fetched, expired, or another server) runs its query again.

// readAhead is how much of a result GetFlightInfo reads before parking it.
const readAhead = 1 << 20

// execution is one query: its result, what was read ahead, the slot and
// the time limit it holds.
type execution struct {
	s      *Server
	ctx    context.Context // the query's own: its time limit, not an RPC's
	cancel context.CancelFunc
	res    *manifesttable.Result
	schema *arrow.Schema
	seq    uint64

	head       []arrow.RecordBatch // read ahead, not yet sent
	rows, size int64               // read so far
	done       bool                // res is read to its end and released
	slot       bool                // holds a concurrency slot

	release sync.Once
}

// execute starts query: takes a concurrency slot (failing at once when
// none is free), waits as the consistency header asks, runs the query and
// reads ahead.
func (s *Server) execute(ctx context.Context, query string, args []any) (*execution, error) {
	select {
	case s.slots <- struct{}{}:
	default:
		return nil, status.Errorf(codes.ResourceExhausted,
			"too many concurrent queries (limit %d); retry shortly", s.limits.MaxConcurrentQueries)
	}
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.limits.QueryTimeout)
	x := &execution{s: s, ctx: qctx, cancel: cancel, slot: true}
	// The wait and the statement also stop when the calling RPC does.
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	err := s.catchUp(ctx, qctx)
	if err == nil {
		x.res, err = s.table.Query(qctx, query, args...)
	}
	if err == nil {
		x.schema, x.seq = x.res.Schema(), x.res.Seq
		err = x.read(readAhead)
	}
	if err != nil {
		x.close()
		return nil, x.timeoutError(ctx, err)
	}
	return x, nil
}

// read reads batches ahead until more than limit bytes are held or the
// result ends; at its end the result, its engine connection and the slot
// are released.
func (x *execution) read(limit int64) error {
	lim := x.s.limits
	held := int64(0)
	for held <= limit {
		if !x.res.Next() {
			if err := x.res.Err(); err != nil {
				return err
			}
			x.finishResult()
			return nil
		}
		rec := x.res.RecordBatch()
		x.rows += rec.NumRows()
		n := recordBytes(rec)
		x.size += n
		switch {
		case x.rows > lim.MaxResultRows:
			return status.Errorf(codes.ResourceExhausted,
				"the result has more than %d rows, the server's limit: narrow the query (WHERE, LIMIT)", lim.MaxResultRows)
		case x.size > lim.MaxResultBytes:
			return status.Errorf(codes.ResourceExhausted,
				"the result is larger than %d bytes, the server's limit: narrow the query (fewer columns, WHERE, LIMIT)", lim.MaxResultBytes)
		case x.ctx.Err() != nil:
			return x.ctx.Err()
		}
		rec.Retain()
		x.head = append(x.head, rec)
		held += n
	}
	return nil
}

// finishResult releases the engine's result and the slot once every
// batch is read.
func (x *execution) finishResult() {
	x.done = true
	x.res.Release()
	if x.slot {
		x.slot = false
		<-x.s.slots
	}
}

// close releases everything the execution holds; it is safe to call more
// than once.
func (x *execution) close() {
	x.release.Do(func() {
		for _, r := range x.head {
			r.Release()
		}
		x.head = nil
		if x.res != nil && !x.done {
			x.done = true
			x.res.Release()
		}
		if x.slot {
			x.slot = false
			<-x.s.slots
		}
		x.cancel()
	})
}

// timeoutError names the query time limit when it, and not the client,
// ended the query.
func (x *execution) timeoutError(rpc context.Context, err error) error {
	if rpc.Err() == nil && errors.Is(x.ctx.Err(), context.DeadlineExceeded) {
		return status.Errorf(codes.DeadlineExceeded, "the query ran longer than %s, the server's limit", x.s.limits.QueryTimeout)
	}
	return err
}

// stream sends the execution's batches to a DoGet, reading the rest of
// the result under the limits, and releases it at the end. It names the
// result's catalog sequence in the response header.
func (x *execution) stream(ctx context.Context) (*arrow.Schema, <-chan flight.StreamChunk) {
	_ = grpc.SetHeader(ctx, metadata.Pairs(SeqHeader, strconv.FormatUint(x.seq, 10)))
	ch := make(chan flight.StreamChunk, 1)
	go func() {
		defer close(ch)
		defer x.close()
		stop := context.AfterFunc(ctx, x.cancel) // the client went away
		defer stop()
		for {
			for len(x.head) > 0 {
				rec := x.head[0]
				x.head = x.head[1:]
				select {
				case ch <- flight.StreamChunk{Data: rec}:
				case <-ctx.Done():
					rec.Release()
					return
				}
			}
			if x.done {
				return
			}
			if err := x.read(0); err != nil {
				ch <- flight.StreamChunk{Err: x.timeoutError(ctx, err)}
				return
			}
		}
	}()
	return x.schema, ch
}

// parked holds results between the call that plans them (GetFlightInfo,
// the PlanScan action) and DoGet, each for at most ttl, at most max at
// once; drop releases one that nobody took in time.
type parked[T comparable] struct {
	ttl  time.Duration
	max  int
	drop func(T)

	mu sync.Mutex
	m  map[string]T
}

func newParked[T comparable](ttl time.Duration, maxN int, drop func(T)) *parked[T] {
	return &parked[T]{ttl: ttl, max: maxN, drop: drop, m: make(map[string]T)}
}

// park stores x and returns its id; x is dropped if it is not taken
// within the TTL.
func (p *parked[T]) park(x T) (string, error) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	p.mu.Lock()
	if len(p.m) >= p.max {
		p.mu.Unlock()
		p.drop(x)
		return "", status.Errorf(codes.ResourceExhausted,
			"too many planned queries not yet fetched (limit %d): fetch (DoGet) what you plan", p.max)
	}
	p.m[id] = x
	p.mu.Unlock()
	time.AfterFunc(p.ttl, func() {
		var zero T
		if x := p.take(id); x != zero {
			p.drop(x)
		}
	})
	return id, nil
}

// take removes and returns what is parked under id, or the zero value.
func (p *parked[T]) take(id string) T {
	p.mu.Lock()
	defer p.mu.Unlock()
	x := p.m[id]
	delete(p.m, id)
	return x
}

func (p *parked[T]) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}

// A ticket names a parked execution and says how to run the query again
// without it: "q1|<id>|s|<sql>" for a statement, "q1|<id>|p|<handle>" for
// a prepared statement.
type ticket struct {
	id, kind, payload string
}

func (t ticket) encode() ([]byte, error) {
	return flightsql.CreateStatementQueryTicket([]byte("q1|" + t.id + "|" + t.kind + "|" + t.payload))
}

func parseTicket(handle []byte) (ticket, error) {
	parts := strings.SplitN(string(handle), "|", 4)
	if len(parts) != 4 || parts[0] != "q1" || (parts[2] != "s" && parts[2] != "p") {
		return ticket{}, nserror.New(nserror.InvalidInput, "not a flightns statement ticket")
	}
	return ticket{id: parts[1], kind: parts[2], payload: parts[3]}, nil
}

// ConsistencyHeader chooses what a query waits for: "latest" (the
// default) waits until every change acknowledged anywhere before the query
// (table versions included) is visible to SQL; "visible" reads what this
// server has applied, without waiting or asking Redis.
const ConsistencyHeader = "x-flightns-consistency"

// catchUp waits, within qctx, as rpc's consistency header asks.
func (s *Server) catchUp(rpc, qctx context.Context) error {
	md, _ := metadata.FromIncomingContext(rpc)
	switch c := firstValue(md.Get(ConsistencyHeader)); c {
	case "", "latest":
	case "visible":
		return nil
	default:
		return nserror.New(nserror.InvalidInput, "%s %q: want latest or visible", ConsistencyHeader, c)
	}
	if err := s.table.WaitCaughtUp(qctx); err != nil {
		if qctx.Err() != nil {
			return err
		}
		return nserror.New(nserror.ServiceUnavailable,
			"cannot tell what the newest change is (%v); send %s: visible to read what this server has", err, ConsistencyHeader)
	}
	return nil
}

func firstValue(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}
