package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/client"
	"github.com/flightns/flightns/flightserver"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/redisproc"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/internal/restserver"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/internal/threads"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/objstore"
)

// The change-feed scenarios (issue 47): how soon a subscriber hears of an
// acknowledged table version, and what subscribers cost the commits.
//
// Both run one flightns on a file:// root and a private Redis (the run's
// persistence) — feed-latency in this process (the namespace service, its
// Flight server and its REST handler, each on a loopback port, so that
// the materializer's linger can be set), feed-commits as a `flightns
// serve` child (so that the server's CPU time is told apart from the
// clients') — with writers in this process committing table versions
// over REST (stage a 1 KiB manifest, then CreateTableVersion; each writer
// has tables of its own, so nothing conflicts), and subscribers following
// `table.version.created` from the sequence the commit log held when they
// started (in this process for feed-latency; for feed-commits in a
// process of their own under SCHED_IDLE, feedhost.go):
//
//   - Flight: DoGet on a `flightns-changes:` ticket asking for LZ4
//     compression (feedFlightCompression), reading the typed columns of
//     each record batch (table id, version);
//   - SSE: `GET /v1/changes?type=table.version.created` through the Go
//     client (client.Client.Changes), one CloudEvents JSON per event.
//
// A subscriber notes when each version reached it; a writer notes when
// its commit was acknowledged; both on one monotonic clock (feed-latency).
// After each measurement the run waits until every subscriber has every
// version acknowledged in it, and fails if one never arrives: a
// benchmark that loses events measures nothing.
//
// feed-latency paces commits open-loop at 1 and 1,000 commits/s (if the
// machine does not sustain a rate, again at 90 % of what it did sustain)
// with one Flight and one SSE subscriber, and reports the delivery
// latency (receipt − acknowledgement) p50/p95/p99 per transport; once
// with the materializer's default VersionLinger (the feed publishes a
// version when its __manifest segment is written, and a segment of
// versions alone waits up to the linger for more) and once without.
//
// feed-commits measures closed-loop commits (each --clients level up to
// 32) with 0, 10 and 100 subscribers (half Flight, half SSE) in
// alternating rounds (--rounds, each round starting with another count),
// and reports each count's pooled rate as a ratio to 0 subscribers, and
// the server's CPU time per commit. On one machine the subscribers'
// own reading shares the cores with the server and the writers: under
// SCHED_IDLE it takes only what they leave, as subscribers on other
// machines would, so that the ratio counts what the server does for them
// (its sending, and what that leaves of the caches and the core to the
// commits), not their decoding.

// feedFlightCompression is the compression the Flight subscribers ask
// for (docs/flight.md, "Change feed"): what a subscriber of a busy
// catalog should ask for, a fifth of the bytes for each.
const feedFlightCompression = "lz4_frame"

// feedRates are the paced commit rates of feed-latency, per second.
var feedRates = []float64{1, 1000}

// feedLingers are the materializer lingers feed-latency measures under:
// the default (0), and none (negative), which shows what the linger adds.
var feedLingers = []time.Duration{0, -1}

// feedSubscriberCounts are the subscriber counts of feed-commits; the
// first is the reference of the ratios.
var feedSubscriberCounts = []int{0, 10, 100}

// feedLatencyMinSamples is the fewest commits a paced measurement makes:
// it runs for the longer of --duration and this many commits at its rate
// (at 1/s, 100 s; tests lower it).
var feedLatencyMinSamples = 100

// feedDrainTimeout bounds the wait, after a measurement, for every
// subscriber to have every version acknowledged in it.
var feedDrainTimeout = 30 * time.Second

const (
	// feedPacedWriters commit the paced versions: enough to keep 1,000/s
	// in flight at 60 ms a commit.
	feedPacedWriters = 64
	// feedTablesPerWriter is how many tables each paced writer commits to
	// in turn; the table after them all is the warm-up table.
	feedTablesPerWriter = 4
	feedTables          = feedPacedWriters*feedTablesPerWriter + 1
	feedMaxClients      = 32
	feedLatencyName     = "feed-latency"
	feedCommitsName     = "feed-commits"
)

func feedLatencyScenario() Scenario {
	return Scenario{
		Name: feedLatencyName,
		Description: fmt.Sprintf("change feed delivery latency, acknowledgement to subscriber, on Flight (DoGet) and SSE (GET /v1/changes), with REST commits paced open-loop at %v/s by %d writers; with the default materializer linger and without",
			feedRates, feedPacedWriters),
		Run:   runFeedLatency,
		Steps: func(Config) int { return 2 * len(feedRates) * len(feedLingers) },
	}
}

func feedCommitsScenario() Scenario {
	return Scenario{
		Name: feedCommitsName,
		Description: fmt.Sprintf("REST commits to a `flightns serve` child (closed loop, each --clients level up to %d) with %v change feed subscribers (half Flight, half SSE) in alternating rounds; ratios to %d subscribers, and the server's CPU per commit; then paced at half the machine's rate, the server's CPU per commit with and without the most subscribers",
			feedMaxClients, feedSubscriberCounts, feedSubscriberCounts[0]),
		Run:   runFeedCommits,
		Steps: func(cfg Config) int { return len(feedSubscriberCounts)*len(cfg.clientsUpTo(feedMaxClients)) + 2 },
	}
}

