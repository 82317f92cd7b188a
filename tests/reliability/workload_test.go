package reliability

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/google/uuid"

	"github.com/flightns/flightns/internal/grpcstatus"
	"github.com/flightns/flightns/objstore"
)

// maxTables bounds the tables of one history (the model's state is an
// array of this size, so states compare with ==).
const maxTables = 4

// cell is one table's register: its latest version and the size of that
// version's manifest (unique per writer, so it names the writer).
type cell struct{ V, Size int64 }

type modelState [maxTables]cell

const (
	opRead = iota
	opWrite
)

const (
	resOK       = iota // acknowledged
	resRejected        // ConcurrentModification or InvalidInput: not applied
	resUnknown         // timeout, unavailable, lost reply: maybe applied
)

// opInput is one operation: a read of one table's latest version, or a
// create of versions (one table, or a multi-table batch).
type opInput struct {
	Kind     int
	Tables   []int
	Versions []int64
	Sizes    []int64
	Via      string
	Op       int // a create's id in history.tries (not part of the model)
}

type opOutput struct {
	Result  int
	Version int64 // reads
	Size    int64 // reads
	Code    int   // creates: the Lance code of a refusal or failure (for the report only)
}

// registerModel: per table a register of the latest version; a create
// succeeds only at head+1 on every member (all or nothing); a create of
// unknown outcome may have happened or not (porcupine places it anywhere
// after its call, since it never returns).
var registerModel = porcupine.Model{
	Init: func() any { return modelState{} },
	Step: func(st, in, out any) (bool, any) {
		s, i, o := st.(modelState), in.(opInput), out.(opOutput)
		if i.Kind == opRead {
			c := s[i.Tables[0]]
			return c.V == o.Version && c.Size == o.Size, s
		}
		pre := true
		for k, t := range i.Tables {
			if s[t].V != i.Versions[k]-1 {
				pre = false
			}
		}
		next := s
		for k, t := range i.Tables {
			next[t] = cell{i.Versions[k], i.Sizes[k]}
		}
		switch o.Result {
		case resOK:
			return pre, next
		case resRejected:
			return !pre, s
		default:
			if pre {
				return true, next
			}
			return true, s
		}
	},
	DescribeOperation: func(in, out any) string {
		i, o := in.(opInput), out.(opOutput)
		if i.Kind == opRead {
			return fmt.Sprintf("read(t%d) via %s -> v%d/%d", i.Tables[0], i.Via, o.Version, o.Size)
		}
		res := [...]string{"ok", "rejected", "unknown"}[o.Result]
		if o.Code != 0 {
			res += fmt.Sprintf(" (code %d)", o.Code)
		}
		return fmt.Sprintf("create(t%v v%v size%v) via %s -> %s", i.Tables, i.Versions, i.Sizes, i.Via, res)
	},
	DescribeState: func(st any) string { return fmt.Sprint(st.(modelState)) },
}

// lossyModel is registerModel that also allows a rejection whose
// precondition held. When Redis loses its state, a claim made just before
// can make a concurrent writer lose and then vanish from reads until its
// own writer finishes: no data is lost, but the rejection has no place in a
// strict linearization (docs/reliability.md, "known limits"). Reads stay
// strict: a stale read after an acknowledged create still fails.
var lossyModel = func() porcupine.Model {
	m := registerModel
	m.Step = func(st, in, out any) (bool, any) {
		if o := out.(opOutput); in.(opInput).Kind == opWrite && o.Result == resRejected {
			return true, st
		}
		return registerModel.Step(st, in, out)
	}
	return m
}()

// catalog is the test's view of the tables under test and direct access to
// their storage.
type catalog struct {
	ns    string
	ids   [][]string
	locs  []string // location URIs as DeclareTable returned them
	keys  []string // table directories relative to the root
	store *objstore.Store
}

// setupCatalog creates a namespace and n tables through REST.
func setupCatalog(t testing.TB, rc *restClient, storeURI string, n int) *catalog {
	return setupCatalogIn(t, rc, storeURI, "rel", n)
}

