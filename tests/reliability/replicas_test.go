package reliability

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/flightns/flightns/flightserver"
	"github.com/flightns/flightns/internal/grpcstatus"
	"github.com/flightns/flightns/internal/testutil/redistest"
	"github.com/flightns/flightns/internal/testutil/s3test"
)

// Replicas: several `flightns serve` processes serving one catalog (one
// Redis, one root, the same --catalog), as docs/operations.md allows. One
// of them holds the materializer lease and writes the __manifest segments;
// the others follow them from storage. Every replica takes commits and
// catalog mutations (the claims are linearized in the shared Redis) and
// answers SQL.
//
// The root is a bucket of a MinIO server (its own process), so
// that no replica owns the store; each replica has its own --data
// directory and listen addresses. Clients start on their own replica and,
// on a 503 or a connection error, send the very same request to the next
// replica (a retried commit with the same staging manifest is answered
// idempotently). Any other failure fails the test.

// leaseLine is what a process logs when it takes the materializer lease.
const leaseLine = "this process materializes the commit log"

// A client's attempt at one replica may take this long before it counts as
// a failure (a hung request, not a slow one: commits take milliseconds);
// a request may go round the replicas for failoverBudget.
const (
	attemptTimeout = 30 * time.Second
	failoverBudget = 2 * time.Minute
)

// replicaSet is n `flightns serve` processes of one catalog.
type replicaSet struct {
	srvs []*server
	rest []*restClient
	fl   []*flightClient
}

// startReplicas starts n replicas on redisURL and root, one after the
// other, each with its own data directory.
func startReplicas(t *testing.T, n int, redisURL, root string) *replicaSet {
	t.Helper()
	rs := &replicaSet{}
	for range n {
		srv := startServer(t, nil, "--redis", redisURL, "--root", root, "--data", filepath.Join(t.TempDir(), "data"))
		rc := newREST(srv.rest)
		// A catalog mutation waits for the lease holder's segment: while
		// the lease is orphaned, up to the lease's 10 s and more.
		rc.hc.Timeout = attemptTimeout
		rs.srvs = append(rs.srvs, srv)
		rs.rest = append(rs.rest, rc)
		rs.fl = append(rs.fl, newFlight(t, srv.flight))
	}
	return rs
}

// leaseTakenAfter returns the replica that took the materializer lease
// last, if one of the replicas' current logs says it took it after since
// (-1 otherwise). Every taking of the lease is logged, so the latest one
// names the holder.
func (rs *replicaSet) leaseTakenAfter(t *testing.T, since time.Time) int {
	t.Helper()
	best, bestAt := -1, since
	for i, s := range rs.srvs {
		for line := range strings.SplitSeq(s.Log(), "\n") {
			if !strings.Contains(line, leaseLine) {
				continue
			}
			at, err := logTime(line)
			if err != nil {
				t.Fatalf("replica %d: %v", i, err)
			}
			if at.After(bestAt) {
				best, bestAt = i, at
			}
		}
	}
	return best
}

// waitLeader waits, bounded, for a replica to log that it took the lease
// after since, and returns it. The lease of a process killed -9 lapses
// after 10 s; one stopped with SIGTERM releases it.
func (rs *replicaSet) waitLeader(t *testing.T, since time.Time) int {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if i := rs.leaseTakenAfter(t, since); i >= 0 {
			return i
		}
		if time.Now().After(deadline) {
			t.Fatalf("no replica took the materializer lease within 60 s after %s", since.Format(time.RFC3339Nano))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// logTime is the time of a text log line (time=… first).
func logTime(line string) (time.Time, error) {
	f, _, _ := strings.Cut(line, " ")
	v, ok := strings.CutPrefix(f, "time=")
	if !ok {
		return time.Time{}, fmt.Errorf("log line without a time: %q", line)
	}
	return time.Parse(time.RFC3339Nano, v)
}

// terminate stops the server with SIGTERM (a graceful shutdown) and
// returns its exit code once it has exited.
func (s *server) terminate() int {
	s.t.Helper()
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(90 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		s.t.Fatalf("flightns (pid %d) did not exit within 90 s of SIGTERM:\n%s", cmd.Process.Pid, tail(s.Log(), 4000))
	}
	return cmd.ProcessState.ExitCode()
}

// failover sends requests to a replica and, while they fail with a 503 or
// a connection error, to the next replica; it counts the retries, the
// answers of each replica and the failures.
type failover struct {
	rs *replicaSet

	mu       sync.Mutex
	retried  map[string]int // by reason
	answered []int          // by replica
	failed   []string
	// resent counts the creates sent again after a lost answer or a 503
	// that were then acknowledged ([0]) or refused ([1]).
	resent [2]int
}

func newFailover(rs *replicaSet) *failover {
	return &failover{rs: rs, retried: map[string]int{}, answered: make([]int, len(rs.srvs))}
}

// retryReason says why a failed request may go to the next replica:
// "refused" (the connection was refused: the request was never sent),
// "503" (ServiceUnavailable, Lance code 17) or "connection" (the
// connection broke: the request may have taken effect, and the retry
// resends the very same request). "" is any other failure.
func retryReason(code int, err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, errNoEffect), neverSent(err):
		return "refused"
	case code == 17, strings.HasPrefix(err.Error(), "HTTP 503 "):
		return "503"
	}
	if c, ok := grpcstatus.Code(err); ok {
		if c == 17 {
			return "503"
		}
		return ""
	}
	if st, ok := status.FromError(err); ok {
		if st.Code() == codes.Unavailable { // the transport failed
			return "connection"
		}
		return ""
	}
	var ue *url.Error
	if (errors.As(err, &ue) && !ue.Timeout()) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
		return "connection"
	}
	return ""
}