// feedServer is the flightns the subscribers follow — in this process
// (feed-latency) or a `flightns serve` child (feed-commits) — and a REST
// writer of its tables.
type feedServer struct {
	flightAddr, restURL string
	w                   *replicaWriter
	// head reads the sequence of the commit log's newest entry.
	head func(context.Context) (uint64, error)
	// serverPid is the server's process when it is a child (0: this
	// process); redisPid its Redis.
	serverPid, redisPid int
	// hostPid is the subscriber host of the round under way (0: none).
	hostPid int
	// backend names the rows: file, or tmpfs-split (splitCores).
	backend string
	// cores says which CPUs the server and this process have, when split.
	cores   string
	closers []func() // run in reverse by close
}

func (s *feedServer) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
}

// startFeedServer serves flightns in this process, its materializer
// lingering so (manifesttable.Config.VersionLinger; 0 its default).
func startFeedServer(ctx context.Context, cfg Config, linger time.Duration) (_ *feedServer, err error) {
	s := &feedServer{}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	e, err := newEnv(ctx, "flightns-bench-feed-", cfg.persistence(), 256)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, e.close)
	s.redisPid = e.rs.Pid()
	svc, err := namespace.Open(ctx, namespace.Config{Objects: e.objs, Redis: e.rdb, Catalog: "bench", Logger: quietLogger(),
		Table: manifesttable.Config{VersionLinger: linger, Engine: sqlengine.Config{MemoryLimit: "1GB"}}})
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, func() { _ = svc.Close() })
	s.head = svc.Table().Head
	fsrv, err := flightserver.New(flightserver.Config{Service: svc, Logger: quietLogger(), Version: "bench"})
	if err != nil {
		return nil, err
	}
	fl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() { _ = fsrv.Serve(fl) }()
	s.closers = append(s.closers, fsrv.Stop)
	s.flightAddr = fl.Addr().String()
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	closing := make(chan struct{})
	hsrv := &http.Server{ReadHeaderTimeout: 10 * time.Second,
		Handler: restserver.New(svc, restserver.Options{Logger: quietLogger(), Closing: closing})}
	go func() { _ = hsrv.Serve(hl) }()
	s.closers = append(s.closers, func() {
		close(closing)
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = hsrv.Shutdown(sctx)
	})
	s.restURL = "http://" + hl.Addr().String()
	s.w = &replicaWriter{rcs: []*restClient{newRESTClient(hl.Addr().String())}, objs: e.objs,
		payload: make([]byte, 1024), served: make([]atomic.Int64, 1)}
	return s, s.w.setupTables(ctx, feedTables)
}

// serveOptions are what a scenario changes of startFeedServe's server.
type serveOptions struct {
	// parent is the directory the server's root, data and Redis go in
	// ("": the temporary directory; commit-cpu: /dev/shm).
	parent string
	// tables is how many tables are made (default feedTables).
	tables int
	// lance makes every commit LanceDB-shaped: a transaction file, then
	// a real Lance manifest staged (lanceTemplate renumbered), where the
	// default stages 1 KiB of zeros.
	lance bool
}

// startFeedServe runs `flightns serve` (this executable's, as the
// replicas scenario finds it) on a Redis with the run's persistence and
// a file:// root of its own, so that the server's CPU time is its own.
func startFeedServe(ctx context.Context, cfg Config, scenario string, opt serveOptions) (_ *feedServer, err error) {
	bin, err := servingBinary(scenario)
	if err != nil {
		return nil, err
	}
	s := &feedServer{}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	tmp, err := os.MkdirTemp(opt.parent, "flightns-bench-"+scenario+"-")
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, func() { _ = os.RemoveAll(tmp) })
	rs, err := redisproc.Start(ctx, redisproc.Config{Dir: filepath.Join(tmp, "redis"), Persistence: cfg.persistence()})
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, func() { _ = rs.Kill() })
	s.redisPid = rs.Pid()
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	s.closers = append(s.closers, func() { _ = rdb.Close() })
	s.head = redisstate.New(rdb, "bench", 0).LastLogSeq
	objs, err := objstore.Open(ctx, "file://"+filepath.Join(tmp, "root"))
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, func() { _ = objs.Close() })
	srv, err := startServe(ctx, bin, tmp, "--data", filepath.Join(tmp, "data"), "--root", objs.URI(), "--redis", rs.URL(),
		"--catalog", "bench", "--log-format", "text",
		"--flight-addr", "127.0.0.1:0", "--rest-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--console-addr", "")
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, func() { _ = srv.stop(30 * time.Second) })
	s.serverPid = srv.pid()
	s.flightAddr, s.restURL = srv.flight, "http://"+srv.rest
	s.w = &replicaWriter{rcs: []*restClient{newRESTClient(srv.rest)}, objs: objs,
		payload: make([]byte, 1024), served: make([]atomic.Int64, 1), lance: opt.lance}
	return s, s.w.setupTables(ctx, cmp.Or(opt.tables, feedTables))
}