// setupCatalogIn creates namespace ns and n tables in it through REST.
func setupCatalogIn(t testing.TB, rc *restClient, storeURI, ns string, n int) *catalog {
	t.Helper()
	c := &catalog{ns: ns, store: openStore(t, storeURI)}
	rc.must(t, "/v1/namespace/"+ns+"/create", map[string]any{"mode": "ExistOk"}, nil)
	for i := range n {
		id := []string{ns, "t" + strconv.Itoa(i)}
		var d struct{ Location string }
		rc.must(t, "/v1/table/"+strings.Join(id, "$")+"/declare", map[string]any{}, &d)
		c.ids = append(c.ids, id)
		c.locs = append(c.locs, strings.TrimSuffix(d.Location, "/"))
		c.keys = append(c.keys, path.Base(strings.TrimSuffix(d.Location, "/")))
	}
	return c
}

// openStore opens the root for the test's own reads and writes.
func openStore(t testing.TB, uri string) *objstore.Store {
	t.Helper()
	st, err := objstore.Open(context.Background(), uri)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func finalName(v int64) string {
	return fmt.Sprintf("%020d.manifest", uint64(math.MaxUint64)-uint64(v))
}

// content is a writer's manifest bytes: they name the operation, table and
// version, padded to the operation's unique size.
func content(op, table int, v, size int64) []byte {
	b := []byte(fmt.Sprintf("op=%d table=%d version=%d\n", op, table, v))
	for int64(len(b)) < size {
		b = append(b, '.')
	}
	return b
}

// stage writes a staging manifest and returns its path as a URI.
func (c *catalog) stage(ctx context.Context, op, table int, v, size int64) (string, error) {
	name := finalName(v) + "-" + uuid.NewString()
	key := c.keys[table] + "/_versions/" + name
	if err := c.store.Put(ctx, key, content(op, table, v, size)); err != nil {
		return "", err
	}
	return c.locs[table] + "/_versions/" + name, nil
}

// history collects operations and what every create tried.
type history struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
	tries []opInput // index: op id
	outs  []int
	never atomic.Int64
	// committed: the creates whose manifests are all final, set by
	// checkStorage once the run is over; owner: the create whose bytes
	// each final manifest holds.
	committed map[int]bool
	owner     map[tableVersion]int
	// faults: what was injected when (for reports).
	faults []faultAt
}

// faultAt is a fault injected at a time since the history's start.
type faultAt struct {
	name string
	at   time.Duration
}

// noteFault records that fault name is being injected now.
func (h *history) noteFault(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.faults = append(h.faults, faultAt{name, time.Since(h.start)})
}

func newHistory() *history { return &history{start: time.Now()} }

func (h *history) now() int64 { return int64(time.Since(h.start)) }

// newOp reserves an operation id (for a create, before staging).
func (h *history) newOp(in opInput) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tries = append(h.tries, in)
	h.outs = append(h.outs, -1)
	return len(h.tries) - 1
}

func (h *history) setInput(id int, in opInput) {
	h.mu.Lock()
	h.tries[id] = in
	h.mu.Unlock()
}

