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
	// MaxLatency delays each request by a uniform random duration up to it.
	MaxLatency time.Duration
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
}

var errLostReply = errors.New("s3test: reply lost on purpose")

// StartFaultProxy serves a proxy to target (an S3 server's URL) on a
// loopback port until the test ends; it injects nothing until Set.
func StartFaultProxy(tb testing.TB, target string) *FaultProxy {
	tb.Helper()
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatalf("s3test: %v", err)
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
	tb.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

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
	if f.MaxLatency > 0 {
		d = time.Duration(p.rng.Int64N(int64(f.MaxLatency)))
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