// splitCores keeps the server's processes (flightns serve with its
// children, and Redis) to the first half of this process's CPUs and this
// process to the rest, and returns how to give this process all of them
// back. A thread or process made later inherits its maker's CPUs.
func (s *feedServer) splitCores() (undo func(), err error) {
	mine, err := threads.Mine()
	if err != nil {
		return nil, err
	}
	if len(mine) < 2 {
		return nil, fmt.Errorf("the split backend needs two CPUs, this process has %v", mine)
	}
	server, clients := mine[:len(mine)/2], mine[len(mine)/2:]
	pids := append([]int{s.redisPid}, descendants(s.serverPid)...)
	for _, pid := range pids {
		if err := threads.Pin(pid, server); err != nil {
			return nil, err
		}
	}
	procs := runtime.GOMAXPROCS(len(clients))
	if err := threads.Pin(0, clients); err != nil {
		runtime.GOMAXPROCS(procs)
		return nil, err
	}
	s.cores = fmt.Sprintf("the server's processes (flightns serve, its SQL worker, Redis) kept to CPUs %v, this process (writers) and the subscribers' to CPUs %v", server, clients)
	return func() {
		_ = threads.Pin(0, mine)
		runtime.GOMAXPROCS(procs)
	}, nil
}

// where says which cores the server and the subscribers ran on.
func (s *feedServer) where() string {
	if s.cores != "" {
		return s.cores
	}
	return "the server, the writers and the subscribers share the cores"
}

// descendants is pid and every process below it.
func descendants(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, replicaChildren(out[i])...)
	}
	return out
}

// versionKey names a table version as the feed and the writer see it.
type versionKey struct {
	table   string
	version uint64
}

// commit commits the next version of table k and returns it, with the
// time the acknowledgement arrived.
func (s *feedServer) commit(ctx context.Context, k int) (versionKey, time.Time, Outcome) {
	out := s.w.commitTable(ctx, 0, k)
	at := time.Now()
	return versionKey{replicaTable(k), s.w.heads[k].Load()}, at, out
}

// subscriber follows the feed's table versions on one transport and
// notes when each reached it.
type subscriber struct {
	transport string // "flight" or "sse"
	mu        sync.Mutex
	// tables is what reached it of each table, by the table's name (the
	// feed's tables are all in one namespace).
	tables map[string]*received
	dups   int      // versions received again (the feed repeats nothing)
	gaps   []string // versions received before one that never came
	err    error    // what ended the stream before it was stopped
	stop   context.CancelFunc
	done   chan struct{}
}

// received is what a subscriber received of one table: versions first,
// first+1, … in order, and when each arrived. Bookkeeping that costs the
// subscriber next to nothing per event (a map of every version cost it a
// third of its reading), so that what 100 subscribers cost the machine is
// their reading.
type received struct {
	first uint64
	at    []time.Time
}

// noteLocked notes version of table arriving at at; sub.mu is held.
func (sub *subscriber) noteLocked(table string, version uint64, at time.Time) {
	r := sub.tables[table]
	if r == nil {
		r = &received{first: version}
		sub.tables[strings.Clone(table)] = r
	}
	switch next := r.first + uint64(len(r.at)); {
	case version == next:
		r.at = append(r.at, at)
	case version < next:
		sub.dups++
	default:
		sub.gaps = append(sub.gaps, fmt.Sprintf("version %d of %s after %d", version, table, next-1))
	}
}

// arrival is when version k reached the subscriber; sub.mu is held.
func (sub *subscriber) arrival(k versionKey) (time.Time, bool) {
	r := sub.tables[tableName(k.table)]
	if r == nil || k.version < r.first || k.version-r.first >= uint64(len(r.at)) {
		return time.Time{}, false
	}
	return r.at[k.version-r.first], true
}

// tableName is the name of the table of a feed key (its id's last part).
func tableName(id string) string {
	return id[strings.LastIndexByte(id, '$')+1:]
}

// span is the versions of one table a round must find at every subscriber.
type span struct{ lo, hi uint64 }

// spansOf is keys as the versions of each table, by table name, lowest
// to highest (a table's versions in a round are consecutive: one writer
// commits to it).
func spansOf(keys []versionKey) map[string]span {
	out := map[string]span{}
	for _, k := range keys {
		name := tableName(k.table)
		sp, ok := out[name]
		if !ok {
			sp = span{k.version, k.version}
		}
		out[name] = span{min(sp.lo, k.version), max(sp.hi, k.version)}
	}
	return out
}

// has reports whether the subscriber holds every version of spans, and
// the error that ended its stream if it ended, or that a version came
// after a gap (the versions after it are not noted).
func (sub *subscriber) has(spans map[string]span) (bool, error) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if len(sub.gaps) > 0 {
		return false, fmt.Errorf("a %s subscriber received %s", sub.transport, strings.Join(sub.gaps, ", "))
	}
	for name, sp := range spans {
		r := sub.tables[name]
		if r == nil || sp.lo < r.first || sp.hi-r.first >= uint64(len(r.at)) {
			return false, sub.err
		}
	}
	return true, sub.err
}