func (h *history) record(client, id int, in opInput, call int64, out opOutput) {
	ret := h.now()
	if out.Result == resUnknown {
		ret = math.MaxInt64 - h.never.Add(1) // never returns
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if id >= 0 {
		in.Op = id
		h.outs[id] = out.Result
	}
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
}

// counts summarizes the history.
type counts struct {
	Reads, Creates, Batches, OK, Rejected, Unknown int
}

// add adds o's counts to c (rounds summed into a run).
func (c *counts) add(o counts) {
	c.Reads += o.Reads
	c.Creates += o.Creates
	c.Batches += o.Batches
	c.OK += o.OK
	c.Rejected += o.Rejected
	c.Unknown += o.Unknown
}

func (h *history) counts() counts {
	h.mu.Lock()
	defer h.mu.Unlock()
	var c counts
	for _, op := range h.ops {
		in, out := op.Input.(opInput), op.Output.(opOutput)
		if in.Kind == opRead {
			c.Reads++
			continue
		}
		if len(in.Tables) > 1 {
			c.Batches++
		} else {
			c.Creates++
		}
		switch out.Result {
		case resOK:
			c.OK++
		case resRejected:
			c.Rejected++
		default:
			c.Unknown++
		}
	}
	return c
}

// worker is one client of the workload.
type worker struct {
	id    int
	cat   *catalog
	h     *history
	rest  *restClient
	fl    *flightClient
	rng   *rand.Rand
	known [maxTables]int64
	srv   *server // nil: an in-process server, always ready
	// restOnly sends everything through REST (no Flight client).
	restOnly bool
	// lastCode is the Lance code of the last create that failed (-1: a
	// transport error, 0: none).
	lastCode int
}

// read describes table t's latest version, through REST or Flight, and
// records it unless it failed (a failed read has no effect).
func (w *worker) read(ctx context.Context, t int) {
	in := opInput{Kind: opRead, Tables: []int{t}}
	call := w.h.now()
	var (
		tv  *struct{ Version, Size int64 }
		err error
	)
	if w.restOnly || w.rng.IntN(2) == 0 {
		in.Via = "rest"
		tv, err = w.describeREST(ctx, t)
	} else {
		in.Via = "flight"
		tv, err = w.describeFlight(ctx, t)
	}
	if err != nil {
		w.settle()
		return
	}
	w.known[t] = tv.Version
	w.h.record(w.id, -1, in, call, opOutput{Version: tv.Version, Size: tv.Size})
}

var errNoEffect = errors.New("request failed without effect")

type describeReply struct {
	Version *struct {
		Version      int64  `json:"version"`
		ManifestSize *int64 `json:"manifest_size"`
	} `json:"version"`
}

func (d describeReply) get() *struct{ Version, Size int64 } {
	out := &struct{ Version, Size int64 }{}
	if d.Version != nil {
		out.Version = d.Version.Version
		if d.Version.ManifestSize != nil {
			out.Size = *d.Version.ManifestSize
		}
	}
	return out
}

func (w *worker) describeREST(ctx context.Context, t int) (*struct{ Version, Size int64 }, error) {
	r, err := w.rest.post(ctx, "/v1/table/"+strings.Join(w.cat.ids[t], "$")+"/version/describe", map[string]any{})
	if err != nil {
		return nil, err
	}
	if r.Code == 11 { // TableVersionNotFound: no version yet
		return &struct{ Version, Size int64 }{}, nil
	}
	if r.Status != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d %s", r.Status, r.Body)
	}
	var d describeReply
	if err := json.Unmarshal(r.Body, &d); err != nil {
		return nil, err
	}
	return d.get(), nil
}

func (w *worker) describeFlight(ctx context.Context, t int) (*struct{ Version, Size int64 }, error) {
	body, _ := json.Marshal(map[string]any{"id": w.cat.ids[t]})
	res, err := w.fl.action(ctx, "DescribeTableVersion", body)
	if code, ok := grpcstatus.Code(err); ok && code == 11 {
		return &struct{ Version, Size int64 }{}, nil
	}
	if err != nil {
		return nil, err
	}
	var d describeReply
	if err := json.Unmarshal(res, &d); err != nil {
		return nil, err
	}
	return d.get(), nil
}

// create commits version known+1 of each table in tables: one table
// through REST or Flight, several as one batch (BatchCreateTableVersions
// or BatchCommitTables).
func (w *worker) create(ctx context.Context, tables []int) {
	in := opInput{Kind: opWrite, Tables: tables}
	id := w.h.newOp(in)
	var entries []map[string]any
	for _, t := range tables {
		v := w.known[t] + 1
		size := int64(64 + id)
		p, err := w.cat.stage(ctx, id, t, v, size)
		if err != nil {
			w.settle()
			return // nothing sent: not an operation
		}
		in.Versions = append(in.Versions, v)
		in.Sizes = append(in.Sizes, size)
		entries = append(entries, map[string]any{"id": w.cat.ids[t], "version": v, "manifest_path": p, "manifest_size": size})
	}
	var via int
	if len(tables) == 1 {
		via = w.rng.IntN(2)
		if w.restOnly {
			via = 0
		}
		in.Via = [...]string{"rest", "flight"}[via]
	} else {
		via = 2 + w.rng.IntN(3)
		if w.restOnly {
			via = 2 + w.rng.IntN(2)
		}
		in.Via = [...]string{"", "", "rest-batch-create", "rest-batch-commit", "flight-batch-create"}[via]
	}
	w.h.setInput(id, in)
	call := w.h.now()
	res, code, err := w.send(ctx, via, tables, entries)
	w.lastCode = code
	if err != nil && code == 0 {
		w.lastCode = -1
	}
	out := opOutput{Result: resUnknown, Code: code}
	switch {
	case errors.Is(err, errNoEffect):
		w.settle()
		return
	case err == nil && res:
		out.Result = resOK
		for k, t := range tables {
			w.known[t] = in.Versions[k]
		}
	case err == nil && (code == 14 || code == 13):
		out.Result = resRejected
	default:
		w.settle()
	}
	w.h.record(w.id, id, in, call, out)
}

