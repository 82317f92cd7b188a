package obs

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Health is the process's liveness and readiness. It is ready when startup
// recovery has finished, nothing has been reported down (the private Redis
// restarting, a shutdown under way), and the last Redis ping answered.
type Health struct {
	ping    func(context.Context) error
	metrics *Metrics
	log     *slog.Logger
	grpc    *health.Server

	mu        sync.Mutex
	details   []string        // what /readyz says after its first line (SetDetail)
	checks    []func() string // more conditions, each "" or why the process cannot serve
	recovered bool
	down      string // why the process is known to be unable to serve ("" when nothing is)
	pingErr   error  // the last ping's error
	checkDown string // the first reason of checks at the last Check
	stopping  bool
	ready     bool
	beenReady bool // ready once: the start's ready line is the server's own
	reason    string
}

// NewHealth returns a Health that is not ready yet. ping checks Redis;
// metrics (may be nil) gets the ready gauge.
func NewHealth(ping func(context.Context) error, metrics *Metrics, log *slog.Logger) *Health {
	h := &Health{ping: ping, metrics: metrics, log: log, grpc: health.NewServer(), reason: "starting: recovery has not finished"}
	h.grpc.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	return h
}

// GRPC is the gRPC health service (grpc.health.v1.Health): SERVING exactly
// when Ready.
func (h *Health) GRPC() *health.Server { return h.grpc }

// SetRecovered marks startup recovery as finished.
func (h *Health) SetRecovered() { h.update(func() { h.recovered = true }) }

// SetDown reports that the process cannot serve, and why; SetDown("")
// clears it.
func (h *Health) SetDown(reason string) { h.update(func() { h.down = reason }) }

// SetStopping marks the process as shutting down: never ready again.
func (h *Health) SetStopping() {
	h.update(func() { h.stopping = true })
	h.grpc.Shutdown()
}

// Ready reports readiness and, when not ready, why.
func (h *Health) Ready() (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ready, h.reason
}

// SetDetail adds a line /readyz answers after its first, ready or not:
// "name: text" (a name given again replaces its line).
func (h *Health) SetDetail(name, text string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	line := name + ": " + text
	for i, d := range h.details {
		if strings.HasPrefix(d, name+": ") {
			h.details[i] = line
			return
		}
	}
	h.details = append(h.details, line)
}

// AddCheck adds a condition that Check evaluates: it returns why the
// process cannot serve, or "".
func (h *Health) AddCheck(check func() string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.checks = append(h.checks, check)
}

// Check pings Redis and evaluates the checks now, and updates the state.
func (h *Health) Check(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	err := h.ping(ctx)
	cancel()
	h.mu.Lock()
	checks := h.checks
	h.mu.Unlock()
	down := ""
	for _, c := range checks {
		if down = c(); down != "" {
			break
		}
	}
	h.update(func() { h.pingErr, h.checkDown = err, down })
}

// Run checks Redis every interval until ctx ends.
func (h *Health) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		h.Check(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (h *Health) update(change func()) {
	h.mu.Lock()
	change()
	ready, reason := true, ""
	switch {
	case h.stopping:
		ready, reason = false, "shutting down"
	case !h.recovered:
		ready, reason = false, "starting: recovery has not finished"
	case h.down != "":
		ready, reason = false, h.down
	case h.pingErr != nil:
		ready, reason = false, fmt.Sprintf("redis does not answer: %v", h.pingErr)
	case h.checkDown != "":
		ready, reason = false, h.checkDown
	}
	changed := ready != h.ready || reason != h.reason
	h.ready, h.reason = ready, reason
	again := h.beenReady && ready
	h.beenReady = h.beenReady || ready
	h.mu.Unlock()
	if !changed {
		return
	}
	if h.metrics != nil {
		v := 0.0
		if ready {
			v = 1
		}
		h.metrics.ready.Set(v)
	}
	if ready {
		if again {
			h.log.Info("flightns is ready again")
		}
		h.grpc.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	} else {
		h.log.Warn("flightns is not ready", "reason", reason)
		h.grpc.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	}
}

// Healthz answers 200 while the process serves HTTP at all (liveness).
func (h *Health) Healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = fmt.Fprintln(w, "ok")
}

// Readyz answers 200 when ready, else 503 with the reason.
func (h *Health) Readyz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	ready, reason := h.Ready()
	h.mu.Lock()
	details := slices.Clone(h.details)
	h.mu.Unlock()
	if !ready {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintf(w, "not ready: %s\n", reason)
	} else {
		_, _ = fmt.Fprintln(w, "ready")
	}
	for _, d := range details {
		_, _ = fmt.Fprintln(w, d)
	}
}

// Mux serves /metrics, /healthz and /readyz.
func Mux(m *Metrics, h *Health) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	mux.HandleFunc("GET /healthz", h.Healthz)
	mux.HandleFunc("GET /readyz", h.Readyz)
	return mux
}