// startSubscriber follows the feed after sequence after on transport.
func (s *feedServer) startSubscriber(ctx context.Context, transport string, after uint64) (*subscriber, error) {
	ctx, stop := context.WithCancel(ctx)
	sub := &subscriber{transport: transport, tables: map[string]*received{}, stop: stop, done: make(chan struct{})}
	req := api.ChangesRequest{After: after, Types: []string{api.EventVersionCreated}}
	var follow func() error
	switch transport {
	case "flight":
		conn, err := grpc.NewClient(s.flightAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			stop()
			return nil, err
		}
		follow = func() error {
			defer func() { _ = conn.Close() }()
			return followFlight(ctx, flight.NewFlightServiceClient(conn), req, sub)
		}
	case "sse":
		c, err := client.New(client.Config{URL: s.restURL, HTTPClient: &http.Client{Transport: &http.Transport{}}})
		if err != nil {
			stop()
			return nil, err
		}
		follow = func() error {
			_, err := c.Changes(ctx, req, true, func(ev api.Event) error {
				if len(ev.ID) == 0 {
					return fmt.Errorf("a version event without a table: %+v", ev)
				}
				at := time.Now()
				sub.mu.Lock()
				sub.noteLocked(ev.ID[len(ev.ID)-1], ev.Version, at)
				sub.mu.Unlock()
				return nil
			})
			return err
		}
	default:
		stop()
		return nil, fmt.Errorf("no transport %q", transport)
	}
	go func() {
		defer close(sub.done)
		err := follow()
		if ctx.Err() == nil {
			if err == nil {
				err = errors.New("the stream ended")
			}
			sub.mu.Lock()
			sub.err = fmt.Errorf("%s subscriber: %w", transport, err)
			sub.mu.Unlock()
		}
	}()
	return sub, nil
}

// followFlight reads the change feed req asks for from a Flight server,
// noting at sub each table version and the time its batch arrived, until
// ctx ends or the stream does.
func followFlight(ctx context.Context, c flight.FlightServiceClient, req api.ChangesRequest, sub *subscriber) error {
	ticket, err := flightserver.ChangesTicket(req, feedFlightCompression)
	if err != nil {
		return err
	}
	stream, err := c.DoGet(ctx, ticket)
	if err != nil {
		return err
	}
	rd, err := flight.NewRecordReader(stream)
	if err != nil {
		return err
	}
	defer rd.Release()
	if !rd.Schema().Equal(flightserver.ChangesSchema) {
		return fmt.Errorf("the change feed's schema is %v", rd.Schema())
	}
	var through uint64
	for rd.Next() {
		at := time.Now()
		next, err := flightserver.ChangesThrough(rd.LatestAppMetadata())
		if err != nil {
			return fmt.Errorf("a batch's app metadata %q: %w", rd.LatestAppMetadata(), err)
		}
		if next < through {
			return fmt.Errorf("a batch through %d after one through %d", next, through)
		}
		through = next
		rec := rd.RecordBatch()
		ids := rec.Column(3).(*array.List)
		parts := ids.ListValues().(*array.String)
		versions := rec.Column(7).(*array.Uint64)
		sub.mu.Lock()
		for i := range int(rec.NumRows()) {
			if _, hi := ids.ValueOffsets(i); hi > 0 {
				sub.noteLocked(parts.Value(int(hi-1)), versions.Value(i), at)
			}
		}
		sub.mu.Unlock()
	}
	return rd.Err()
}

// subscribe starts n subscribers in this process, the first half on
// Flight and the rest on SSE (one of each for n = 2), after the commit
// log's head, and returns once each has received a warm-up version
// committed after they started: they are connected and reading.
func (s *feedServer) subscribe(ctx context.Context, n int) ([]*subscriber, error) {
	if n == 0 {
		return nil, nil
	}
	head, err := s.head(ctx)
	if err != nil {
		return nil, err
	}
	var subs []*subscriber
	for i := range n {
		sub, err := s.startSubscriber(ctx, transportOf(i, n), head)
		if err != nil {
			stopAll(subs)
			return nil, err
		}
		subs = append(subs, sub)
	}
	if err := s.warmUp(ctx, func(keys []versionKey) error { return waitDelivered(ctx, subs, keys) }); err != nil {
		stopAll(subs)
		return nil, err
	}
	return subs, nil
}

// subscribeApart is subscribe with the subscribers in a subscriber host
// (feedhost.go) under SCHED_IDLE; nil for n = 0.
func (s *feedServer) subscribeApart(ctx context.Context, n int) (*subscriberHost, error) {
	if n == 0 {
		return nil, nil
	}
	head, err := s.head(ctx)
	if err != nil {
		return nil, err
	}
	h, err := s.startHost(ctx, n, head)
	if err != nil {
		return nil, err
	}
	if err := s.warmUp(ctx, func(keys []versionKey) error { return h.delivered(ctx, keys) }); err != nil {
		h.close()
		return nil, err
	}
	return h, nil
}

// warmUp commits a version and waits until delivered says every
// subscriber has it.
func (s *feedServer) warmUp(ctx context.Context, delivered func([]versionKey) error) error {
	k, _, out := s.commit(ctx, feedTables-1)
	if out != OK {
		return errors.New("the warm-up commit failed")
	}
	return delivered([]versionKey{k})
}

func stopAll(subs []*subscriber) {
	for _, sub := range subs {
		sub.stop()
	}
	for _, sub := range subs {
		<-sub.done
	}
}