// send returns (acknowledged, Lance code of a definite refusal, error).
func (w *worker) send(ctx context.Context, via int, tables []int, entries []map[string]any) (bool, int, error) {
	switch via {
	case 0, 2, 3: // REST
		var p string
		var body any
		switch via {
		case 0:
			p = "/v1/table/" + strings.Join(w.cat.ids[tables[0]], "$") + "/version/create"
			body = entries[0]
		case 2:
			p = "/v1/table/version/batch-create"
			body = map[string]any{"entries": entries}
		case 3:
			p = "/v1/table/batch-commit"
			var ops []map[string]any
			for _, e := range entries {
				ops = append(ops, map[string]any{"create_table_version": e})
			}
			body = map[string]any{"operations": ops}
		}
		r, err := w.rest.post(ctx, p, body)
		if err != nil {
			if neverSent(err) {
				return false, 0, errNoEffect
			}
			return false, 0, err
		}
		if r.Status == http.StatusOK {
			return true, 0, nil
		}
		if r.Code == 14 || r.Code == 13 {
			return false, r.Code, nil
		}
		return false, r.Code, fmt.Errorf("HTTP %d %s", r.Status, r.Body)
	default: // Flight
		typ, body := "CreateTableVersion", any(entries[0])
		if via == 4 {
			typ, body = "BatchCreateTableVersions", map[string]any{"entries": entries}
		}
		b, _ := json.Marshal(body)
		_, err := w.fl.action(ctx, typ, b)
		if err == nil {
			return true, 0, nil
		}
		if code, ok := grpcstatus.Code(err); ok && (code == 14 || code == 13) {
			return false, int(code), nil
		}
		if neverSent(err) {
			return false, 0, errNoEffect
		}
		return false, 0, err
	}
}

// settle waits (bounded) for the server to be ready after a failure, so a
// fault yields a few unknown outcomes rather than a storm of them.
func (w *worker) settle() {
	if w.srv != nil {
		_ = w.srv.waitReady(20 * time.Second)
	}
	time.Sleep(time.Duration(w.rng.IntN(20)) * time.Millisecond)
}

// run runs the workload until end or maxOps.
func (w *worker) run(end time.Time, maxOps int, nTables int) {
	for n := 0; n < maxOps && time.Now().Before(end); n++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		t := w.rng.IntN(nTables)
		switch r := w.rng.IntN(10); {
		case r < 3:
			w.read(ctx, t)
		case r < 7:
			w.read(ctx, t)
			w.create(ctx, []int{t})
		default:
			u := (t + 1 + w.rng.IntN(nTables-1)) % nTables
			w.read(ctx, t)
			w.read(ctx, u)
			w.create(ctx, []int{t, u})
		}
		cancel()
	}
}

// fault is one kind of fault and how to inject it once.
type fault struct {
	name   string
	inject func(t *testing.T, rng *rand.Rand)
}

// scenario is one linearizability run under faults.
type scenario struct {
	storeURI string // the root as the test reaches it (past any proxy)
	srv      *server
	tables   int
	clients  int
	duration time.Duration // of one round
	rounds   int           // histories, each on its own tables (default 1)
	every    time.Duration // between faults (jittered)
	faults   []fault
	quiesce  func(t *testing.T) // after the workload: undo faults before the checks
	// lossy: the faults make Redis lose state; a history that is not
	// strictly linearizable passes if lossyModel explains it (logged).
	lossy bool
}

// result is what a scenario observed.
type result struct {
	counts
	Faults map[string]int
	Finals int
}