// do runs send at replica home, then at the next replicas while it fails
// with a reason to retry. It returns the replica that answered (or the
// last one tried) and whether one answered; a request that failed
// otherwise, or went round for failoverBudget, is a failure of the test.
// An answer is anything but an error: a refusal (a conflict) is one.
func (fo *failover) do(home int, what string, send func(ctx context.Context, r int) (code int, err error)) (int, bool) {
	deadline := time.Now().Add(failoverBudget)
	r := home
	for {
		ctx, cancel := context.WithTimeout(context.Background(), attemptTimeout)
		code, err := send(ctx, r)
		cancel()
		if err == nil {
			fo.mu.Lock()
			fo.answered[r]++
			fo.mu.Unlock()
			return r, true
		}
		reason := retryReason(code, err)
		fo.mu.Lock()
		if reason == "" || time.Now().After(deadline) {
			fo.failed = append(fo.failed, fmt.Sprintf("%s at replica %d: %v (Lance code %d)", what, r, err, code))
			fo.mu.Unlock()
			return r, false
		}
		fo.retried[reason]++
		fo.mu.Unlock()
		r = (r + 1) % len(fo.rs.srvs)
		time.Sleep(time.Duration(5+rand.IntN(20)) * time.Millisecond)
	}
}

// createNamespace creates ns (ExistOk, so that a retry of a create that
// took effect succeeds), starting at replica home.
func (fo *failover) createNamespace(home int, ns string) bool {
	_, ok := fo.do(home, "CreateNamespace "+ns, func(ctx context.Context, r int) (int, error) {
		rep, err := fo.rs.rest[r].post(ctx, "/v1/namespace/"+ns+"/create", map[string]any{"mode": "ExistOk"})
		if err != nil {
			return 0, err
		}
		if rep.Status != http.StatusOK {
			return rep.Code, fmt.Errorf("HTTP %d %s", rep.Status, rep.Body)
		}
		return 0, nil
	})
	return ok
}

// check fails the test for every failed request, and unless every replica
// answered requests and the faults made clients retry (else the run proved
// nothing about failing over).
func (fo *failover) check(t *testing.T) {
	t.Helper()
	fo.mu.Lock()
	defer fo.mu.Unlock()
	t.Logf("requests answered by replica: %v; retried on the next replica: %v; creates sent again after a lost answer or a 503: %d acknowledged, %d refused",
		fo.answered, fo.retried, fo.resent[0], fo.resent[1])
	for _, f := range fo.failed[:min(len(fo.failed), 20)] {
		t.Errorf("a request failed other than with a 503 or a connection error (or did not get through in %s): %s", failoverBudget, f)
	}
	if len(fo.failed) > 20 {
		t.Errorf("… and %d more failed requests", len(fo.failed)-20)
	}
	for r, n := range fo.answered {
		if n == 0 {
			t.Errorf("replica %d answered no request: the clients were not spread over the replicas", r)
		}
	}
	if fo.retried["refused"]+fo.retried["503"]+fo.retried["connection"] == 0 {
		t.Errorf("no request was retried on another replica: the faults did not reach the clients")
	}
}

// replicaWorker is a worker of the linearizability workload (its
// history, staging and sending) whose requests fail over between
// replicas: it starts each at its home replica.
type replicaWorker struct {
	*worker
	fo   *failover
	home int
}

// at points the worker's clients at replica r.
func (w *replicaWorker) at(r int) { w.rest, w.fl = w.fo.rs.rest[r], w.fo.rs.fl[r] }

// read describes table t's latest version through REST or Flight. The
// read is recorded with the call time of the attempt that answered; a
// read that failed has no effect and is not recorded.
func (w *replicaWorker) read(t int) {
	in := opInput{Kind: opRead, Tables: []int{t}}
	flight := !w.restOnly && w.rng.IntN(2) == 1
	in.Via = "rest"
	if flight {
		in.Via = "flight"
	}
	var (
		call int64
		tv   *struct{ Version, Size int64 }
	)
	r, ok := w.fo.do(w.home, fmt.Sprintf("%s describe of table %d", in.Via, t), func(ctx context.Context, r int) (int, error) {
		w.at(r)
		call = w.h.now()
		var err error
		if flight {
			tv, err = w.describeFlight(ctx, t)
		} else {
			tv, err = w.describeREST(ctx, t)
		}
		return 0, err
	})
	if !ok {
		return
	}
	in.Via += "@r" + strconv.Itoa(r)
	w.known[t] = tv.Version
	w.h.record(w.id, -1, in, call, opOutput{Version: tv.Version, Size: tv.Size})
}

// create commits version known+1 of each of tables (one table through REST
// or Flight, several as one batch), retrying the same request (the same
// staging manifests) on the next replica while it fails with a 503 or a
// connection error. Its call time is the first attempt's: any attempt may
// have taken effect. An acknowledgment or a refusal ends it; a request that
// failed otherwise is of unknown outcome (and fails the test).
func (w *replicaWorker) create(tables []int) {
	in := opInput{Kind: opWrite, Tables: tables}
	id := w.h.newOp(in)
	var entries []map[string]any
	for _, t := range tables {
		v := w.known[t] + 1
		size := int64(64 + id)
		ctx, cancel := context.WithTimeout(context.Background(), attemptTimeout)
		p, err := w.cat.stage(ctx, id, t, v, size)
		cancel()
		if err != nil {
			w.fo.mu.Lock()
			w.fo.failed = append(w.fo.failed, fmt.Sprintf("staging a manifest on the S3 server: %v", err))
			w.fo.mu.Unlock()
			return // nothing sent: not an operation
		}
		in.Versions = append(in.Versions, v)
		in.Sizes = append(in.Sizes, size)
		entries = append(entries, map[string]any{"id": w.cat.ids[t], "version": v, "manifest_path": p, "manifest_size": size})
	}
	var via int
	switch {
	case len(tables) == 1 && w.restOnly:
		via = 0
	case len(tables) == 1:
		via = w.rng.IntN(2)
	case w.restOnly:
		via = 2 + w.rng.IntN(2)
	default:
		via = 2 + w.rng.IntN(3)
	}
	in.Via = [...]string{"rest", "flight", "rest-batch-create", "rest-batch-commit", "flight-batch-create"}[via]
	w.h.setInput(id, in)
	call := w.h.now()
	var acked, resent bool
	var refusal int
	r, answered := w.fo.do(w.home, fmt.Sprintf("%s create of tables %v versions %v", in.Via, tables, in.Versions), func(ctx context.Context, r int) (int, error) {
		w.at(r)
		res, code, err := w.send(ctx, via, tables, entries)
		acked, refusal = res, code
		if reason := retryReason(code, err); reason == "connection" || reason == "503" {
			resent = true
		}
		return code, err
	})
	if answered && resent {
		w.fo.mu.Lock()
		if acked {
			w.fo.resent[0]++
		} else {
			w.fo.resent[1]++
		}
		w.fo.mu.Unlock()
	}
	in.Via += "@r" + strconv.Itoa(r)
	out := opOutput{Result: resUnknown, Code: refusal}
	switch {
	case !answered:
	case acked:
		out.Result = resOK
		for k, t := range tables {
			w.known[t] = in.Versions[k]
		}
	default: // ConcurrentModification or InvalidInput
		out.Result = resRejected
	}
	w.h.record(w.id, id, in, call, out)
}

// run runs the workload's mix of reads, creates and batches until stop.
func (w *replicaWorker) run(stop *atomic.Bool, nTables int) {
	for n := 0; n < 50000 && !stop.Load(); n++ {
		t := w.rng.IntN(nTables)
		switch r := w.rng.IntN(10); {
		case r < 3:
			w.read(t)
		case r < 7:
			w.read(t)
			w.create([]int{t})
		default:
			u := (t + 1 + w.rng.IntN(nTables-1)) % nTables
			w.read(t)
			w.read(u)
			w.create([]int{t, u})
		}
	}
}

// replicaFault is one fault of a replica run, injected from the test's
// goroutine while the clients run.
type replicaFault struct {
	name   string
	inject func(t *testing.T, rs *replicaSet, fo *failover)
}

// killLeader kills the materializer lease holder with SIGKILL and starts
// it again on its data. Meanwhile a catalog mutation is sent to another
// replica: it is acknowledged only once a segment holding it is durable,
// so it waits until another replica takes the orphaned lease (it lapses
// after 10 s), or answers 503 and is retried.
var killLeader = replicaFault{"the materializer lease holder killed -9 and restarted", func(t *testing.T, rs *replicaSet, fo *failover) {
	i := rs.waitLeader(t, time.Time{})
	t.Logf("replica %d holds the materializer lease: kill -9", i)
	killedAt := time.Now()
	rs.srvs[i].kill()
	done := make(chan bool, 1)
	start := time.Now()
	go func() {
		done <- fo.createNamespace((i+1)%len(rs.srvs), "failover"+strconv.FormatInt(start.UnixNano(), 36))
	}()
	rs.srvs[i].start()
	rs.srvs[i].mustReady(60 * time.Second)
	if !<-done {
		t.Errorf("a CreateNamespace sent while the lease holder was dead failed")
	}
	j := rs.waitLeader(t, killedAt)
	t.Logf("CreateNamespace on replica %d while the lease was orphaned: acknowledged after %.1f s; replica %d took the lease", (i+1)%len(rs.srvs), time.Since(start).Seconds(), j)
}}

// rollingRestart stops each replica in turn with SIGTERM, checks that it
// shut down cleanly (exit code 0), starts it again and waits until it is
// ready before the next.
var rollingRestart = replicaFault{"rolling restart: SIGTERM, start, ready, next", func(t *testing.T, rs *replicaSet, fo *failover) {
	for i, s := range rs.srvs {
		t0 := time.Now()
		if code := s.terminate(); code != 0 {
			t.Errorf("replica %d exited with code %d after SIGTERM, want 0 (a graceful shutdown)\n%s", i, code, tail(s.Log(), 4000))
		}
		stopped := time.Since(t0)
		s.start()
		s.mustReady(60 * time.Second)
		t.Logf("replica %d: stopped in %.1f s, ready again %.1f s later", i, stopped.Seconds(), (time.Since(t0) - stopped).Seconds())
	}
}}

// replicaRun drives the linearizability workload on a replica set, its
// clients spread over the replicas (client i starts at replica i mod n),
// and injects faults one after the other with a stretch of plain workload
// before, between and after them.
type replicaRun struct {
	rs       *replicaSet
	storeURI string
	tables   int
	clients  int
	between  time.Duration
	rounds   int // histories, each on its own tables
	faults   []replicaFault
}

func (rr replicaRun) run(t *testing.T) {
	t.Helper()
	var total counts
	for r := range max(rr.rounds, 1) {
		c := rr.round(t, fmt.Sprintf("rep%d", r))
		total.add(c)
	}
	if rr.rounds > 1 {
		t.Logf("all %d rounds: %+v", rr.rounds, total)
	}
}