// waitDelivered waits until every subscriber holds every key, for at
// most feedDrainTimeout; it fails naming how many deliveries are missing
// (and what ended a stream, if one ended), or if a subscriber received a
// version twice.
func waitDelivered(ctx context.Context, subs []*subscriber, keys []versionKey) error {
	deadline, spans := time.Now().Add(feedDrainTimeout), spansOf(keys)
	for {
		all := true
		var errs []error
		for _, sub := range subs {
			ok, err := sub.has(spans)
			all = all && ok
			if !ok && err != nil {
				errs = append(errs, err)
			}
		}
		if all {
			for _, sub := range subs {
				sub.mu.Lock()
				dups := sub.dups
				sub.mu.Unlock()
				if dups > 0 {
					return fmt.Errorf("a %s subscriber received %d version(s) twice", sub.transport, dups)
				}
			}
			return nil
		}
		if len(errs) > 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%d of %d deliveries of acknowledged versions missing after %s: %w",
				undelivered(subs, keys), len(keys)*len(subs), feedDrainTimeout, errors.Join(append(errs, ctx.Err())...))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// undelivered counts the (subscriber, version) pairs of keys missing.
func undelivered(subs []*subscriber, keys []versionKey) int64 {
	var n int64
	for _, sub := range subs {
		sub.mu.Lock()
		for _, k := range keys {
			if _, ok := sub.arrival(k); !ok {
				n++
			}
		}
		sub.mu.Unlock()
	}
	return n
}

// feedCPU is CPU time in clock ticks (1/100 s): of the server when it
// is a child (serve) and of its children (worker: the SQL worker), of
// this process (the writers and subscribers, and flightns when it runs
// here), of Redis, and of the whole machine (everything not idle, other
// work included).
type feedCPU struct{ serve, worker, self, subs, redis, machine int64 }

// server is the server's CPU time with its SQL worker's.
func (c feedCPU) server() int64 { return c.serve + c.worker }

func (s *feedServer) cpu() feedCPU {
	c := sampleReplicaCPU(nil, s.redisPid)
	out := feedCPU{self: c.clients, redis: c.redis, machine: c.machine}
	if s.hostPid != 0 {
		out.subs = procTicks(s.hostPid)
	}
	if s.serverPid != 0 {
		out.serve = procTicks(s.serverPid)
		for _, k := range replicaChildren(s.serverPid) {
			out.worker += procTicks(k)
		}
	}
	return out
}

func (c feedCPU) minus(o feedCPU) feedCPU {
	return feedCPU{c.serve - o.serve, c.worker - o.worker, c.self - o.self, c.subs - o.subs, c.redis - o.redis, c.machine - o.machine}
}

func (c feedCPU) plus(o feedCPU) feedCPU {
	return feedCPU{c.serve + o.serve, c.worker + o.worker, c.self + o.self, c.subs + o.subs, c.redis + o.redis, c.machine + o.machine}
}

// busy says how many cores each part kept busy on average over seconds;
// inProcess says flightns ran in this process.
func (c feedCPU) busy(seconds float64, inProcess bool) string {
	if seconds <= 0 {
		return ""
	}
	f := func(t int64) float64 { return float64(t) / 100 / seconds }
	if inProcess {
		return fmt.Sprintf("cores busy on average: this process (flightns, writers, subscribers) %.2f, Redis %.2f, the whole machine %.2f of %d",
			f(c.self), f(c.redis), f(c.machine), runtime.NumCPU())
	}
	return fmt.Sprintf("cores busy on average: flightns serve (with its SQL worker) %.2f, this process (writers) %.2f, the subscribers' process (SCHED_IDLE) %.2f, Redis %.2f, the whole machine %.2f of %d",
		f(c.server()), f(c.self), f(c.subs), f(c.redis), f(c.machine), runtime.NumCPU())
}

// --- feed-latency ------------------------------------------------------

func runFeedLatency(ctx context.Context, cfg Config, rep *Report) error {
	for _, linger := range feedLingers {
		if err := feedLatencyWith(ctx, cfg, rep, linger); err != nil {
			return err
		}
	}
	return nil
}

// feedLatencyWith measures each rate on a server whose materializer
// lingers so (manifesttable.Config.VersionLinger: 0 its default).
func feedLatencyWith(ctx context.Context, cfg Config, rep *Report, linger time.Duration) error {
	s, err := startFeedServer(ctx, cfg, linger)
	if err != nil {
		return err
	}
	defer s.close()
	name, lingerNote := feedLatencyName+":%.0f/s", "the materializer's default VersionLinger (100 ms on file://: a segment of table versions alone waits up to that for more)"
	if linger < 0 {
		name, lingerNote = feedLatencyName+":%.0f/s:no-linger", "VersionLinger off (each segment written as soon as the materializer sees it)"
	}
	for _, rate := range feedRates {
		ph, err := s.paced(ctx, cfg, rate)
		if err != nil {
			return fmt.Errorf("at %.0f commits/s: %w", rate, err)
		}
		note := ""
		if ph.achieved < 0.95*rate {
			// Not sustained: measure again at what the machine sustains.
			first := ph
			if first.lostErr != nil {
				return fmt.Errorf("%s: %w", fmt.Sprintf(name, rate), first.lostErr)
			}
			if first.acked == 0 {
				return fmt.Errorf("%s: no commit was acknowledged (%d failed)", fmt.Sprintf(name, rate), first.failed)
			}
			if ph, err = s.paced(ctx, cfg, 0.9*first.achieved); err != nil {
				return fmt.Errorf("at %.0f commits/s: %w", 0.9*first.achieved, err)
			}
			note = fmt.Sprintf("NOT SUSTAINED: asked for %.0f commits/s, the machine sustained %.0f/s (%d commits paced, %d not sent in time); measured again at %.0f/s; ",
				rate, first.achieved, first.acked, first.late, ph.target)
		}
		for _, r := range ph.results(fmt.Sprintf(name, rate), note+lingerNote+"; ") {
			cfg.add(rep, r)
		}
		if ph.lostErr != nil {
			return fmt.Errorf("%s: %w", fmt.Sprintf(name, rate), ph.lostErr)
		}
	}
	return nil
}

// pacedPhase is one paced measurement: the commits and their deliveries.
type pacedPhase struct {
	target, achieved float64
	seconds          float64
	acked, late      int64
	failed           int64
	commitLat        []time.Duration
	acks             map[versionKey]time.Time
	subs             []*subscriber
	lostErr          error // why some were missing, or received twice
	cpu              string
	persistence      string
}

// paced commits at rate per second for the longer of cfg.Duration and
// feedLatencyMinSamples commits, open-loop: a dispatcher hands out a
// commit every 1/rate, and a free writer takes it; commits no writer
// could take within a second of their time are counted late, not sent.
func (s *feedServer) paced(ctx context.Context, cfg Config, rate float64) (*pacedPhase, error) {
	subs, err := s.subscribe(ctx, 2)
	if err != nil {
		return nil, err
	}
	defer stopAll(subs)
	d := max(cfg.Duration, time.Duration(float64(feedLatencyMinSamples)/rate*float64(time.Second)))
	ph := &pacedPhase{target: rate, acks: map[versionKey]time.Time{}, subs: subs, persistence: cfg.persistence().String()}
	interval := time.Duration(float64(time.Second) / rate)
	due := make(chan time.Time, feedPacedWriters)
	var mu sync.Mutex
	var late atomic.Int64
	cpu0 := s.cpu()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range feedPacedWriters {
		wg.Go(func() {
			for i := 0; ; i++ {
				at, ok := <-due
				if !ok {
					return
				}
				if time.Since(at) > time.Second {
					late.Add(1)
					continue
				}
				t0 := time.Now()
				k, acked, out := s.commit(ctx, w+feedPacedWriters*(i%feedTablesPerWriter))
				mu.Lock()
				if out == OK {
					ph.acks[k] = acked
					ph.commitLat = append(ph.commitLat, acked.Sub(t0))
				} else {
					ph.failed++
				}
				mu.Unlock()
			}
		})
	}
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * interval)
		if at.Sub(start) >= d || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Until(at))
		due <- at // waits while every writer is busy: the commit is late
	}
	close(due)
	wg.Wait()
	ph.seconds = time.Since(start).Seconds()
	ph.cpu = s.cpu().minus(cpu0).busy(ph.seconds, true)
	ph.acked, ph.late = int64(len(ph.acks)), late.Load()
	ph.achieved = float64(ph.acked) / ph.seconds
	keys := make([]versionKey, 0, len(ph.acks))
	for k := range ph.acks {
		keys = append(keys, k)
	}
	if err := waitDelivered(ctx, subs, keys); err != nil {
		ph.lostErr = err
	}
	return ph, nil
}

// results is a row per transport: p50/p95/p99 are the delivery latency,
// ops the versions checked.
func (ph *pacedPhase) results(scenario, note string) []Result {
	slices.Sort(ph.commitLat)
	var out []Result
	for _, transport := range []string{"flight", "sse"} {
		var lat []time.Duration
		var early int
		var lost int64
		for _, sub := range ph.subs {
			if sub.transport != transport {
				continue
			}
			sub.mu.Lock()
			for k, acked := range ph.acks {
				got, ok := sub.arrival(k)
				if !ok {
					lost++
					continue
				}
				if got.Before(acked) {
					early++
				}
				lat = append(lat, got.Sub(acked))
			}
			sub.mu.Unlock()
		}
		slices.Sort(lat)
		r := Result{Scenario: scenario, Backend: transport, Clients: feedPacedWriters,
			Ops: int64(len(lat)), Errors: ph.failed, Seconds: ph.seconds, OpsPerSec: ph.achieved,
			P50Ms: pct(lat, 0.50), P95Ms: pct(lat, 0.95), P99Ms: pct(lat, 0.99),
			Subscribers: len(ph.subs), TargetPerSec: ph.target, Undelivered: lost}
		if lost > 0 {
			note += fmt.Sprintf("LOST: %d acknowledged versions never reached the %s subscriber; ", lost, transport)
		}
		r.Note = fmt.Sprintf("%sdelivery latency to the %s subscriber (receipt − the writer's acknowledgement, one monotonic clock) over %d versions, %d of them received before their acknowledgement; "+
			"REST commits paced open-loop at %.0f/s by %d writers (achieved %.0f/s, %d late, %d failed), commit p50 %.2f ms, p99 %.2f ms; one Flight and one SSE subscriber of table.version.created followed the same commits; flightns in this process, file:// root, Redis persistence %s; %s",
			note, transport, len(lat), early, ph.target, feedPacedWriters, ph.achieved, ph.late, ph.failed, pct(ph.commitLat, 0.50), pct(ph.commitLat, 0.99), ph.persistence, ph.cpu)
		out = append(out, r)
	}
	return out
}

// --- feed-commits ------------------------------------------------------

func runFeedCommits(ctx context.Context, cfg Config, rep *Report) error {
	if cfg.wants("file") {
		if err := feedCommitsOn(ctx, cfg, rep, false); err != nil {
			return err
		}
	}
	if len(cfg.Backends) > 0 && cfg.wants("tmpfs-split") {
		return feedCommitsOn(ctx, cfg, rep, true)
	}
	return nil
}

