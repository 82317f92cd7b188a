package restserver

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/testutil/ssetest"
)

// subscribe opens the change feed with the given Last-Event-ID ("" for
// none) and query, and returns its messages as they come.
func (s *server) subscribe(ctx context.Context, lastID, query string) <-chan ssetest.Message {
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
	out := make(chan ssetest.Message, 1024)
	go func() {
		defer func() { _ = resp.Body.Close() }()
		defer close(out)
		_ = ssetest.Read(resp.Body, func(m ssetest.Message) error { out <- m; return nil })
	}()
	return out
}

// next reads messages until one carries an event, and returns it with
// the last id seen.
func next(t *testing.T, ch <-chan ssetest.Message, lastID *string) cloudEvent {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case m, ok := <-ch:
			if !ok {
				t.Fatalf("the change feed ended (last id %s)", *lastID)
			}
			if m.ID != "" {
				*lastID = m.ID
			}
			if m.Data == "" {
				continue
			}
			if m.Event == "error" {
				t.Fatalf("the change feed failed: %s", m.Data)
			}
			var ce cloudEvent
			if err := json.Unmarshal([]byte(m.Data), &ce); err != nil {
				t.Fatalf("%q: %v", m.Data, err)
			}
			if m.Event != ce.Data.Type {
				t.Fatalf("SSE event %q carries a %q", m.Event, ce.Data.Type)
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
	if m := <-feed; m.ID == "" || m.Data != "" {
		t.Fatalf("after the events of a sequence: %+v, want its id", m)
	} else {
		last = m.ID
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

// What a caller sends the change feed is checked before anything
// streams: a bad sequence, id, delimiter or method is an error with its
// code, never a panic or an open stream; without credentials on a server
// with authentication the feed is refused; a browser page of another
// origin cannot open it.
func TestTheChangeFeedRefusesWhatIsWrong(t *testing.T) {
	a, err := auth.New(auth.Config{Tokens: []auth.TokenEntry{{Token: "reader-token-1", Name: "r", Role: "read"}}})
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, withAuth(a))
	bearer := []string{"Authorization", "Bearer reader-token-1"}
	for _, c := range []struct {
		what    string
		method  string
		query   string
		headers []string
		status  int
	}{
		{"no credentials", http.MethodGet, "?follow=false", nil, http.StatusUnauthorized},
		{"a wrong token", http.MethodGet, "?follow=false", []string{"Authorization", "Bearer nope-nope-nope"}, http.StatusUnauthorized},
		{"POST", http.MethodPost, "", bearer, http.StatusMethodNotAllowed},
		{"after is no number", http.MethodGet, "?after=-1", bearer, http.StatusBadRequest},
		{"after overflows", http.MethodGet, "?after=99999999999999999999999", bearer, http.StatusBadRequest},
		{"Last-Event-ID is garbage", http.MethodGet, "", append([]string{"Last-Event-ID", "1; DROP"}, bearer...), http.StatusBadRequest},
		{"an empty name in a namespace", http.MethodGet, "?namespace=a$$b", bearer, http.StatusBadRequest},
		{"a table id that is not UTF-8", http.MethodGet, "?table=%ff", bearer, http.StatusBadRequest},
		{"a delimiter with a control character", http.MethodGet, "?delimiter=%01&namespace=a", bearer, http.StatusBadRequest},
		{"follow is no bool", http.MethodGet, "?follow=maybe", bearer, http.StatusBadRequest},
		{"a type the feed has not", http.MethodGet, "?type=table.version.creatd", bearer, http.StatusBadRequest},
		{"a type named twice", http.MethodGet, "?type=table.dropped,table.dropped", bearer, http.StatusBadRequest},
		{"a huge type", http.MethodGet, "?type=" + strings.Repeat("%3C", 10000), bearer, http.StatusBadRequest},
		{"another origin", http.MethodGet, "?follow=false", append([]string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}, bearer...), http.StatusForbidden},
	} {
		// follow=false: a request let through by mistake ends, and fails
		// the test, instead of streaming.
		q := c.query + "&follow=false"
		if strings.Contains(c.query, "follow=") {
			q = c.query
		} else if q[0] == '&' {
			q = "?" + q[1:]
		}
		if r := s.do(c.method, ChangesPath+q, nil, c.headers...); r.status != c.status || r.errorCode() < 0 {
			t.Errorf("%s: %s, want HTTP %d with a code", c.what, r, c.status)
		}
	}
	// The reader's history ends (follow=false) as an event stream.
	if r := s.do(http.MethodGet, ChangesPath+"?follow=false", nil, bearer...); r.status != http.StatusOK {
		t.Fatalf("a reader's history: %s", r)
	}
}

// A subscriber that stops reading is cut off once a write has waited
// Options.StalledFeedTimeout; it resumes with the last id it read, with
// nothing missed and nothing repeated.
func TestAStalledSubscriberIsCutOffAndResumesWithItsLastID(t *testing.T) {
	s := startServer(t, func(s *server) { s.opts.StalledFeedTimeout, s.smallSends = 300*time.Millisecond, true })
	// A client whose socket takes little (a small receive buffer, so a
	// small TCP window) and that reads nothing for a while.
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return errors.Join(err, serr)
	}}
	conn, err := d.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", ChangesPath, s.addr); err != nil {
		t.Fatal(err)
	}
	// 322 events of about 1.6 KB, each its own write.
	ctx := context.Background()
	svc := s.service()
	create := func(id ...string) {
		if _, err := svc.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id}); err != nil {
			t.Error(err)
		}
	}
	p, q := strings.Repeat("p", 250), strings.Repeat("q", 250)
	create(p)
	create(p, q)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 40 {
				create(p, q, fmt.Sprintf("%0240d-%d", i, w))
			}
		})
	}
	wg.Wait()
	time.Sleep(time.Second) // a write waits, and the server cuts the client off
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil) //nolint:bodyclose // readEvents closes it
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	last := readEvents(t, resp.Body, seen)
	if len(seen) == 0 || len(seen) >= 322 || last == "" {
		t.Fatalf("before the cut: %d events, last id %q", len(seen), last)
	}
	// Resume: the rest, once each.
	req, _ := http.NewRequest(http.MethodGet, s.url()+ChangesPath+"?follow=false", nil)
	req.Header.Set("Last-Event-ID", last)
	resp, err = http.DefaultClient.Do(req) //nolint:bodyclose // readEvents closes it
	if err != nil {
		t.Fatal(err)
	}
	readEvents(t, resp.Body, seen)
	if len(seen) != 322 {
		t.Fatalf("%d events in all, want 322", len(seen))
	}
}

// readEvents reads whole SSE messages from body until it ends, adding
// each event's subject to seen (a subject twice fails the test), and
// returns the last id read.
func readEvents(t *testing.T, body io.ReadCloser, seen map[string]bool) (last string) {
	t.Helper()
	defer func() { _ = body.Close() }()
	_ = ssetest.Read(body, func(m ssetest.Message) error { // a cut message counts for nothing
		if m.ID != "" {
			last = m.ID
		}
		if m.Data == "" {
			return nil
		}
		var ce cloudEvent
		if err := json.Unmarshal([]byte(m.Data), &ce); err != nil {
			t.Fatalf("%q: %v", m.Data, err)
		}
		if seen[ce.Subject] {
			t.Fatalf("%s twice", ce.Subject)
		}
		seen[ce.Subject] = true
		return nil
	})
	return last
}

// history reads the change feed's whole history (follow=false) with the
// given query.
func (s *server) history(t *testing.T, query string) []api.Event {
	t.Helper()
	sep := "?"
	if strings.Contains(query, "?") {
		sep = "&"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []api.Event
	for m := range s.subscribe(ctx, "", query+sep+"follow=false") {
		if m.Data == "" {
			continue
		}
		if m.Event == "error" {
			t.Fatalf("the change feed failed: %s", m.Data)
		}
		var ce cloudEvent
		if err := json.Unmarshal([]byte(m.Data), &ce); err != nil {
			t.Fatal(err)
		}
		out = append(out, ce.Data)
	}
	return out
}

// The feed is gzipped for a client that accepts gzip (the bytes of each
// batch compressed once for every follower that shares it), and plain
// for one that does not: the same messages either way, and a history
// read that ends ends a whole gzip stream (the reader checks its CRC and
// length).
func TestTheChangeFeedIsGzippedForWhoAcceptsIt(t *testing.T) {
	s := startServer(t)
	for i := range 3 {
		ok(t, "create", s.post(fmt.Sprintf("/v1/namespace/n%d/create", i), nil))
	}
	read := func(acceptEncoding string) (string, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, s.url()+ChangesPath+"?follow=false", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept-Encoding", acceptEncoding) // set: the transport leaves the body as sent
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		var body io.Reader = resp.Body
		enc := resp.Header.Get("Content-Encoding")
		if enc == "gzip" {
			zr, err := gzip.NewReader(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		if err != nil {
			t.Fatalf("Accept-Encoding %q (%q): %v", acceptEncoding, enc, err)
		}
		if !strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") {
			t.Errorf("Vary: %q", resp.Header.Get("Vary"))
		}
		return enc, string(b)
	}
	plainEnc, plain := read("identity")
	if plainEnc != "" || strings.Count(plain, "event: namespace.created") != 3 {
		t.Fatalf("identity: encoding %q, body %q", plainEnc, plain)
	}
	for _, accept := range []string{"gzip", "br;q=1.0, gzip;q=0.8", "*"} {
		if enc, body := read(accept); enc != "gzip" || body != plain {
			t.Errorf("Accept-Encoding %q: encoding %q, body %q; want gzip of %q", accept, enc, body, plain)
		}
	}
	for _, accept := range []string{"gzip;q=0", "br", "*;q=0", "*, gzip;q=0"} {
		if enc, body := read(accept); enc != "" || body != plain {
			t.Errorf("Accept-Encoding %q: encoding %q; want none", accept, enc)
		}
	}
}

// A following stream over HTTP/1.1 is the bytes of the event stream up to
// the connection's close, not chunks: its head has no Transfer-Encoding
// and says the connection closes, and its body starts with the first
// message, not a chunk's size. A stream that ends (follow=false) is still
// chunked and keeps its connection.
func TestAFollowingStreamIsDelimitedByItsClose(t *testing.T) {
	s := startServer(t)
	ok(t, "create", s.post("/v1/namespace/n0/create", nil))
	conn, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", ChangesPath, s.addr); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(conn)
	resp, err := http.ReadResponse(rd, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }() // the body is read from rd below, raw
	if resp.StatusCode != http.StatusOK || len(resp.TransferEncoding) != 0 || !resp.Close || resp.ContentLength != -1 {
		t.Fatalf("a following stream: %s, Transfer-Encoding %v, close %v, length %d; want 200, none, true, -1",
			resp.Status, resp.TransferEncoding, resp.Close, resp.ContentLength)
	}
	line, err := rd.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if line != "event: namespace.created\n" {
		t.Fatalf("the body starts %q, want the first message (not a chunk's size)", line)
	}

	ended, err := http.Get(s.url() + ChangesPath + "?follow=false")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ended.Body.Close() }()
	if len(ended.TransferEncoding) != 1 || ended.TransferEncoding[0] != "chunked" || ended.Close {
		t.Fatalf("a stream that ends: Transfer-Encoding %v, close %v; want chunked, kept", ended.TransferEncoding, ended.Close)
	}
}