// run runs the scenario's rounds: each drives the workload with faults on
// fresh tables, then checks its history and the storage invariants (many
// short histories keep porcupine's search small).
func (sc scenario) run(t *testing.T) result {
	t.Helper()
	total := result{Faults: map[string]int{}}
	for r := range max(sc.rounds, 1) {
		res := sc.round(t, fmt.Sprintf("rel%d", r))
		total.add(res.counts)
		total.Finals += res.Finals
		for k, v := range res.Faults {
			total.Faults[k] += v
		}
	}
	if sc.rounds > 1 {
		t.Logf("all %d rounds: %+v; faults: %v; final manifests: %d", sc.rounds, total.counts, total.Faults, total.Finals)
	}
	return total
}

func (sc scenario) round(t *testing.T, ns string) result {
	t.Helper()
	rc := newREST(sc.srv.rest)
	cat := setupCatalogIn(t, rc, sc.storeURI, ns, sc.tables)
	fl := newFlight(t, sc.srv.flight)
	h := newHistory()
	end := time.Now().Add(sc.duration)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	feed := startFeed([]string{sc.srv.rest})
	defer feed.stopAll()

	var wg sync.WaitGroup
	for i := range sc.clients {
		w := &worker{id: i, cat: cat, h: h, rest: rc, fl: fl, srv: sc.srv, rng: rand.New(rand.NewPCG(seed, uint64(i)))}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(end, 5000, sc.tables)
		}()
	}
	injected := map[string]int{}
	frng := rand.New(rand.NewPCG(seed, 99))
	for k := 0; k < 1000 && len(sc.faults) > 0; k++ {
		wait := sc.every/2 + time.Duration(frng.Int64N(int64(sc.every)))
		if time.Now().Add(wait).After(end.Add(-sc.every / 2)) {
			break
		}
		time.Sleep(wait)
		f := sc.faults[frng.IntN(len(sc.faults))]
		h.noteFault(f.name)
		f.inject(t, frng)
		injected[f.name]++
		sc.srv.mustReady(60 * time.Second)
	}
	wg.Wait()
	if sc.quiesce != nil {
		sc.quiesce(t)
	}
	sc.srv.mustReady(60 * time.Second)

	// A final read of every table closes the history.
	w := &worker{id: sc.clients, cat: cat, h: h, rest: rc, fl: fl, srv: sc.srv, rng: rand.New(rand.NewPCG(seed, 100))}
	for tb := range sc.tables {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		w.read(ctx, tb)
		cancel()
	}
	finals := checkStorage(t, cat, h, rc)
	checkFeed(t, feed, rc, sc.srv.rest, cat, h, sc.srv)
	checkLinearizable(t, h, sc.lossy)
	res := result{counts: h.counts(), Faults: injected, Finals: finals}
	t.Logf("history: %+v; faults: %v; final manifests: %d", res.counts, res.Faults, res.Finals)
	if res.OK == 0 {
		t.Fatalf("no create was acknowledged: the workload proved nothing")
	}
	return res
}

func checkLinearizable(t *testing.T, h *history, lossy bool) {
	t.Helper()
	h.mu.Lock()
	ops := settleUnknowns(h.ops, h.committed)
	h.mu.Unlock()
	limit := pick(120*time.Second, 10*time.Minute) // long rounds make long histories
	model := registerModel
	res, info := porcupine.CheckOperationsVerbose(model, ops, limit)
	if res == porcupine.Illegal && lossy {
		model = lossyModel
		if res, info = porcupine.CheckOperationsVerbose(model, ops, limit); res == porcupine.Ok {
			t.Logf("NOTE: not strictly linearizable, but linearizable once a rejection may be explained by a claim Redis lost (a known limit):\n%s", explain(registerModel, ops))
			return
		}
	}
	switch res {
	case porcupine.Ok:
	case porcupine.Illegal:
		f, err := os.CreateTemp("", "flightns-reliability-*.html")
		if err == nil {
			_ = porcupine.Visualize(model, info, f)
			_ = f.Close()
		}
		all := "(not written)"
		if g, err := os.CreateTemp("", "flightns-history-*.txt"); err == nil {
			_, _ = g.WriteString(describeOps(append([]porcupine.Operation(nil), ops...), len(ops)))
			_ = g.Close()
			all = g.Name()
		}
		t.Fatalf("history of %d operations is not linearizable (visualization: %s, every operation: %s)\n%s", len(ops), f.Name(), all, explain(model, ops))
	default:
		t.Fatalf("porcupine could not decide a history of %d operations in time", len(ops))
	}
}

