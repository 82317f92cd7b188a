package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flightns/flightns/internal/threads"
)

// The change feed scenarios, end to end (feed-commits against the real
// flightns binary) in a short form (paced at 20 and
// 200 commits/s, with and without the linger; 0, 2 and 6 subscribers,
// two rounds of 300 ms): a row for each transport, rate and linger and
// for each subscriber count, with the fields
// the report promises, and every acknowledged version delivered to every
// subscriber (the scenarios fail the run otherwise, and say so in
// undelivered). Speed is what the scenarios report, not what this test
// asserts.
func TestFeedScenarios(t *testing.T) {
	rates, counts, samples := feedRates, feedSubscriberCounts, feedLatencyMinSamples
	feedRates, feedSubscriberCounts, feedLatencyMinSamples = []float64{20, 200}, []int{0, 2, 6}, 10
	defer func() { feedRates, feedSubscriberCounts, feedLatencyMinSamples = rates, counts, samples }()

	servingFlightns(t)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	rep, err := Run(ctx, Config{Scenarios: []string{feedLatencyName, feedCommitsName}, Clients: []int{2},
		Duration: 300 * time.Millisecond, Rounds: 2, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	t.Logf("progress:\n%s", progress.String())
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	rows := map[string]map[string]any{}
	for _, r := range back.Results {
		key := fmt.Sprint(r["scenario"], "/", r["backend"])
		if _, dup := rows[key]; dup {
			t.Errorf("%s: more than one row", key)
		}
		rows[key] = r
		if _, lost := r["undelivered"]; lost {
			t.Errorf("%s: undelivered %v", key, r["undelivered"])
		}
		if e, _ := r["errors"].(float64); e != 0 {
			t.Errorf("%s: %v failed commits", key, e)
		}
	}
	if want := 2*len(feedRates)*len(feedLingers) + len(feedSubscriberCounts) + 2; len(back.Results) != want {
		t.Errorf("%d rows, want %d", len(back.Results), want)
	}

	num := func(r map[string]any, field string) float64 { v, _ := r[field].(float64); return v }
	for _, name := range []string{"feed-latency:%.0f/s/%s", "feed-latency:%.0f/s:no-linger/%s"} {
		for _, rate := range feedRates {
			for _, transport := range []string{"flight", "sse"} {
				key := fmt.Sprintf(name, rate, transport)
				r, ok := rows[key]
				if !ok {
					t.Errorf("%s: missing", key)
					continue
				}
				// Every acknowledged version has a latency sample: ops is the
				// commits acknowledged at one subscriber.
				// Without the linger a subscriber may hear of a version before
				// its writer's reply arrives (the note counts those): only a
				// lingering row's latencies must be positive.
				lingers := !strings.Contains(name, "no-linger")
				if num(r, "ops") < 5 || num(r, "subscribers") != 2 || num(r, "ops_per_sec") <= 0 ||
					num(r, "p95_ms") < num(r, "p50_ms") || num(r, "p99_ms") < num(r, "p95_ms") || lingers && num(r, "p99_ms") <= 0 {
					t.Errorf("%s: %v", key, r)
				}
				target := num(r, "target_per_sec")
				if target != rate && !strings.Contains(fmt.Sprint(r["note"]), "NOT SUSTAINED") {
					t.Errorf("%s: paced at %.0f/s, asked for %.0f/s, and the note does not say why", key, target, rate)
				}
				if !strings.Contains(fmt.Sprint(r["note"]), "delivery latency to the "+transport+" subscriber") {
					t.Errorf("%s: note %q", key, r["note"])
				}
			}
		}
	}
	base := rows["feed-commits:0/file"]
	for _, n := range feedSubscriberCounts {
		key := fmt.Sprintf("feed-commits:%d/file", n)
		r, ok := rows[key]
		if !ok {
			t.Errorf("%s: missing", key)
			continue
		}
		if num(r, "ops") <= 0 || num(r, "clients") != 2 || int(num(r, "subscribers")) != n || num(r, "p50_ms") <= 0 || num(r, "server_cpu_ms_per_op") <= 0 {
			t.Errorf("%s: %v", key, r)
		}
		if want := num(r, "ops_per_sec") / num(base, "ops_per_sec"); r["ceiling"] != "feed-commits:0" || num(r, "ratio") < want*0.999 || num(r, "ratio") > want*1.001 {
			t.Errorf("%s: ceiling %v ratio %v, want feed-commits:0 and %.4f", key, r["ceiling"], r["ratio"], want)
		}
		if !strings.Contains(fmt.Sprint(r["note"]), "every acknowledged version reached every subscriber") ||
			!strings.Contains(fmt.Sprint(r["note"]), "2 alternating rounds") {
			t.Errorf("%s: note %q", key, r["note"])
		}
	}
	// Paced: one rate with and without the most subscribers, the ratio
	// the server's CPU per commit.
	none := rows["feed-commits:paced:0/file"]
	for _, n := range []int{0, feedSubscriberCounts[len(feedSubscriberCounts)-1]} {
		key := fmt.Sprintf("feed-commits:paced:%d/file", n)
		r, ok := rows[key]
		if !ok {
			t.Errorf("%s: missing", key)
			continue
		}
		if num(r, "ops") <= 0 || num(r, "target_per_sec") <= 0 || int(num(r, "subscribers")) != n || num(r, "server_cpu_ms_per_op") <= 0 ||
			r["ceiling"] != "feed-commits:paced:0" || num(r, "ratio") != num(r, "server_cpu_ms_per_op")/num(none, "server_cpu_ms_per_op") {
			t.Errorf("%s: %v", key, r)
		}
	}
	if !strings.Contains(progress.String(), "feed-commits:6") || !strings.Contains(progress.String(), "ratio=") {
		t.Errorf("progress does not show the ratios:\n%s", progress.String())
	}
}

// The check after each measurement fails on a version a subscriber never
// received (naming how many deliveries are missing and what ended its
// stream), on a version received twice and on one received after a gap,
// and passes when every subscriber has each version once.
func TestFeedCheckFailsOnALostOrRepeatedVersion(t *testing.T) {
	drain := feedDrainTimeout
	feedDrainTimeout = 50 * time.Millisecond
	defer func() { feedDrainTimeout = drain }()
	newSub := func(transport string) *subscriber {
		return &subscriber{transport: transport, tables: map[string]*received{}}
	}
	note := func(sub *subscriber, k versionKey, at time.Time) {
		sub.mu.Lock()
		sub.noteLocked(tableName(k.table), k.version, at)
		sub.mu.Unlock()
	}
	keys := []versionKey{{"bench$t0", 2}, {"bench$t1", 2}, {"bench$t0", 3}}
	now := time.Now()
	a, b := newSub("flight"), newSub("sse")
	for _, k := range keys {
		note(a, k, now)
		note(b, k, now)
	}
	ctx := context.Background()
	if err := waitDelivered(ctx, []*subscriber{a, b}, keys); err != nil {
		t.Fatalf("every version delivered once: %v", err)
	}

	c := newSub("sse")
	note(c, keys[0], now)
	c.err = fmt.Errorf("sse subscriber: the stream ended")
	err := waitDelivered(ctx, []*subscriber{a, c}, keys)
	if err == nil || !strings.Contains(err.Error(), "2 of 6 deliveries") || !strings.Contains(err.Error(), "the stream ended") {
		t.Fatalf("two versions missing at one subscriber: %v", err)
	}
	if n := undelivered([]*subscriber{a, c}, keys); n != 2 {
		t.Fatalf("undelivered = %d, want 2", n)
	}

	note(b, keys[1], now)
	if err := waitDelivered(ctx, []*subscriber{a, b}, keys); err == nil || !strings.Contains(err.Error(), "received 1 version(s) twice") {
		t.Fatalf("a version received twice: %v", err)
	}

	d := newSub("flight")
	for _, k := range []versionKey{keys[0], keys[1], {"bench$t0", 5}} {
		note(d, k, now)
	}
	if err := waitDelivered(ctx, []*subscriber{d}, keys); err == nil || !strings.Contains(err.Error(), "received version 5 of t0 after 2") {
		t.Fatalf("a version after a gap: %v", err)
	}
}

// feed-commits on tmpfs-split keeps the server's processes to half the
// CPUs and this process to the rest while it runs, says so in its rows,
// delivers every version to every subscriber, and gives this process all
// its CPUs back afterwards.
func TestFeedCommitsOnSplitCores(t *testing.T) {
	counts := feedSubscriberCounts
	feedSubscriberCounts = []int{0, 4}
	defer func() { feedSubscriberCounts = counts }()
	servingFlightns(t)
	before, err := threads.Mine()
	if err != nil {
		t.Fatal(err)
	}
	results := runScenario(t, Config{Scenarios: []string{feedCommitsName}, Backends: []string{"tmpfs-split"}, Clients: []int{2},
		Duration: 300 * time.Millisecond, Rounds: 1})
	if len(results) != len(feedSubscriberCounts)+2 {
		t.Fatalf("%d rows, want %d", len(results), len(feedSubscriberCounts)+2)
	}
	for _, r := range results {
		if r.Backend != "tmpfs-split" || r.Errors != 0 || r.Ops == 0 || !strings.Contains(r.Note, "kept to CPUs") {
			t.Errorf("%s: backend %s, %d ops, %d errors; note %q", r.Scenario, r.Backend, r.Ops, r.Errors, r.Note)
		}
	}
	after, err := threads.Mine()
	if err != nil || !slices.Equal(after, before) {
		t.Fatalf("after the run this thread may use CPUs %v (%v), before %v", after, err, before)
	}
}

// feed-commits' subscriber host runs under SCHED_IDLE, answers a wait
// once every subscriber has every version, fails one for a version that
// never came, and exits when its parent is done with it.
func TestTheSubscriberHostChecksEveryDelivery(t *testing.T) {
	drain := feedDrainTimeout
	feedDrainTimeout = time.Second
	defer func() { feedDrainTimeout = drain }()
	ctx := context.Background()
	s, err := startFeedServer(ctx, Config{}, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	h, err := s.subscribeApart(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	if a, err := unix.SchedGetAttr(h.pid(), 0); err != nil || a.Policy != unix.SCHED_IDLE {
		t.Errorf("the host's policy: %+v, %v; want SCHED_IDLE", a, err)
	}
	var keys []versionKey
	for c := range 3 {
		k, _, out := s.commit(ctx, c)
		if out != OK {
			t.Fatalf("commit %d: %v", c, out)
		}
		keys = append(keys, k)
	}
	if err := h.delivered(ctx, keys); err != nil {
		t.Fatalf("every version committed: %v", err)
	}
	never := versionKey{keys[0].table, keys[0].version + 1000}
	err = h.delivered(ctx, []versionKey{never})
	if err == nil || !strings.Contains(err.Error(), "2 of 2 deliveries of acknowledged versions missing") {
		t.Fatalf("a version never committed: %v", err)
	}
	h.close()
	select {
	case <-h.done:
	default:
		t.Fatal("the host has not exited")
	}
	if h.err != nil {
		t.Fatalf("the host exited with %v", h.err)
	}
}
