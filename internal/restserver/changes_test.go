package restserver

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flightns/flightns/api"
)

// sseMessage is one Server-Sent Events message.
type sseMessage struct {
	event, id, data string
}

// subscribe opens the change feed with the given Last-Event-ID ("" for
// none) and query, and returns its messages as they come.
func (s *server) subscribe(ctx context.Context, lastID, query string) <-chan sseMessage {
	s.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url()+ChangesPath+query, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req) //nolint:bodyclose // the reading goroutine closes it
	if err != nil {
		s.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		s.t.Fatalf("the change feed answered %s (%s)", resp.Status, resp.Header.Get("Content-Type"))
	}
	out := make(chan sseMessage, 1024)
	go func() {
		defer func() { _ = resp.Body.Close() }()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var m sseMessage
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				out <- m
				m = sseMessage{}
			case strings.HasPrefix(line, "event: "):
				m.event = line[len("event: "):]
			case strings.HasPrefix(line, "id: "):
				m.id = line[len("id: "):]
			case strings.HasPrefix(line, "data: "):
				m.data = line[len("data: "):]
			}
		}
	}()
	return out
}

// next reads messages until one carries an event, and returns it with
// the last id seen.
func next(t *testing.T, ch <-chan sseMessage, lastID *string) cloudEvent {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case m, ok := <-ch:
			if !ok {
				t.Fatalf("the change feed ended (last id %s)", *lastID)
			}
			if m.id != "" {
				*lastID = m.id
			}
			if m.data == "" {
				continue
			}
			if m.event == "error" {
				t.Fatalf("the change feed failed: %s", m.data)
			}
			var ce cloudEvent
			if err := json.Unmarshal([]byte(m.data), &ce); err != nil {
				t.Fatalf("%q: %v", m.data, err)
			}
			if m.event != ce.Data.Type {
				t.Fatalf("SSE event %q carries a %q", m.event, ce.Data.Type)
			}
			return ce
		case <-timeout:
			t.Fatal("no event in 20 s")
		}
	}
}

// The change feed over Server-Sent Events: CloudEvents 1.0 JSON, live as
// changes happen, filtered by the query, and resumed with Last-Event-ID
// with nothing missed and nothing repeated.
func TestTheChangeFeedStreamsCloudEventsAndResumes(t *testing.T) {
	s := startServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	feed := s.subscribe(ctx, "", "")
	tables := s.subscribe(ctx, "", "?type=table.declared")
	ok(t, "create a", s.post("/v1/namespace/a/create", nil))
	ok(t, "declare a$t", s.post("/v1/table/a$t/declare", nil))
	var last string
	ce := next(t, feed, &last)
	if ce.SpecVersion != "1.0" || ce.Type != "dev.flightns.namespace.created" || ce.Subject != "a" || ce.Source == "" || ce.Time.IsZero() ||
		!strings.HasSuffix(ce.ID, "-0") || ce.DataContentType != "application/json" {
		t.Fatalf("first event: %+v", ce)
	}
	if ce := next(t, tables, new(string)); ce.Data.Type != api.EventTableDeclared || ce.Subject != "a$t" {
		t.Fatalf("the declared tables' feed: %+v", ce)
	}
	if ce := next(t, feed, &last); ce.Data.Type != api.EventTableDeclared {
		t.Fatalf("second event: %+v", ce)
	}
	// The sequence's id follows its events.
	if m := <-feed; m.id == "" || m.data != "" {
		t.Fatalf("after the events of a sequence: %+v, want its id", m)
	} else {
		last = m.id
	}
	cancel()

	// Resume after the last id seen: only what came since.
	ok(t, "create b", s.post("/v1/namespace/b/create", nil))
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	again := s.subscribe(ctx2, last, "")
	if ce := next(t, again, new(string)); ce.Data.Type != api.EventNamespaceCreated || ce.Subject != "b" {
		t.Fatalf("resumed after %s: %+v", last, ce)
	}
	if r := s.do(http.MethodGet, ChangesPath, nil, "Last-Event-ID", "x"); r.status != http.StatusBadRequest {
		t.Fatalf("a Last-Event-ID that is no sequence: %s", r)
	}
}
