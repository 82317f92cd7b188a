package reliability

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/testutil/redistest"
	"github.com/flightns/flightns/internal/testutil/ssetest"
)

// The change feed under faults: subscribers follow `GET /v1/changes`
// (Server-Sent Events) while the workload runs and faults are injected,
// reconnect after every cut (to the next replica, where there are
// several) and resume after the last sequence the feed said it had been
// read through (Last-Event-ID). What they received is then checked
// against a final read of the whole history (follow=false) and against
// what the workload saw acknowledged, and what storage holds, by
// checkFeed.

// feedEvent is one event as a subscriber received it: its CloudEvents id
// (<sequence>-<index in the sequence>) and the event.
type feedEvent struct {
	CEID string
	api.Event
}

// String names the event for a report.
func (e feedEvent) String() string {
	s := fmt.Sprintf("seq %d %s %s", e.Seq, e.Type, e.ID)
	if e.Type == api.EventVersionCreated {
		s += fmt.Sprintf(" v%d size %d", e.Version, e.ManifestSize)
	}
	if e.TxnID != "" {
		s += " txn " + e.TxnID
	}
	return s
}

// same reports whether two deliveries are the same event.
func (e feedEvent) same(o feedEvent) bool {
	return e.CEID == o.CEID && e.Seq == o.Seq && e.Type == o.Type && e.ID.Equal(o.ID) &&
		e.Version == o.Version && e.ManifestPath == o.ManifestPath && e.ManifestSize == o.ManifestSize &&
		e.TxnID == o.TxnID && e.Location == o.Location
}

// feedConn is one connection to the change feed after a sequence: the
// events of each sequence are held until the id message that follows
// them, and handed on, with it, to onSeq; a cut inside a sequence drops
// its events (they come again after a resume).
type feedConn struct {
	addr   string
	after  uint64
	follow bool
	// onSeq gets the events of a sequence (or of several; none when the
	// feed moved on over sequences without events) and the id after them.
	onSeq func(events []feedEvent, through uint64)
	// onViolation gets what the stream did that the feed must not do.
	onViolation func(string)
}

// feedError is an `event: error` of the feed, its last message.
type feedError struct {
	Message string `json:"error"`
	Code    int    `json:"code"`
}

func (e *feedError) Error() string {
	return fmt.Sprintf("the feed failed with code %d: %s", e.Code, e.Message)
}

