package s3proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flightns/flightns/objstore"
)

// Faults is what a FaultProxy does to the requests it passes on. Rates
// are probabilities per request; zero values pass everything unchanged.
type Faults struct {
	// ErrorRate answers 500 or 503 (an S3 InternalError or SlowDown) without
	// passing the request on: the store never acted.
	ErrorRate float64
	// LostReplyRate passes the request on and then drops the connection
	// without answering: the store acted, the caller cannot know.
	LostReplyRate float64
	// MinLatency and MaxLatency delay each request by a uniform random
	// duration between them (MinLatency alone: exactly that long).
	MinLatency, MaxLatency time.Duration
}

// Request is one request the proxy answered, as Trace sees it.
type Request struct {
	Method, Path, RawQuery string
	// UserAgent tells the senders apart (the AWS SDK for Go of flightns,
	// object_store of Lance).
	UserAgent string
	// Status is the HTTP status answered (0 when the reply was dropped).
	Status int
	// Start is when the request arrived, End when it was answered (the
	// injected latency included).
	Start, End time.Time
}

// Proxy is an HTTP reverse proxy in front of an S3 server that injects
// errors, lost replies and latency.
type Proxy struct {
	URL string // http://127.0.0.1:port

	mu     sync.Mutex
	faults Faults
	rng    *rand.Rand

	// Counts of what was injected and passed.
	Errors, Lost, Delayed, Passed atomic.Int64
	// ConditionalCopies counts the conditional copies (CopyObject with
	// If-None-Match: *) the proxy judged while honouring the condition,
	// refused or passed on.
	ConditionalCopies atomic.Int64

	// Trace, if set before the first request, is called after every
	// request.
	Trace func(Request)

	// cond, when set (HonourCopyCondition), makes the proxy refuse a
	// conditional CopyObject onto an existing key; keys serializes the
	// writes to each key meanwhile.
	cond      atomic.Pointer[copyCondition]
	keys      sync.Map // path → *sync.Mutex
	target    *url.URL
	transport http.RoundTripper

	close func()
}

var errLostReply = errors.New("s3proxy: reply lost on purpose")

// Start serves a proxy to target (an S3 server's URL) on a loopback port
// until Close; it injects nothing until Set.
func Start(target string) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	p := &Proxy{rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7)), target: u}
	rp := httputil.NewSingleHostReverseProxy(u)
	// Keep connections to the server open for every concurrent client:
	// the default keeps two, and a proxy that reconnects per request
	// would measure itself.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 0, 1024
	rp.Transport, p.transport = tr, tr
	rp.ModifyResponse = func(r *http.Response) error {
		if lost, _ := r.Request.Context().Value(lostKey{}).(bool); lost {
			_ = r.Body.Close()
			return errLostReply
		}
		return nil
	}
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		if errors.Is(err, errLostReply) {
			panic(http.ErrAbortHandler) // close the connection without a reply
		}
		http.Error(w, err.Error(), http.StatusBadGateway)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{ReadHeaderTimeout: time.Minute, ErrorLog: log.New(io.Discard, "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.Trace != nil {
			sw := &StatusWriter{ResponseWriter: w}
			w = sw
			req := Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, UserAgent: r.UserAgent(), Start: time.Now()}
			defer func() {
				req.Status, req.End = sw.Status, time.Now()
				p.Trace(req)
			}()
		}
		f, roll, delay := p.draw()
		if delay > 0 {
			p.Delayed.Add(1)
			time.Sleep(delay)
		}
		switch {
		case roll < f.ErrorRate:
			p.Errors.Add(1)
			status, code := http.StatusServiceUnavailable, "SlowDown"
			if int(roll*1e6)%2 == 0 {
				status, code = http.StatusInternalServerError, "InternalError"
			}
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(status)
			_, _ = fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected by s3proxy</Message></Error>`, code)
			return
		case roll < f.ErrorRate+f.LostReplyRate:
			p.Lost.Add(1)
			r = r.WithContext(contextWithLost(r))
		default:
			p.Passed.Add(1)
		}
		if c := p.cond.Load(); c != nil && r.Method != http.MethodGet && r.Method != http.MethodHead {
			unlock := p.lockKey(r.URL.Path)
			defer unlock()
			if refused, err := p.refuseCopy(r, c); err != nil || refused {
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadGateway)
					return
				}
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusPreconditionFailed)
				_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message><Condition>If-None-Match</Condition></Error>`)
				return
			}
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	p.URL, p.close = "http://"+ln.Addr().String(), func() { _ = srv.Close() }
	return p, nil
}

// Close stops the proxy.
func (p *Proxy) Close() { p.close() }

// StatusWriter remembers the status a handler answered (Status; 0 before
// it answered). The benchmark's DynamoDB proxy uses it too.
type StatusWriter struct {
	http.ResponseWriter
	Status int
}

// WriteHeader notes the first status written.
func (w *StatusWriter) WriteHeader(code int) {
	if w.Status == 0 {
		w.Status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write notes 200 if nothing was written before.
func (w *StatusWriter) Write(b []byte) (int, error) {
	if w.Status == 0 {
		w.Status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *StatusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush lets the reverse proxy stream replies through.
func (w *StatusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

type lostKey struct{}

func contextWithLost(r *http.Request) context.Context {
	return context.WithValue(r.Context(), lostKey{}, true)
}

func (p *Proxy) draw() (Faults, float64, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.faults
	roll := p.rng.Float64()
	var d time.Duration
	d = f.MinLatency
	if f.MaxLatency > f.MinLatency {
		d += time.Duration(p.rng.Int64N(int64(f.MaxLatency - f.MinLatency)))
	}
	return f, roll, d
}

// URI is the root URI of bucket (and an optional prefix) through the
// proxy.
func (p *Proxy) URI(bucket, prefix string) string { return objstore.S3URI(p.URL, bucket, prefix) }

// Set changes the faults from now on.
func (p *Proxy) Set(f Faults) {
	p.mu.Lock()
	p.faults = f
	p.mu.Unlock()
}
