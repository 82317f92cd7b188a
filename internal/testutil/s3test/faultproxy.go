package s3test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

// FaultProxy is an HTTP reverse proxy in front of an S3 server that
// injects errors, lost replies and latency.
type FaultProxy struct {
	URL string // http://127.0.0.1:port

	mu     sync.Mutex
	faults Faults
	rng    *rand.Rand

	// Counts of what was injected and passed.
	Errors, Lost, Delayed, Passed atomic.Int64

	// Trace, if set before the first request, is called after every
	// request with its method, path and when it arrived and was answered
	// (the injected latency included).
	Trace func(method, path string, start, end time.Time)

	close func()
}

var errLostReply = errors.New("s3test: reply lost on purpose")

// StartFaultProxy serves a proxy to target (an S3 server's URL) on a
// loopback port until the test ends; it injects nothing until Set.
func StartFaultProxy(tb testing.TB, target string) *FaultProxy {
	tb.Helper()
	p, err := NewFaultProxy(target)
	if err != nil {
		tb.Fatalf("s3test: %v", err)
	}
	tb.Cleanup(p.Close)
	return p
}

// NewFaultProxy serves a proxy to target on a loopback port until Close
// (for a benchmark, which has no test to end); it injects nothing until
// Set.
func NewFaultProxy(target string) (*FaultProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	p := &FaultProxy{rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))}
	rp := httputil.NewSingleHostReverseProxy(u)
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
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.Trace != nil {
			start := time.Now()
			defer func() { p.Trace(r.Method, r.URL.Path, start, time.Now()) }()
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
			_, _ = fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected by s3test.FaultProxy</Message></Error>`, code)
			return
		case roll < f.ErrorRate+f.LostReplyRate:
			p.Lost.Add(1)
			r = r.WithContext(contextWithLost(r))
		default:
			p.Passed.Add(1)
		}
		rp.ServeHTTP(w, r)
	}))
	p.URL, p.close = srv.URL, srv.Close
	return p, nil
}

// Close stops the proxy.
func (p *FaultProxy) Close() { p.close() }

type lostKey struct{}

func contextWithLost(r *http.Request) context.Context {
	return context.WithValue(r.Context(), lostKey{}, true)
}

func (p *FaultProxy) draw() (Faults, float64, time.Duration) {
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

// Set changes the faults from now on.
func (p *FaultProxy) Set(f Faults) {
	p.mu.Lock()
	p.faults = f
	p.mu.Unlock()
}

// URI returns the s3:// URI of bucket (and optional prefix) through the
// proxy.
func (p *FaultProxy) URI(bucket, prefix string) string {
	s := &Server{URL: p.URL}
	return s.URI(bucket, prefix)
}