// feedHTTP streams the feed: no overall timeout, a bounded dial and wait
// for headers.
var feedHTTP = &http.Client{Transport: &http.Transport{
	DialContext:           (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
	ResponseHeaderTimeout: 10 * time.Second,
	MaxIdleConnsPerHost:   8,
}}

// run reads the stream until it ends (nil with follow=false and the
// history sent), fails or ctx ends. It returns the last id received.
func (c *feedConn) run(ctx context.Context) (uint64, error) {
	q := "?follow=" + strconv.FormatBool(c.follow)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.addr+"/v1/changes"+q, nil)
	if err != nil {
		return c.after, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", strconv.FormatUint(c.after, 10))
	resp, err := feedHTTP.Do(req)
	if err != nil {
		return c.after, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		sc := bufio.NewScanner(resp.Body)
		sc.Scan()
		return c.after, fmt.Errorf("HTTP %d %s", resp.StatusCode, sc.Text())
	}
	through := c.after
	var pending []feedEvent
	var failed error
	err = ssetest.Read(resp.Body, func(m ssetest.Message) error {
		switch {
		case m.Event == "error":
			fe := &feedError{}
			if err := json.Unmarshal([]byte(m.Data), fe); err != nil {
				fe.Message = m.Data
			}
			failed = fe
			return fe
		case m.ID != "":
			n, err := strconv.ParseUint(m.ID, 10, 64)
			if err != nil {
				c.onViolation(fmt.Sprintf("an id message %q is not a sequence", m.ID))
				return err
			}
			if n <= through {
				c.onViolation(fmt.Sprintf("the id %d follows the id %d (ids must increase)", n, through))
			}
			for _, ev := range pending {
				if ev.Seq > n {
					c.onViolation(fmt.Sprintf("%s came before the id %d", ev, n))
				}
			}
			c.onSeq(pending, n)
			pending, through = nil, n
			return nil
		default:
			var ce struct {
				ID   string    `json:"id"`
				Data api.Event `json:"data"`
			}
			if err := json.Unmarshal([]byte(m.Data), &ce); err != nil {
				c.onViolation(fmt.Sprintf("an event that is not CloudEvents JSON: %v: %.200s", err, m.Data))
				return err
			}
			ev := feedEvent{CEID: ce.ID, Event: ce.Data}
			if ev.Seq <= through {
				c.onViolation(fmt.Sprintf("%s came again after the id %d (resumed after %d): a duplicate", ev, through, c.after))
			}
			if k := len(pending); k > 0 && ev.Seq < pending[k-1].Seq {
				c.onViolation(fmt.Sprintf("%s came after %s: out of sequence order", ev, pending[k-1]))
			}
			if !strings.HasPrefix(ev.CEID, strconv.FormatUint(ev.Seq, 10)+"-") || ev.Type != m.Event {
				c.onViolation(fmt.Sprintf("%s has the CloudEvents id %q and the event name %q", ev, ev.CEID, m.Event))
			}
			pending = append(pending, ev)
			return nil
		}
	})
	if failed != nil {
		return through, failed
	}
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return through, err
}

// subscriber follows the feed from a sequence through a run, across every
// cut, and keeps what it received.
type subscriber struct {
	name  string
	addrs []string // the replicas, tried in turn from home
	home  int
	// hop: unless 0, the subscriber also cuts its own connection after a
	// random stretch of up to hop (and moves to the next replica), so that
	// it resumes far more often than the faults make it.
	hop time.Duration

	mu         sync.Mutex
	events     []feedEvent
	through    uint64
	conns      int
	failures   map[string]int // why a connection ended, by kind
	violations []string
	advanced   chan struct{} // closed, and replaced, when through moves

	stop context.CancelFunc
	done chan struct{}
}

// startSubscriber starts following the feed of addrs (REST listeners of
// one catalog) after sequence after, first at addrs[home].
func startSubscriber(name string, addrs []string, home int, hop time.Duration, after uint64) *subscriber {
	ctx, stop := context.WithCancel(context.Background())
	s := &subscriber{name: name, addrs: addrs, home: home, hop: hop, through: after, failures: map[string]int{},
		advanced: make(chan struct{}), stop: stop, done: make(chan struct{})}
	go s.follow(ctx)
	return s
}

func (s *subscriber) follow(ctx context.Context) {
	defer close(s.done)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(s.home)))
	r := s.home
	for ctx.Err() == nil {
		s.mu.Lock()
		after := s.through
		s.conns++
		s.mu.Unlock()
		cctx, cancel := context.WithCancel(ctx)
		var cut atomic.Bool
		stopTimer := func() bool { return false }
		if s.hop > 0 {
			stopTimer = time.AfterFunc(time.Duration(rng.Int64N(int64(s.hop))), func() {
				cut.Store(true)
				cancel()
			}).Stop
		}
		c := &feedConn{addr: s.addrs[r], after: after, follow: true, onSeq: s.received, onViolation: s.violation}
		_, err := c.run(cctx)
		stopTimer()
		cancel()
		hopped := cut.Load()
		if ctx.Err() != nil {
			return
		}
		kind := "ended"
		var fe *feedError
		switch {
		case hopped:
			kind = "cut by the subscriber"
		case errors.As(err, &fe):
			kind = fmt.Sprintf("error event (code %d)", fe.Code)
			if fe.Code == 13 { // InvalidInput: history no longer kept, or the request refused
				s.violation(fmt.Sprintf("resuming after %d at %s: %v", after, s.addrs[r], fe))
			}
		case err != nil && strings.HasPrefix(err.Error(), "HTTP "):
			kind = err.Error()[:8]
		case err != nil:
			kind = "transport error"
		}
		s.mu.Lock()
		s.failures[kind]++
		s.mu.Unlock()
		r = (r + 1) % len(s.addrs) // another replica, if there are several
		if !hopped {
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(20+rng.IntN(80)) * time.Millisecond):
			}
		}
	}
}

func (s *subscriber) received(events []feedEvent, through uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, events...)
	s.through = through
	close(s.advanced)
	s.advanced = make(chan struct{})
}