func (rr replicaRun) round(t *testing.T, ns string) counts {
	t.Helper()
	cat := setupCatalogIn(t, rr.rs.rest[0], rr.storeURI, ns, rr.tables)
	h := newHistory()
	fo := newFailover(rr.rs)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	var addrs []string
	for _, s := range rr.rs.srvs {
		addrs = append(addrs, s.rest)
	}
	feed := startFeed(addrs)
	defer feed.stopAll()
	var stop atomic.Bool
	var wg sync.WaitGroup
	defer func() { stop.Store(true); wg.Wait() }()
	for i := range rr.clients {
		w := &replicaWorker{worker: &worker{id: i, cat: cat, h: h, rng: rand.New(rand.NewPCG(seed, uint64(i)))},
			fo: fo, home: i % len(rr.rs.srvs)}
		wg.Go(func() { w.run(&stop, rr.tables) })
	}
	time.Sleep(rr.between)
	for _, f := range rr.faults {
		t0 := time.Now()
		h.noteFault(f.name)
		f.inject(t, rr.rs, fo)
		t.Logf("fault %q took %.1f s", f.name, time.Since(t0).Seconds())
		time.Sleep(rr.between)
	}
	stop.Store(true)
	wg.Wait()
	for _, s := range rr.rs.srvs {
		s.mustReady(60 * time.Second)
	}
	// A final read of every table, at every replica, closes the history.
	for r := range rr.rs.srvs {
		w := &replicaWorker{worker: &worker{id: rr.clients + r, cat: cat, h: h, rng: rand.New(rand.NewPCG(seed, uint64(100+r)))}, fo: fo, home: r}
		for tb := range rr.tables {
			w.read(tb)
		}
	}
	finals := checkStorage(t, cat, h, rr.rs.rest[0])
	checkFeed(t, feed, rr.rs.rest[0], rr.rs.srvs[0].rest, cat, h, rr.rs.srvs...)
	checkLinearizable(t, h, false)
	c := h.counts()
	t.Logf("history: %+v; final manifests: %d", c, finals)
	fo.check(t)
	if c.OK == 0 {
		t.Fatalf("no create was acknowledged: the workload proved nothing")
	}
	return c
}

// Three replicas on one standalone Redis and one S3 root, six clients
// spread over them: the lease holder is killed -9 and restarted, then all
// three are restarted one after the other with SIGTERM. No request fails
// but with 503s and connection errors that the clients retried on another
// replica; the whole history, across replicas, is linearizable; storage
// holds exactly what was acknowledged.
func TestReplicasLinearizableThroughKillAndRollingRestart(t *testing.T) {
	s3 := s3test.Start(t, "lake")
	r := redistest.Start(t)
	root := s3.URI("lake", "cat")
	rs := startReplicas(t, 3, r.URL(), root)
	replicaRun{rs: rs, storeURI: root, tables: 4, clients: 6,
		between: pick(3*time.Second, 10*time.Second), rounds: pick(1, 3),
		faults: []replicaFault{killLeader, rollingRestart}}.run(t)
}

// The same on a Redis Cluster of three masters (every key of the catalog
// in one slot, on one of them), shorter.
func TestReplicasLinearizableOnRedisCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0)
	addrs := c.Addrs()
	redisURL := "redis+cluster://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr=")
	s3 := s3test.Start(t, "lake")
	root := s3.URI("lake", "cat")
	rs := startReplicas(t, 3, redisURL, root)
	replicaRun{rs: rs, storeURI: root, tables: 4, clients: 6,
		between: pick(2*time.Second, 10*time.Second), rounds: pick(1, 2),
		faults: []replicaFault{killLeader, rollingRestart}}.run(t)
}

// sqlAnswer is one answer of the read-your-writes query, and the catalog
// sequence DoGet named for it.
type sqlAnswer struct {
	seq       uint64
	namespace int64 // rows of the namespace created (0 or 1)
	version   int64 // the table's newest version row (0: none)
}

// ask runs the read-your-writes query on a Flight SQL client with the
// given consistency (x-flightns-consistency).
func ask(t *testing.T, c *flightsql.Client, consistency, query string) sqlAnswer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, flightserver.ConsistencyHeader, consistency)
	info, err := c.Execute(ctx, query)
	if err != nil {
		t.Fatalf("GetFlightInfo (%s): %v", consistency, err)
	}
	var hdr metadata.MD
	rdr, err := c.DoGet(ctx, info.Endpoint[0].Ticket, grpc.Header(&hdr))
	if err != nil {
		t.Fatalf("DoGet (%s): %v", consistency, err)
	}
	defer rdr.Release()
	var a sqlAnswer
	rows := 0
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for i := range int(rec.NumRows()) {
			rows++
			for k, dst := range []*int64{&a.namespace, &a.version} {
				col := rec.Column(k)
				if col.IsNull(i) {
					continue
				}
				if *dst, err = strconv.ParseInt(col.ValueStr(i), 10, 64); err != nil {
					t.Fatalf("column %d: %v", k, err)
				}
			}
		}
	}
	if err := rdr.Err(); err != nil {
		t.Fatalf("DoGet (%s): %v", consistency, err)
	}
	if rows != 1 {
		t.Fatalf("%d rows, want 1", rows)
	}
	v := hdr.Get(flightserver.SeqHeader)
	if len(v) != 1 {
		t.Fatalf("DoGet (%s) answered %s = %q, want one catalog sequence", consistency, flightserver.SeqHeader, v)
	}
	if a.seq, err = strconv.ParseUint(v[0], 10, 64); err != nil {
		t.Fatalf("%s %q: %v", flightserver.SeqHeader, v[0], err)
	}
	return a
}