// feedCommitsOn runs feed-commits on backend file, or, if split, on
// "tmpfs-split": the server's root, data and Redis on tmpfs (no disk to
// wait for: the server's CPU is what limits the commits), and its
// processes (flightns serve, its SQL worker, its Redis) on the first half
// of this process's CPUs and this process (writers, subscribers) on the
// rest, as a server and its clients on machines of their own would be.
func feedCommitsOn(ctx context.Context, cfg Config, rep *Report, split bool) error {
	opt := serveOptions{}
	if split {
		opt.parent = "/dev/shm"
	}
	s, err := startFeedServe(ctx, cfg, feedCommitsName, opt)
	if err != nil {
		return err
	}
	defer s.close()
	s.backend = "file"
	if split {
		undo, err := s.splitCores()
		if err != nil {
			return err
		}
		defer undo()
		s.backend = "tmpfs-split"
	}
	var base Result // of the level paced: feedPacedClients, or the highest below
	for _, clients := range cfg.clientsUpTo(feedMaxClients) {
		r, err := s.commitsAt(ctx, cfg, rep, clients)
		if err != nil {
			return fmt.Errorf("%d clients: %w", clients, err)
		}
		if base.Clients == 0 || clients <= feedPacedClients {
			base = r
		}
	}
	return s.pacedCPU(ctx, cfg, rep, base)
}

// feedPacedClients is the clients level whose rate, halved, feed-commits
// paces its last rounds at (fewer writers wait less on each other).
const feedPacedClients = 8

// pacedCPU measures what subscribers cost the server itself, apart from
// the cores they share with it here: commits paced at half the rate base
// (a level's with no subscriber) achieved, by as many clients, so that
// the commit rate is the same with and without subscribers, in
// cfg.Rounds alternating rounds of no subscriber and the most; rows
// feed-commits:paced:<n>, ratio the server's CPU per commit to that with
// none. The load of the machine still differs (the subscribers' reading
// is on it), and the Go runtime's idle spinning takes more CPU the less
// busy the cores are: the note gives each round's use of the cores.
func (s *feedServer) pacedCPU(ctx context.Context, cfg Config, rep *Report, base Result) error {
	rate := base.OpsPerSec / 2
	if rate <= 0 {
		return errors.New("no commit rate to pace at")
	}
	counts := []int{feedSubscriberCounts[0], feedSubscriberCounts[len(feedSubscriberCounts)-1]}
	rounds := map[int][]feedRound{}
	for i := range cfg.Rounds {
		for j := range counts {
			n := counts[(i+j)%len(counts)]
			round, err := s.commitRound(ctx, cfg, base.Clients, n, rate)
			if err != nil {
				return fmt.Errorf("paced round %d with %d subscribers: %w", i+1, n, err)
			}
			rounds[n] = append(rounds[n], round)
		}
	}
	var none float64
	for _, n := range counts {
		r, cpu, deliveries := poolRounds(rounds[n])
		r.Scenario, r.Backend, r.Subscribers, r.TargetPerSec = fmt.Sprintf("%s:paced:%d", feedCommitsName, n), s.backend, n, rate
		if r.Ops > 0 {
			r.ServerCPUMs = float64(cpu.server()) * 10 / float64(r.Ops)
			r.RedisCPUMs = float64(cpu.redis) * 10 / float64(r.Ops)
		}
		if n == counts[0] {
			none = r.ServerCPUMs
		}
		if none > 0 {
			r.Ceiling, r.Ratio = fmt.Sprintf("%s:paced:%d", feedCommitsName, counts[0]), r.ServerCPUMs/none
		}
		var usage []string
		for _, rd := range rounds[n] {
			usage = append(usage, rd.cpu.busy(rd.r.Seconds, false))
		}
		r.Note = fmt.Sprintf("the commits of %s paced at %.0f/s (half what %d clients achieved with no subscriber) by %d clients, beside %d subscribers in a process of their own under SCHED_IDLE (%d Flight, %d SSE; %d deliveries checked), "+
			"%d alternating rounds of %s: the server's CPU per commit %.3f ms, Redis's %.3f ms; ratio = the server's CPU per commit ÷ with %d subscribers (target with %d: ≤ 1.05), "+
			"at one commit rate (not one load of the machine: %s, and the less busy the cores are the more the Go runtime spins); by round, %s",
			feedCommitsName, rate, base.Clients, base.Clients, n, n/2, n-n/2, deliveries, cfg.Rounds, cfg.Duration, r.ServerCPUMs, r.RedisCPUMs, counts[0], counts[1], s.where(), strings.Join(usage, " | "))
		cfg.add(rep, r)
	}
	return nil
}

// feedRound is one measurement of closed-loop commits beside n
// subscribers.
type feedRound struct {
	r   Result
	lat []time.Duration
	cpu feedCPU
	// deliveries is the (subscriber, version) pairs checked.
	deliveries int64
}

// commitsAt measures clients closed-loop writers, client c on table c,
// in cfg.Rounds rounds of each subscriber count, round i starting with
// count i mod the counts.
func (s *feedServer) commitsAt(ctx context.Context, cfg Config, rep *Report, clients int) (base Result, err error) {
	// Untimed: the first commits of a level cost more than the steady
	// state (connections, the tables' first versions in the engine).
	Measure(ctx, clients, cfg.Duration, func(ctx context.Context, c int) Outcome {
		_, _, out := s.commit(ctx, c)
		return out
	})
	rounds := map[int][]feedRound{}
	for i := range cfg.Rounds {
		for j := range feedSubscriberCounts {
			n := feedSubscriberCounts[(i+j)%len(feedSubscriberCounts)]
			round, err := s.commitRound(ctx, cfg, clients, n, 0)
			if err != nil {
				return base, fmt.Errorf("round %d with %d subscribers: %w", i+1, n, err)
			}
			rounds[n] = append(rounds[n], round)
		}
	}
	for _, n := range feedSubscriberCounts {
		r, cpu, deliveries := poolRounds(rounds[n])
		r.Scenario, r.Backend, r.Subscribers = fmt.Sprintf("%s:%d", feedCommitsName, n), s.backend, n
		if r.Ops > 0 {
			r.ServerCPUMs = float64(cpu.server()) * 10 / float64(r.Ops)
			r.RedisCPUMs = float64(cpu.redis) * 10 / float64(r.Ops)
		}
		if n == feedSubscriberCounts[0] {
			base = r
		}
		serverRatio := ""
		if base.OpsPerSec > 0 {
			r.Ceiling, r.Ratio = fmt.Sprintf("%s:%d", feedCommitsName, feedSubscriberCounts[0]), r.OpsPerSec/base.OpsPerSec
		}
		if base.ServerCPUMs > 0 {
			serverRatio = fmt.Sprintf(" (%.2f× with %d)", r.ServerCPUMs/base.ServerCPUMs, feedSubscriberCounts[0])
		}
		var each, usage []string
		for _, rd := range rounds[n] {
			each = append(each, fmt.Sprintf("%.0f", rd.r.OpsPerSec))
			usage = append(usage, rd.cpu.busy(rd.r.Seconds, false))
		}
		r.Note = fmt.Sprintf("REST CreateTableVersion (a 1 KiB staging upload first), closed loop, client c on table c, to a `flightns serve` child on a private Redis (persistence %s) and a file:// root, "+
			"beside %d subscribers of table.version.created in a process of their own under SCHED_IDLE (%d Flight, %d SSE) started before each round and checked after it: every acknowledged version reached every subscriber (%d deliveries checked); "+
			"%d alternating rounds of %s, commits/s by round %s; ratio = commits/s ÷ with %d subscribers (target with %d: ≥ 0.95); "+
			"the server's CPU per commit %.3f ms%s, Redis's %.3f ms; %s; by round, %s",
			cfg.persistence(), n, n/2, n-n/2, deliveries, cfg.Rounds, cfg.Duration, strings.Join(each, "/"), feedSubscriberCounts[0], feedSubscriberCounts[len(feedSubscriberCounts)-1],
			r.ServerCPUMs, serverRatio, r.RedisCPUMs, s.where(), strings.Join(usage, " | "))
		cfg.add(rep, r)
	}
	return base, nil
}

// commitRound runs one round: n subscribers started, clients writers for
// cfg.Duration (closed loop, or together paced at rate commits/s when
// rate > 0), then every acknowledged version checked at every
// subscriber.
func (s *feedServer) commitRound(ctx context.Context, cfg Config, clients, n int, rate float64) (feedRound, error) {
	host, err := s.subscribeApart(ctx, n)
	if err != nil {
		return feedRound{}, err
	}
	if host != nil {
		s.hostPid = host.pid()
		defer func() {
			s.hostPid = 0
			host.close()
		}()
	}
	var mu sync.Mutex
	var keys []versionKey
	var lat []time.Duration
	var ticket atomic.Int64
	cpu0, start := s.cpu(), time.Now()
	r := Measure(ctx, clients, cfg.Duration, func(ctx context.Context, c int) Outcome {
		if rate > 0 { // the next commit's time, for whichever writer takes it
			at := start.Add(time.Duration(float64(ticket.Add(1)-1) / rate * float64(time.Second)))
			select {
			case <-ctx.Done():
				return Failed
			case <-time.After(time.Until(at)):
			}
		}
		t0 := time.Now()
		k, acked, out := s.commit(ctx, c)
		if out == OK {
			mu.Lock()
			keys = append(keys, k)
			lat = append(lat, acked.Sub(t0))
			mu.Unlock()
		}
		return out
	})
	cpu := s.cpu().minus(cpu0)
	mu.Lock()
	defer mu.Unlock()
	if host != nil {
		if err := host.delivered(ctx, keys); err != nil {
			return feedRound{}, err
		}
	}
	return feedRound{r: r, lat: lat, cpu: cpu, deliveries: int64(len(keys) * n)}, nil
}

// poolRounds is one Result of rounds of the same load (their operations
// and time summed, their latencies pooled), their CPU time, and the
// deliveries checked.
func poolRounds(rounds []feedRound) (Result, feedCPU, int64) {
	var r Result
	var cpu feedCPU
	var deliveries int64
	var lat []time.Duration
	for _, rd := range rounds {
		r.Clients = rd.r.Clients
		r.Ops += rd.r.Ops
		r.Errors += rd.r.Errors
		r.Conflicts += rd.r.Conflicts
		r.Seconds += rd.r.Seconds
		lat = append(lat, rd.lat...)
		cpu = cpu.plus(rd.cpu)
		deliveries += rd.deliveries
	}
	if r.Seconds > 0 {
		r.OpsPerSec = float64(r.Ops) / r.Seconds
	}
	slices.Sort(lat)
	r.P50Ms, r.P95Ms, r.P99Ms = pct(lat, 0.50), pct(lat, 0.95), pct(lat, 0.99)
	return r, cpu, deliveries
}