func (s *subscriber) violation(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.violations = append(s.violations, v)
}

// waitThrough waits, bounded, until the subscriber has received the feed
// through seq; it reports whether it did.
func (s *subscriber) waitThrough(seq uint64, limit time.Duration) bool {
	deadline := time.After(limit)
	for {
		s.mu.Lock()
		through, advanced := s.through, s.advanced
		s.mu.Unlock()
		if through >= seq {
			return true
		}
		select {
		case <-advanced:
		case <-deadline:
			return false
		}
	}
}

// close stops following and waits until the subscriber has stopped.
func (s *subscriber) close() {
	s.stop()
	<-s.done
}

// readFeed reads the whole history after after from addr with
// follow=false, in one connection (retried from the start while it fails,
// for up to limit), and returns its events and the id it ends at.
func readFeed(addr string, after uint64, limit time.Duration) ([]feedEvent, uint64, []string, error) {
	deadline := time.Now().Add(limit)
	for {
		var events []feedEvent
		var violations []string
		c := &feedConn{addr: addr, after: after, follow: false,
			onSeq:       func(evs []feedEvent, _ uint64) { events = append(events, evs...) },
			onViolation: func(v string) { violations = append(violations, v) }}
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		through, err := c.run(ctx)
		cancel()
		if err == nil {
			return events, through, violations, nil
		}
		if time.Now().After(deadline) {
			return nil, 0, nil, fmt.Errorf("reading the feed's history from %s: %w", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// feedRun is the subscribers of one round of a workload.
type feedRun struct {
	subs []*subscriber
}

// startFeed starts the subscribers of a round at the REST listeners
// addrs, all from sequence 0: one that only reconnects when a fault cuts
// it, one that also cuts itself every second or so (moving to the next
// replica) and, in the long form, one that cuts itself every 100 ms or so,
// often inside a sequence's events.
func startFeed(addrs []string) *feedRun {
	f := &feedRun{subs: []*subscriber{
		startSubscriber("steady", addrs, 0, 0, 0),
		startSubscriber("hopping", addrs, min(1, len(addrs)-1), time.Second, 0),
	}}
	if *long {
		f.subs = append(f.subs, startSubscriber("rapid", addrs, min(2, len(addrs)-1), 200*time.Millisecond, 0))
	}
	return f
}

// stopAll stops every subscriber (also when a check fails early).
func (f *feedRun) stopAll() {
	for _, s := range f.subs {
		s.close()
	}
}

// tableVersion is a version of one of the workload's tables.
type tableVersion struct {
	t int
	v int64
}

// barrier creates namespace ns through rc and waits until the feed's
// history at addr holds its event, which returns: a catalog mutation is
// acknowledged once the segment holding it is durable, so the history
// then holds every change made before it (table versions are written to
// the commit log by their claim, before their acknowledgement). It
// returns the history read, the sequence it ends at and the barrier's.
func barrier(t *testing.T, rc *restClient, addr, ns string) (events []feedEvent, through, at uint64) {
	t.Helper()
	rc.must(t, "/v1/namespace/"+ns+"/create", map[string]any{"mode": "ExistOk"}, nil)
	deadline := time.Now().Add(30 * time.Second)
	for {
		events, through, violations, err := readFeed(addr, 0, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range violations {
			t.Errorf("the final read of the feed (follow=false): %s", v)
		}
		for _, ev := range events {
			if ev.Type == api.EventNamespaceCreated && ev.ID.Equal(api.ID{ns}) {
				return events, through, ev.Seq
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the feed's history at %s (through %d, %d events) has no event of the namespace %s created 30 s ago", addr, through, len(events), ns)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkFeed stops the subscribers once they have received the feed through
// a barrier made after the workload and checks what they received:
//
//   - each got the final history (a read of the whole feed with
//     follow=false) exactly, event for event, through the sequence it
//     reached: no gap, no duplicate, in sequence order, across every
//     reconnect;
//   - the history holds exactly one event for each namespace and table the
//     round created and for each table version committed (every
//     acknowledged create, and every create of unknown outcome whose
//     manifests storage holds), with that writer's manifest size, a
//     batch's events in one sequence under one transaction id; and none for
//     a version storage does not hold or another writer's: no event of a
//     change that did not commit.
//
// It runs after checkStorage, which decides the committed creates.
// The servers' logs of gaps in the commit log go into the report of a
// missing event.
func checkFeed(t *testing.T, f *feedRun, rc *restClient, addr string, cat *catalog, h *history, srvs ...*server) {
	t.Helper()
	defer f.stopAll()
	final, through, at := barrier(t, rc, addr, cat.ns+"-end")
	for _, s := range f.subs {
		if !s.waitThrough(at, 30*time.Second) {
			s.mu.Lock()
			t.Errorf("subscriber %s: received the feed through %d, not through the barrier %d, 30 s after it (connections %d, ended: %v)",
				s.name, s.through, at, s.conns, s.failures)
			s.mu.Unlock()
		}
	}
	f.stopAll()
	for _, s := range f.subs {
		s.mu.Lock()
		t.Logf("feed subscriber %s: %d events through sequence %d over %d connections (ended: %v)", s.name, len(s.events), s.through, s.conns, s.failures)
		for _, v := range s.violations {
			t.Errorf("subscriber %s: %s", s.name, v)
		}
		compareDelivered(t, s.name, s.events, s.through, final, through)
		s.mu.Unlock()
	}
	checkHistory(t, final, cat, h, gapsLogged(srvs...), cat.ns+"-end")
}

// gapsLogged is what the servers logged of gaps in the commit log (the
// sequences a loss of Redis took before a segment held them) and of
// their recoveries.
func gapsLogged(srvs ...*server) string {
	var gaps []string
	for i, s := range srvs {
		for line := range strings.SplitSeq(s.Log(), "\n") {
			if strings.Contains(line, "commit log has a gap") || strings.Contains(line, "redisclaim: recovery") || strings.Contains(line, "has no epoch") {
				gaps = append(gaps, fmt.Sprintf("server %d: %s", i, line))
			}
		}
	}
	if len(gaps) == 0 {
		return "no gap in the commit log logged (by the last start of each server)"
	}
	return strings.Join(gaps, "\n")
}

// compareDelivered checks that got (received through gotThrough) is the
// final history want (through wantThrough) up to gotThrough.
func compareDelivered(t testing.TB, name string, got []feedEvent, gotThrough uint64, want []feedEvent, wantThrough uint64) {
	t.Helper()
	if gotThrough > wantThrough {
		// The subscriber went further than the final read: compare the
		// final read's stretch.
		i := 0
		for i < len(got) && got[i].Seq <= wantThrough {
			i++
		}
		got = got[:i]
	} else {
		i := 0
		for i < len(want) && want[i].Seq <= gotThrough {
			i++
		}
		want = want[:i]
	}
	for i := 0; i < max(len(got), len(want)); i++ {
		switch {
		case i >= len(got):
			t.Errorf("subscriber %s: missed %d events of the history, from %s (a gap)", name, len(want)-i, want[i])
			return
		case i >= len(want):
			t.Errorf("subscriber %s: got %d events the history does not have, from %s", name, len(got)-i, got[i])
			return
		case !got[i].same(want[i]):
			t.Errorf("subscriber %s: its event %d is %s, the history's %s (the one before: %s)", name, i, got[i], want[i], before(want, i))
			return
		}
	}
}

func before(evs []feedEvent, i int) string {
	if i == 0 {
		return "none"
	}
	return evs[i-1].String()
}

// checkHistory checks the final history against the round's catalog, the
// workload's history and storage (checkStorage's owners).
// Namespaces named barriers may hold one namespace.created event each.
// A missing event's report ends with notes.
func checkHistory(t testing.TB, events []feedEvent, cat *catalog, h *history, notes string, barriers ...string) {
	t.Helper()
	h.mu.Lock()
	tries, outs, committed, owner := h.tries, h.outs, h.committed, h.owner
	faults := slices.Clone(h.faults)
	h.mu.Unlock()

	tableOf := map[string]int{}
	for i, id := range cat.ids {
		tableOf[api.ID(id).String()] = i
	}
	var nsCreated []feedEvent
	ends := map[string][]feedEvent{}
	declared := map[int][]feedEvent{}
	versions := map[tableVersion][]feedEvent{}
	var last uint64
	lost := map[uint64]bool{} // the first sequences of stretches the log lost
	for i, ev := range events {
		if ev.Seq < last {
			t.Errorf("the history's event %d, %s, follows sequence %d", i, ev, last)
		}
		last = ev.Seq
		if ev.Type == api.EventSequencesLost {
			if ev.LostThrough < ev.Seq || len(ev.ID) > 0 {
				t.Errorf("the history's event %d, %s, is no lost stretch", i, ev)
			}
			lost[ev.Seq] = true
			continue
		}
		if len(ev.ID) == 1 && slices.Contains(barriers, ev.ID[0]) {
			ends[ev.ID[0]] = append(ends[ev.ID[0]], ev)
		}
		if len(ev.ID) == 0 || ev.ID[0] != cat.ns {
			continue
		}
		ti, isTable := tableOf[ev.ID.String()]
		switch {
		case ev.Type == api.EventNamespaceCreated && len(ev.ID) == 1:
			nsCreated = append(nsCreated, ev)
		case ev.Type == api.EventTableDeclared && isTable:
			declared[ti] = append(declared[ti], ev)
		case ev.Type == api.EventVersionCreated && isTable && ev.Branch == "":
			versions[tableVersion{ti, int64(ev.Version)}] = append(versions[tableVersion{ti, int64(ev.Version)}], ev)
		default:
			t.Errorf("the history holds %s: a change the workload never made", ev)
		}
	}
	if len(nsCreated) != 1 {
		t.Errorf("the history holds %d events of the namespace %s created, want one: %v", len(nsCreated), cat.ns, nsCreated)
	}
	for _, b := range barriers {
		if len(ends[b]) != 1 {
			t.Errorf("the history holds %d events of the namespace %s created, want one: %v", len(ends[b]), b, ends[b])
		}
	}
	for i := range cat.ids {
		if len(declared[i]) != 1 {
			t.Errorf("the history holds %d events of table %d declared, want one: %v", len(declared[i]), i, declared[i])
		}
	}
	// No event of a version storage does not hold, or of another writer's.
	for tv, evs := range versions {
		if len(evs) != 1 {
			t.Errorf("the history holds %d events of table %d version %d, want one: %v", len(evs), tv.t, tv.v, evs)
		}
		op, ok := owner[tv]
		if !ok {
			t.Errorf("the history holds %s, a version storage does not hold: a change that did not commit%s", evs[0], triedBy(tries, outs, tv, evs[0].ManifestSize))
			continue
		}
		if want := sizeOf(tries[op], tv.t); evs[0].ManifestSize != want {
			t.Errorf("the history holds %s, but op %d committed it with manifest size %d: an event of a writer that did not commit%s", evs[0], op, want, triedBy(tries, outs, tv, evs[0].ManifestSize))
		}
	}
	// One event for every version committed; a batch's in one sequence.
	missing, split := 0, 0
	for op, in := range tries {
		if in.Kind != opWrite || !committed[op] {
			continue
		}
		var seqs []uint64
		var txns []string
		for k, ti := range in.Tables {
			evs := versions[tableVersion{ti, in.Versions[k]}]
			if len(evs) == 0 {
				missing++
				if missing <= 20 {
					t.Errorf("no event of table %d version %d, committed by op %d (%s, %s, call %v): an acknowledged change missing from the feed; around it: %s; faults: %s",
						ti, in.Versions[k], op, in.Via, outcome(outs[op]), opCall(h, op), neighbours(events, cat, ti, in.Versions[k]), faultTimes(faults))
				}
				continue
			}
			seqs = append(seqs, evs[0].Seq)
			txns = append(txns, evs[0].TxnID)
		}
		if len(in.Tables) > 1 && len(seqs) == len(in.Tables) {
			// A batch whose log entries Redis lost before they were
			// durable is re-derived from storage, as events of the lost
			// stretch's first sequence (catalog.sequences.lost): its
			// transaction id went with the entries.
			rederived := lost[seqs[0]] && txns[0] == ""
			if slices.Min(seqs) != slices.Max(seqs) || txns[0] == "" && !rederived || slices.Min(txns) != slices.Max(txns) {
				t.Errorf("op %d (%s, %s, call %v), a batch of tables %v versions %v, has events at sequences %v with transaction ids %q, want one sequence and one id; faults: %s",
					op, in.Via, outcome(outs[op]), opCall(h, op), in.Tables, in.Versions, seqs, txns, faultTimes(faults))
				split++
			}
		}
	}
	if missing > 20 {
		t.Errorf("… %d committed versions without an event in all", missing)
	}
	if missing > 0 {
		t.Errorf("%d committed versions have no event; the servers logged:\n%s", missing, notes)
	}
	if split > 0 {
		t.Errorf("%d batches have events apart; the servers logged:\n%s", split, notes)
	}
	t.Logf("feed history: %d events through sequence %d; %d events of the round's versions", len(events), last, len(versions))
}

// triedBy names the ops that tried a version with a manifest size.
func triedBy(tries []opInput, outs []int, tv tableVersion, size int64) string {
	var s []string
	for op, in := range tries {
		if tried(in, tv.t, tv.v) && sizeOf(in, tv.t) == size {
			s = append(s, fmt.Sprintf("op %d (%s, %s)", op, in.Via, outcome(outs[op])))
		}
	}
	if len(s) == 0 {
		return " (no op tried it)"
	}
	return "; tried by " + strings.Join(s, ", ")
}

func outcome(r int) string {
	switch r {
	case resOK:
		return "acknowledged"
	case resRejected:
		return "rejected"
	case resUnknown:
		return "unknown outcome"
	}
	return "never sent"
}

// opCall is when an op was called (since the history's start).
func opCall(h *history, op int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, o := range h.ops {
		if in := o.Input.(opInput); in.Kind == opWrite && in.Op == op {
			return time.Duration(o.Call).Round(time.Millisecond).String()
		}
	}
	return "?"
}

// neighbours lists the history's events of table ti around version v.
func neighbours(events []feedEvent, cat *catalog, ti int, v int64) string {
	var s []string
	for _, ev := range events {
		if ev.Type == api.EventVersionCreated && ev.ID.Equal(api.ID(cat.ids[ti])) && int64(ev.Version) >= v-2 && int64(ev.Version) <= v+2 {
			s = append(s, ev.String())
		}
	}
	if len(s) == 0 {
		return "no event of versions v-2..v+2"
	}
	return strings.Join(s, "; ")
}

func faultTimes(fs []faultAt) string {
	var s []string
	for _, f := range fs {
		s = append(s, fmt.Sprintf("%s at %v", f.name, f.at.Round(time.Millisecond)))
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// after returns the events of evs after sequence seq.
func eventsAfter(evs []feedEvent, seq uint64) []feedEvent {
	i := 0
	for i < len(evs) && evs[i].Seq <= seq {
		i++
	}
	return evs[i:]
}

// The feed resumes across the loss of Redis: its history comes back from
// the __manifest segments in storage. A subscriber follows from sequence
// 0 throughout; after a stretch of commits the feed has been read through
// sequence N (a barrier); Redis is then flushed (FLUSHALL), later killed
// and restarted without persistence, with commits after each (and a
// barrier before each loss, so that no commit is in flight). Then a
// subscriber resuming after N (following, and with follow=false) gets
// exactly what the first one got after N, a read from 0 gets all it got,
// and the history holds every committed version once.
func TestFeedResumesAcrossRedisLoss(t *testing.T) {
	r := redistest.Start(t) // persistence none
	root := fileRoot(t)
	srv := startServer(t, nil, "--redis", r.URL(), "--root", root)
	rc := newREST(srv.rest)
	cat := setupCatalogIn(t, rc, root, "loss", 2)
	h := newHistory()
	steady := startSubscriber("steady", []string{srv.rest}, 0, 0, 0)
	defer steady.close()
	w := &worker{id: 0, cat: cat, h: h, rest: rc, srv: srv, restOnly: true, rng: rand.New(rand.NewPCG(1, 2))}
	commits := func(n int) {
		for range n {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			tb := w.rng.IntN(len(cat.ids))
			w.read(ctx, tb)
			if w.rng.IntN(3) == 0 {
				w.create(ctx, []int{0, 1})
			} else {
				w.create(ctx, []int{tb})
			}
			cancel()
		}
	}
	commits(pick(20, 200))
	_, _, n := barrier(t, rc, srv.rest, "loss-before-flush")
	if !steady.waitThrough(n, 30*time.Second) {
		t.Fatalf("the subscriber did not receive the feed through %d within 30 s", n)
	}
	t.Logf("the feed has been read through sequence %d; FLUSHALL", n)
	h.noteFault("redis FLUSHALL")
	r.FlushAll()
	srv.mustReady(60 * time.Second)
	commits(pick(20, 200))
	// A barrier before the kill: what this test checks is the resume,
	// not the commits of the moment Redis is lost (the scenarios do).
	barrier(t, rc, srv.rest, "loss-before-kill")
	h.noteFault("redis kill -9 + restart (no persistence)")
	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	r.Restart()
	srv.mustReady(60 * time.Second)
	commits(pick(20, 200))
	srv.mustReady(60 * time.Second)
	for tb := range cat.ids {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		w.read(ctx, tb)
		cancel()
	}

	resumed := startSubscriber("resumed after "+strconv.FormatUint(n, 10), []string{srv.rest}, 0, 0, n)
	defer resumed.close()
	checkStorage(t, cat, h, rc)
	final, through, end := barrier(t, rc, srv.rest, "loss-end")
	for _, s := range []*subscriber{steady, resumed} {
		if !s.waitThrough(end, 30*time.Second) {
			t.Fatalf("subscriber %s did not receive the feed through the barrier %d within 30 s", s.name, end)
		}
		s.close()
	}
	rest, restThrough, violations, err := readFeed(srv.rest, n, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range append(append(violations, steady.violations...), resumed.violations...) {
		t.Errorf("the feed: %s", v)
	}
	t.Logf("steady: %d events through %d over %d connections (%v); resumed after %d: %d events through %d over %d connections; the history: %d events through %d",
		len(steady.events), steady.through, steady.conns, steady.failures, n, len(resumed.events), resumed.through, resumed.conns, len(final), through)
	// What the steady subscriber got after N, the resumed ones got too.
	compareDelivered(t, "resumed after N (following)", resumed.events, resumed.through, eventsAfter(steady.events, n), steady.through)
	compareDelivered(t, "resumed after N (follow=false)", rest, restThrough, eventsAfter(steady.events, n), steady.through)
	// The history from 0 is what the steady subscriber got.
	compareDelivered(t, "steady", steady.events, steady.through, final, through)
	checkHistory(t, final, cat, h, gapsLogged(srv), "loss-before-flush", "loss-before-kill", "loss-end")
	if c := h.counts(); c.OK == 0 {
		t.Fatalf("no create was acknowledged: the test proved nothing")
	}
}

// A table version acknowledged just before Redis loses its state has its
// event: its manifest is final (the commit point) before the commit log's
// entry is in a segment (table version rows linger up to
// manifesttable.Config.VersionLinger), so a FLUSHALL right after the
// acknowledgement takes the entry, and the materializer re-derives the
// version's row from storage (rederiveGap) — its event too, or the feed
// misses an acknowledged change.
func TestFeedHoldsVersionsAcknowledgedJustBeforeRedisLoss(t *testing.T) {
	r := redistest.Start(t)
	root := fileRoot(t)
	srv := startServer(t, nil, "--redis", r.URL(), "--root", root)
	rc := newREST(srv.rest)
	cat := setupCatalogIn(t, rc, root, "justbefore", 1)
	h := newHistory()
	w := &worker{id: 0, cat: cat, h: h, rest: rc, srv: srv, restOnly: true, rng: rand.New(rand.NewPCG(3, 4))}
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		w.read(ctx, 0)
		w.create(ctx, []int{0})
		cancel()
		h.noteFault("redis FLUSHALL right after an acknowledgement")
		r.FlushAll()
		srv.mustReady(60 * time.Second)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	w.read(ctx, 0)
	cancel()
	checkStorage(t, cat, h, rc)
	if c := h.counts(); c.OK == 0 {
		t.Fatalf("no create was acknowledged: the test proved nothing")
	}
	final, _, _ := barrier(t, rc, srv.rest, "justbefore-end")
	checkHistory(t, final, cat, h, gapsLogged(srv), "justbefore-end")
}