// Read-your-writes across replicas: a client commits on replica A (a
// CreateNamespace, then a CreateTableVersion, both over REST) and at once
// queries __manifest through Flight SQL on replica B. With the default
// consistency (latest) B's answer holds both, every time; the catalog
// sequence DoGet names is at least the head of the commit log read from
// Redis after the commits were acknowledged (so at least theirs), and
// never goes back from one query to the next, whichever replica answers.
// With x-flightns-consistency: visible, B answers with what its SQL engine
// has applied: fresh or not (that is not asserted), but a stale answer
// must name a sequence before the commits.
func TestReplicasReadYourWrites(t *testing.T) {
	s3 := s3test.Start(t, "lake")
	r := redistest.Start(t)
	root := s3.URI("lake", "cat")
	rs := startReplicas(t, 3, r.URL(), root)
	rdb := r.Client()
	cat := setupCatalogIn(t, rs.rest[0], root, "ryw", 1)
	table := strings.Join(cat.ids[0], "$")
	sqls := make([]*flightsql.Client, len(rs.srvs))
	for i, s := range rs.srvs {
		c, err := flightsql.NewClient(s.flight, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		sqls[i] = c
	}
	ctx := context.Background()
	n := pick(60, 500)
	var last uint64
	fresh, stale := 0, 0
	pairs := map[[2]int]int{}
	for i := range n {
		a := i % len(rs.srvs)
		b := (a + 1 + (i/len(rs.srvs))%(len(rs.srvs)-1)) % len(rs.srvs)
		pairs[[2]int{a, b}]++
		ns := "ryw$n" + strconv.Itoa(i)
		rs.rest[a].must(t, "/v1/namespace/"+ns+"/create", map[string]any{}, nil)
		v := int64(i + 1)
		p, err := cat.stage(ctx, i, 0, v, 100)
		if err != nil {
			t.Fatal(err)
		}
		rs.rest[a].must(t, "/v1/table/"+table+"/version/create", map[string]any{"version": v, "manifest_path": p, "manifest_size": 100}, nil)
		head, err := rdb.Get(ctx, "{flightns}:seq").Uint64()
		if err != nil {
			t.Fatalf("reading the head of the commit log: %v", err)
		}
		q := fmt.Sprintf(`SELECT
  (SELECT count(*) FROM __manifest WHERE object_type = 'namespace' AND object_id = '%s') AS ns,
  (SELECT max(table_version) FROM __manifest WHERE object_type = 'table_version' AND object_id = '%s') AS v`, ns, table)

		// visible first: a latest query on B would have made B catch up.
		vis := ask(t, sqls[b], "visible", q)
		if vis.namespace == 1 && vis.version == v {
			fresh++
		} else {
			stale++
			if vis.seq >= head {
				t.Errorf("iteration %d: a visible answer at sequence %d misses commits at or before %d (namespace rows %d, version %d, want %d)",
					i, vis.seq, head, vis.namespace, vis.version, v)
			}
		}

		got := ask(t, sqls[b], "latest", q)
		if got.namespace != 1 || got.version != v {
			t.Fatalf("iteration %d: committed on replica %d, queried on replica %d (latest): namespace %s rows %d, table version %d, want 1 and %d (sequence %d, log head %d)",
				i, a, b, ns, got.namespace, got.version, v, got.seq, head)
		}
		if got.seq < head {
			t.Fatalf("iteration %d: replica %d answered at sequence %d, before the commit log's head %d after the commits", i, b, got.seq, head)
		}
		if got.seq < last {
			t.Fatalf("iteration %d: replica %d answered at sequence %d, before the previous answer's %d", i, b, got.seq, last)
		}
		last = got.seq
	}
	keys := make([][2]int, 0, len(pairs))
	for k := range pairs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y [2]int) int { return (x[0]*10 + x[1]) - (y[0]*10 + y[1]) })
	var spread []string
	for _, k := range keys {
		spread = append(spread, fmt.Sprintf("%d→%d ×%d", k[0], k[1], pairs[k]))
	}
	t.Logf("%d commits, each read at once on another replica (%s): latest always fresh; visible fresh %d, stale %d; last sequence %d",
		n, strings.Join(spread, ", "), fresh, stale, last)
}
