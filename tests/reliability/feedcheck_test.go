package reliability

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/flightns/flightns/api"
)

// errRecorder is a testing.TB that keeps what a checker reports.
type errRecorder struct {
	testing.TB
	errs []string
}

func (r *errRecorder) Helper()             {}
func (r *errRecorder) Logf(string, ...any) {}
func (r *errRecorder) Errorf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}

// holds reports whether one of errs holds want.
func holds(errs []string, want string) bool {
	for _, e := range errs {
		if strings.Contains(e, want) {
			return true
		}
	}
	return false
}

func versionEvent(seq uint64, n int, table string, v uint64, size int64) feedEvent {
	return feedEvent{CEID: fmt.Sprintf("%d-%d", seq, n), Event: api.Event{Seq: seq, Type: api.EventVersionCreated,
		ID: api.ID{"c", table}, Version: v, ManifestSize: size}}
}

// The feed's checkers are not vacuous: a stream that repeats a sequence
// after its id, a subscriber that missed an event, a history with an
// event of a version storage does not hold, two events of one version and
// none of a committed one are each reported.
func TestFeedCheckerCatchesViolations(t *testing.T) {
	t.Run("a sequence again after its id", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			ev := func(seq uint64, n int) string {
				return fmt.Sprintf("event: table.version.created\ndata: {\"id\":\"%d-%d\",\"data\":{\"seq\":%d,\"type\":\"table.version.created\",\"id\":[\"c\",\"t0\"],\"version\":%d}}\n\n", seq, n, seq, seq)
			}
			_, _ = fmt.Fprint(w, ev(5, 0)+ev(5, 1)+"id: 5\n\n"+ev(5, 1)+ev(6, 0)+"id: 6\n\n")
		}))
		defer srv.Close()
		var got []feedEvent
		var violations []string
		c := &feedConn{addr: strings.TrimPrefix(srv.URL, "http://"), after: 4, follow: false,
			onSeq:       func(evs []feedEvent, _ uint64) { got = append(got, evs...) },
			onViolation: func(v string) { violations = append(violations, v) }}
		through, err := c.run(t.Context())
		if err != nil || through != 6 || len(got) != 4 {
			t.Fatalf("run: through %d, %d events, %v", through, len(got), err)
		}
		if !holds(violations, "came again after the id 5") {
			t.Errorf("the duplicate of sequence 5 went unreported: %q", violations)
		}
	})
	t.Run("a cut inside a sequence", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = fmt.Fprint(w, "event: table.version.created\ndata: {\"id\":\"7-0\",\"data\":{\"seq\":7,\"type\":\"table.version.created\"}}\n\n")
		}))
		defer srv.Close()
		var got []feedEvent
		c := &feedConn{addr: strings.TrimPrefix(srv.URL, "http://"), after: 6, follow: true,
			onSeq:       func(evs []feedEvent, _ uint64) { got = append(got, evs...) },
			onViolation: func(v string) { t.Errorf("violation: %s", v) }}
		through, _ := c.run(t.Context())
		if through != 6 || len(got) != 0 {
			t.Errorf("a sequence cut before its id was kept: through %d, events %v", through, got)
		}
	})
	t.Run("a missed event", func(t *testing.T) {
		want := []feedEvent{versionEvent(1, 0, "t0", 1, 64), versionEvent(2, 0, "t0", 2, 65), versionEvent(3, 0, "t0", 3, 66)}
		r := &errRecorder{TB: t}
		compareDelivered(r, "s", []feedEvent{want[0], want[2]}, 3, want, 3)
		if !holds(r.errs, "is seq 3") {
			t.Errorf("a missed event went unreported: %q", r.errs)
		}
		r = &errRecorder{TB: t}
		compareDelivered(r, "s", want, 3, want[:2], 2)
		if len(r.errs) != 0 {
			t.Errorf("a subscriber past the final read was compared beyond it: %q", r.errs)
		}
	})
	t.Run("events of changes that did not commit, and a committed one without", func(t *testing.T) {
		cat := &catalog{ns: "c", ids: [][]string{{"c", "t0"}}}
		h := newHistory()
		// op 0 committed v1 (size 64), op 1 tried v2 and lost (size 65),
		// op 2 committed v2 (size 66), op 3 committed v3 (size 67).
		for op, v := range []int64{1, 2, 2, 3} {
			in := opInput{Kind: opWrite, Tables: []int{0}, Versions: []int64{v}, Sizes: []int64{int64(64 + op)}}
			id := h.newOp(in)
			h.record(0, id, in, h.now(), opOutput{Result: []int{resOK, resRejected, resOK, resOK}[op]})
		}
		h.committed = map[int]bool{0: true, 2: true, 3: true}
		h.owner = map[tableVersion]int{{0, 1}: 0, {0, 2}: 2, {0, 3}: 3}
		events := []feedEvent{
			{CEID: "1-0", Event: api.Event{Seq: 1, Type: api.EventNamespaceCreated, ID: api.ID{"c"}}},
			{CEID: "2-0", Event: api.Event{Seq: 2, Type: api.EventTableDeclared, ID: api.ID{"c", "t0"}}},
			versionEvent(3, 0, "t0", 1, 64),
			versionEvent(4, 0, "t0", 1, 64),
			versionEvent(5, 0, "t0", 2, 65),
			versionEvent(6, 0, "t0", 9, 70),
			{CEID: "7-0", Event: api.Event{Seq: 7, Type: api.EventNamespaceCreated, ID: api.ID{"c-end"}}},
		}
		r := &errRecorder{TB: t}
		checkHistory(r, events, cat, h, "notes", "c-end")
		for _, want := range []string{
			"2 events of table 0 version 1",
			"op 2 committed it with manifest size 66",
			"v9 size 70, a version storage does not hold",
			"no event of table 0 version 3",
		} {
			if !holds(r.errs, want) {
				t.Errorf("not reported: %q; reported: %q", want, r.errs)
			}
		}
		if len(r.errs) != 5 { // and the summary of missing events
			t.Errorf("reported %d errors, want 5: %q", len(r.errs), r.errs)
		}
	})
}