// settleUnknowns decides the creates of unknown outcome from storage once
// the run is over (committed, from checkStorage): one whose manifests are
// all final happened, and stays open-ended but acknowledged; one with none
// never took effect and leaves the history (no reader can have seen it:
// reading a claimed version finishes its commit first, which makes its
// manifest final). porcupine then no longer branches on them: a cluster
// failover leaves dozens, and their every placement made the search
// exceed its time limit.
func settleUnknowns(ops []porcupine.Operation, committed map[int]bool) []porcupine.Operation {
	out := make([]porcupine.Operation, 0, len(ops))
	for _, op := range ops {
		in, o := op.Input.(opInput), op.Output.(opOutput)
		if in.Kind == opWrite && o.Result == resUnknown && committed != nil {
			if !committed[in.Op] {
				continue
			}
			o.Result = resOK
			op.Output = o
		}
		out = append(out, op)
	}
	return out
}

// explain projects the history on each table (a projection of a
// linearizable history is linearizable) and lists the operations of the
// first table whose projection is not, up to a bounded number, under the
// model that gave the verdict.
func explain(model porcupine.Model, ops []porcupine.Operation) string {
	for tb := range maxTables {
		var proj []porcupine.Operation
		for _, op := range ops {
			in, out := op.Input.(opInput), op.Output.(opOutput)
			for k, x := range in.Tables {
				if x != tb {
					continue
				}
				p := in
				p.Tables = []int{tb}
				if in.Kind == opWrite {
					p.Versions, p.Sizes = []int64{in.Versions[k]}, []int64{in.Sizes[k]}
				}
				if len(in.Tables) > 1 && out.Result == resRejected {
					// refused for another member, maybe: no effect here,
					// which an unknown outcome placed last allows
					out.Result = resUnknown
					op.Return = math.MaxInt64 - op.Return
				}
				op.Input, op.Output = p, out
				proj = append(proj, op)
			}
		}
		if len(proj) == 0 {
			continue
		}
		if porcupine.CheckOperationsTimeout(model, proj, 30*time.Second) == porcupine.Illegal {
			return fmt.Sprintf("table %d's projection is not linearizable either; its operations:\n%s", tb, describeOps(proj, 100000))
		}
	}
	// The shortest prefix (by call time) that is not linearizable: reads
	// still running at its end are dropped, creates become unknown.
	sorted := append([]porcupine.Operation(nil), ops...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
	prefix := func(n int) []porcupine.Operation {
		end := sorted[n-1].Call
		var out []porcupine.Operation
		for _, op := range sorted[:n] {
			if op.Return > end {
				if op.Input.(opInput).Kind == opRead {
					continue
				}
				o := op.Output.(opOutput)
				o.Result = resUnknown
				op.Output, op.Return = o, math.MaxInt64-op.Call
			}
			out = append(out, op)
		}
		return out
	}
	lo, hi := 1, len(sorted) // prefix(hi) is illegal
	for k := 0; k < 20 && lo < hi; k++ {
		mid := (lo + hi) / 2
		if porcupine.CheckOperationsTimeout(model, prefix(mid), 20*time.Second) == porcupine.Illegal {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	from := max(0, hi-60)
	return fmt.Sprintf("every table's projection is linearizable: the violation spans tables (a batch); the shortest illegal prefix has %d operations, its last 60:\n%s",
		hi, describeOps(sorted[from:hi], 60))
}

func describeOps(ops []porcupine.Operation, n int) string {
	sort.Slice(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	var sb strings.Builder
	for i, op := range ops {
		if i >= n {
			break
		}
		fmt.Fprintf(&sb, "  c%d [%d,%d] %s\n", op.ClientId, op.Call, op.Return, registerModel.DescribeOperation(op.Input, op.Output))
	}
	return sb.String()
}

// checkStorage checks the invariants in storage and returns the number of
// final manifests: every final holds the bytes of a writer that tried that
// version of that table (none overwritten by another); every acknowledged
// create's final holds its bytes; versions are contiguous from 1; every
// batch is in storage wholly or not at all; and the served head is the
// newest final manifest.
func checkStorage(t *testing.T, cat *catalog, h *history, rc *restClient) int {
	t.Helper()
	ctx := context.Background()
	h.mu.Lock()
	tries := append([]opInput(nil), h.tries...)
	outs := append([]int(nil), h.outs...)
	h.mu.Unlock()

	type tv = tableVersion
	owner := map[tv]int{}
	committed := map[int]bool{}
	total := 0
	for ti, key := range cat.keys {
		attrs, err := cat.store.ListAll(ctx, key+"/_versions/")
		if err != nil {
			t.Fatal(err)
		}
		var versions []int64
		for _, a := range attrs {
			name := path.Base(a.Key)
			if !strings.HasSuffix(name, ".manifest") {
				continue
			}
			inv, err := strconv.ParseUint(strings.TrimSuffix(name, ".manifest"), 10, 64)
			if err != nil {
				t.Errorf("unexpected final manifest %s", a.Key)
				continue
			}
			v := int64(math.MaxUint64 - inv)
			b, err := cat.store.Get(ctx, a.Key)
			if err != nil {
				t.Fatal(err)
			}
			var op, tab int
			var ver int64
			if _, err := fmt.Sscanf(string(b), "op=%d table=%d version=%d\n", &op, &tab, &ver); err != nil || tab != ti || ver != v || op >= len(tries) {
				t.Errorf("final manifest %s holds bytes no writer of that version wrote: %.80q", a.Key, b)
				continue
			}
			if !tried(tries[op], ti, v) || !bytesEqual(b, content(op, ti, v, sizeOf(tries[op], ti))) {
				t.Errorf("final manifest %s holds op %d's bytes, which never tried it (or are altered)", a.Key, op)
				continue
			}
			owner[tv{ti, v}] = op
			versions = append(versions, v)
			total++
		}
		sort.Slice(versions, func(i, j int) bool { return versions[i] < versions[j] })
		for i, v := range versions {
			if v != int64(i+1) {
				t.Errorf("table %d: final versions are not contiguous from 1: %v", ti, versions)
				break
			}
		}
		// The served head is the newest final manifest.
		var d describeReply
		r, err := rc.post(ctx, "/v1/table/"+strings.Join(cat.ids[ti], "$")+"/version/describe", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		head := int64(0)
		if r.Status == http.StatusOK {
			if err := json.Unmarshal(r.Body, &d); err != nil {
				t.Fatal(err)
			}
			head = d.get().Version
		} else if r.Code != 11 {
			t.Fatalf("describe table %d: HTTP %d %s", ti, r.Status, r.Body)
		}
		if want := int64(len(versions)); head != want {
			t.Errorf("table %d: served head %d, storage's newest final manifest %d", ti, head, want)
		}
	}
	for op, in := range tries {
		if in.Kind != opWrite || len(in.Versions) != len(in.Tables) {
			continue
		}
		mine := 0
		for k, ti := range in.Tables {
			if o, ok := owner[tv{ti, in.Versions[k]}]; ok && o == op {
				mine++
			}
		}
		if outs[op] == resOK && mine != len(in.Tables) {
			t.Errorf("acknowledged op %d (%s, tables %v versions %v) lost: %d of its manifests are final", op, in.Via, in.Tables, in.Versions, mine)
		}
		if outs[op] == -1 && mine != 0 {
			t.Errorf("op %d (%s) counted as never sent has %d final manifests", op, in.Via, mine)
		}
		if outs[op] == resRejected && mine != 0 {
			t.Errorf("rejected op %d (%s) has %d final manifests", op, in.Via, mine)
		}
		if mine != 0 && mine != len(in.Tables) {
			t.Errorf("transaction op %d (%s, tables %v versions %v) is partly committed: %d of %d", op, in.Via, in.Tables, in.Versions, mine, len(in.Tables))
		}
		if mine == len(in.Tables) {
			committed[op] = true
		}
	}
	h.mu.Lock()
	h.committed, h.owner = committed, owner
	h.mu.Unlock()
	return total
}

func tried(in opInput, table int, v int64) bool {
	for k, t := range in.Tables {
		if t == table && k < len(in.Versions) && in.Versions[k] == v {
			return true
		}
	}
	return false
}

func sizeOf(in opInput, table int) int64 {
	for k, t := range in.Tables {
		if t == table && k < len(in.Sizes) {
			return in.Sizes[k]
		}
	}
	return -1
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }
