package restserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/testutil/nstest"
)

var quiet = nstest.Quiet

// server is a flightns REST server on a loopback port, over a real
// redis-server and a file:// root, that a test can restart in place.
type server struct {
	*nstest.Env
	t    *testing.T
	opts Options
	cfg  func(*namespace.Config)
	// smallSends gives every connection a small send buffer (no
	// autotuning), so that a client that reads nothing stalls the
	// server's writes soon.
	smallSends bool

	mu   sync.Mutex
	addr string // host:port, kept across restarts
	svc  *namespace.Service
	srv  *http.Server
	done chan struct{}
	log  []string // "METHOD path?query" of every request, in order
}

type serverOption func(*server)

func withAuth(a *auth.Authenticator) serverOption { return func(s *server) { s.opts.Auth = a } }
func withMaxBody(n int64) serverOption            { return func(s *server) { s.opts.MaxBodyBytes = n } }
func withConfig(f func(*namespace.Config)) serverOption {
	return func(s *server) { s.cfg = f }
}

// smallSendListener gives its connections a 4 KiB send buffer.
type smallSendListener struct{ net.Listener }

func (l smallSendListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

func startServer(t *testing.T, opts ...serverOption) *server {
	t.Helper()
	s := &server{Env: nstest.New(t), t: t, opts: Options{Logger: quiet}}
	for _, o := range opts {
		o(s)
	}
	s.start()
	t.Cleanup(s.stop)
	return s
}

// start opens the service and serves it (on the previous port, after a
// restart).
func (s *server) start() {
	s.t.Helper()
	cfg := s.Config()
	if s.cfg != nil {
		s.cfg(&cfg)
	}
	svc, err := namespace.Open(context.Background(), cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	addr := s.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var ln net.Listener
	for i := 0; ; i++ { // the old listener's port may take a moment to free
		if ln, err = net.Listen("tcp", addr); err == nil || i == 50 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		_ = svc.Close()
		s.t.Fatal(err)
	}
	h := New(svc, s.opts)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		s.mu.Lock()
		s.log = append(s.log, fmt.Sprintf("%s %s %d", r.Method, r.URL.RequestURI(), sw.status))
		s.mu.Unlock()
	})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		serveOn := ln
		if s.smallSends {
			serveOn = smallSendListener{ln}
		}
		if err := srv.Serve(serveOn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.t.Errorf("serve: %v", err)
		}
	}()
	s.mu.Lock()
	s.addr, s.svc, s.srv, s.done = ln.Addr().String(), svc, srv, done
	s.mu.Unlock()
}

// stop shuts the server down gracefully and closes the service.
func (s *server) stop() {
	s.mu.Lock()
	srv, svc, done := s.srv, s.svc, s.done
	s.srv, s.svc = nil, nil
	s.mu.Unlock()
	if srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
	<-done
	_ = svc.Close()
}

// restart stops and starts the server on the same port.
func (s *server) restart() {
	s.t.Helper()
	s.stop()
	s.start()
}

func (s *server) url() string { return "http://" + s.addr }

func (s *server) service() *namespace.Service {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.svc
}

// statusWriter remembers the status of a reply.
type statusWriter struct {
	http.ResponseWriter
	status int
}

// Unwrap lets http.ResponseController reach the connection (the change
// feed flushes).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

// requests returns "METHOD uri status" of the requests served so far and
// forgets them.
func (s *server) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.log
	s.log = nil
	return out
}

// reply is an HTTP answer.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// errorCode is the code of an error body (-1 when the body is not one).
func (r reply) errorCode() int {
	var e struct {
		Code *int `json:"code"`
	}
	if json.Unmarshal(r.body, &e) != nil || e.Code == nil {
		return -1
	}
	return *e.Code
}

func (r reply) String() string {
	return fmt.Sprintf("%d %s", r.status, strings.TrimSpace(string(r.body)))
}

// decode unmarshals the body into v (zeroed first), failing the test when
// it cannot.
func (r reply) decode(t *testing.T, v any) {
	t.Helper()
	reflect.ValueOf(v).Elem().SetZero()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("reply %s: %v", r, err)
	}
}

// do sends a request; body is JSON-encoded unless it is a string or nil
// (a POST's nil is {}, as clients send: a mutation needs a JSON body; ""
// sends none). A body goes as application/json unless headers set
// another Content-Type.
func (s *server) do(method, path string, body any, headers ...string) reply {
	s.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
		if method == http.MethodPost {
			rd = strings.NewReader("{}")
		}
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.url()+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// post is do with POST.
func (s *server) post(path string, body any, headers ...string) reply {
	s.t.Helper()
	return s.do(http.MethodPost, path, body, headers...)
}

// ok fails the test unless r is a 200.
func ok(t *testing.T, what string, r reply) reply {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("%s: %s, want 200", what, r)
	}
	return r
}

// wantError fails the test unless r is an error body with code and the
// HTTP status of that code.
func wantError(t *testing.T, what string, r reply, code, status int) {
	t.Helper()
	if r.status != status || r.errorCode() != code {
		t.Fatalf("%s: %s, want HTTP %d with code %d", what, r, status, code)
	}
	var e errorBody
	r.decode(t, &e)
	if e.Error == "" || e.Detail == "" {
		t.Fatalf("%s: error body %s lacks error or detail", what, r)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s: error body has Content-Type %q", what, ct)
	}
}
