package obs

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flightns/flightns/nserror"
)

// Metrics holds every metric of one process, in a registry of its own.
type Metrics struct {
	reg *prometheus.Registry

	condCopy prometheus.Gauge // the store's conditional copy (SetConditionalCopy)

	requests        *prometheus.CounterVec   // surface, op, code
	requestDuration *prometheus.HistogramVec // surface, op
	commits         *prometheus.CounterVec   // result
	conflicts       prometheus.Counter
	claimDuration   *prometheus.HistogramVec // result
	finalize        prometheus.Histogram
	materialize     prometheus.Histogram
	groupSize       prometheus.Histogram
	query           prometheus.Histogram
	redisErrors     *prometheus.CounterVec // kind
	storeErrors     *prometheus.CounterVec // op
	recoveries      *prometheus.CounterVec // result
	recoveryTime    prometheus.Histogram
	redisRestarts   prometheus.Counter
	sqlRestarts     *prometheus.CounterVec
	panics          *prometheus.CounterVec // surface
	ready           prometheus.Gauge
	maintenance     *maintenanceGauges
	maintainer      *maintainerMetrics
}

// PanicSurfaces are the surfaces whose panics are counted
// (PanicRecovered), each reported from the start, at zero.
var PanicSurfaces = []string{"flight", "rest", "console", "metrics", "sql-worker"}

// commitOps are the operations whose outcome is a commit (a table version
// or a multi-table transaction).
var commitOps = map[string]bool{
	"CreateTableVersion": true, "BatchCreateTableVersions": true, "BatchCommitTables": true,
}

// latency buckets from 0.1 ms to about 13 s: a lone commit on tmpfs
// takes well under a millisecond, and its p50 must be readable.
var latencyBuckets = prometheus.ExponentialBuckets(0.0001, 2, 18)

// NewMetrics builds the registry with the Go runtime and process
// collectors and every flightns metric.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flightns_requests_total",
		Help: "Requests by surface (flight, rest), operation and result code (OK or the Lance Namespace error name)."}, []string{"surface", "op", "code"})
	m.requestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "flightns_request_duration_seconds",
		Help: "Request latency by surface and operation.", Buckets: latencyBuckets}, []string{"surface", "op"})
	m.commits = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flightns_commits_total",
		Help: "Commit requests (CreateTableVersion, BatchCreateTableVersions, BatchCommitTables) by result: committed, conflict or failed."}, []string{"result"})
	m.conflicts = prometheus.NewCounter(prometheus.CounterOpts{Name: "flightns_conflicts_total",
		Help: "Claims that lost a race (ConcurrentModification): the version was already taken."})
	m.claimDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "flightns_claim_duration_seconds",
		Help: "Latency of the claim script (one per commit or transaction) by result: ok, conflict or error.", Buckets: latencyBuckets}, []string{"result"})
	m.finalize = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "flightns_finalize_duration_seconds",
		Help: "Latency of finalizing a claimed version: the create-only copy to the final manifest path (the commit point), flip and cleanup.", Buckets: latencyBuckets})
	m.materialize = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "flightns_materialize_duration_seconds",
		Help: "Latency of writing one __manifest log segment (one group commit) to object storage.", Buckets: latencyBuckets})
	m.groupSize = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "flightns_group_commit_size",
		Help:    "Catalog sequences (commits and catalog mutations) per __manifest log segment written by this process.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14)})
	m.query = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "flightns_query_duration_seconds",
		Help: "Latency of SQL queries over Flight SQL (planning and running: GetFlightInfo of a statement, and DoGet of its result).", Buckets: latencyBuckets})
	m.redisErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flightns_redis_errors_total",
		Help: "Failed Redis commands and dials by kind: network (no reply) or reply (an error reply)."}, []string{"kind"})
	m.storeErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flightns_objstore_errors_total",
		Help: "Failed object-storage operations by operation (not-found and already-exists answers are not failures)."}, []string{"op"})
	m.recoveries = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flightns_recovery_runs_total",
		Help: "Recoveries of Redis state from object storage run by this process, by result."}, []string{"result"})
	m.recoveryTime = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "flightns_recovery_duration_seconds",
		Help: "Duration of recoveries run by this process.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 14)})
	m.redisRestarts = prometheus.NewCounter(prometheus.CounterOpts{Name: "flightns_private_redis_restarts_total",
		Help: "Restarts of the private redis-server after it died."})
	m.sqlRestarts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flightns_sql_worker_restarts_total",
		Help: "Restarts of the SQL worker process, by why the last one ended (exited, memory, stuck, unresponsive)."}, []string{"reason"})
	m.panics = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flightns_panics_recovered_total",
		Help: "Panics a request handler recovered from (each answered Internal and logged with its stack: a bug), by surface (flight, rest, console, metrics, sql-worker)."}, []string{"surface"})
	for _, s := range PanicSurfaces {
		m.panics.WithLabelValues(s)
	}
	m.ready = prometheus.NewGauge(prometheus.GaugeOpts{Name: "flightns_ready",
		Help: "1 while the process is ready to serve (recovered, Redis answering), else 0."})
	m.condCopy = prometheus.NewGauge(prometheus.GaugeOpts{Name: "flightns_storage_conditional_copy",
		Help: "1 when the catalog's store refused a conditional CopyObject onto an existing object at startup, so that promotions of sources not read are one server-side copy; 0 when they are a GET and a conditional PUT (MinIO, a directory)."})
	m.maintenance = newMaintenanceGauges()
	for _, c := range []prometheus.Collector{m.requests, m.requestDuration, m.commits, m.conflicts, m.claimDuration, m.finalize,
		m.materialize, m.groupSize, m.query, m.redisErrors, m.storeErrors, m.recoveries, m.recoveryTime, m.redisRestarts, m.sqlRestarts, m.panics, m.ready, m.condCopy,
		m.maintenance} {
		f(c)
	}
	m.maintainer = newMaintainerMetrics()
	for _, c := range m.maintainer.collectors() {
		f(c)
	}
	return m
}

// Registry is the registry (tests read it; servers serve Handler).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Request records one request of a surface.
func (m *Metrics) Request(surface, op string, code string, took time.Duration) {
	m.requests.WithLabelValues(surface, op, code).Inc()
	m.requestDuration.WithLabelValues(surface, op).Observe(took.Seconds())
	if commitOps[op] {
		switch code {
		case "OK":
			m.commits.WithLabelValues("committed").Inc()
		case nserror.ConcurrentModification.String():
			m.commits.WithLabelValues("conflict").Inc()
		default:
			m.commits.WithLabelValues("failed").Inc()
		}
	}
}

// Stream records one stream of a surface (the change feed): counted
// with the requests, but not in their latency (it lasts as long as its
// reader stays).
func (m *Metrics) Stream(surface, op string, code string) {
	m.requests.WithLabelValues(surface, op, code).Inc()
}

// Query records one SQL query's latency.
func (m *Metrics) Query(took time.Duration) { m.query.Observe(took.Seconds()) }

// RedisRestarted counts a restart of the private redis-server.
func (m *Metrics) RedisRestarted() { m.redisRestarts.Inc() }

// SQLWorkerRestarted counts a restart of the SQL worker; kind is a short
// reason (exited, memory, stuck, unresponsive).
func (m *Metrics) SQLWorkerRestarted(kind string) { m.sqlRestarts.WithLabelValues(kind).Inc() }

// PanicRecovered counts a panic a handler of surface recovered from
// (RecoveryInterceptors, RecoverHTTP).
func (m *Metrics) PanicRecovered(surface string) { m.panics.WithLabelValues(surface).Inc() }

// Claimed records one claim script run (one single-table commit or one
// multi-table transaction, of members tables): a ConcurrentModification
// is a lost race, counted as a conflict.
func (m *Metrics) Claimed(_ int, took time.Duration, err error) {
	result := "ok"
	switch {
	case err == nil:
	case nserror.CodeOf(err) == nserror.ConcurrentModification:
		result = "conflict"
		m.conflicts.Inc()
	default:
		result = "error"
	}
	m.claimDuration.WithLabelValues(result).Observe(took.Seconds())
}

// Finalized records one finalization of a single-table claim (the
// create-only copy to the final path).
func (m *Metrics) Finalized(took time.Duration, _ error) { m.finalize.Observe(took.Seconds()) }

// Recovered records one recovery run.
func (m *Metrics) Recovered(took time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.recoveries.WithLabelValues(result).Inc()
	m.recoveryTime.Observe(took.Seconds())
}

// StoreFailed counts one failed object storage operation (op: get, put,
// copy, …). An answer such as "not found" is not a failure: the caller
// that knows the store's answers decides.
func (m *Metrics) StoreFailed(op string) { m.storeErrors.WithLabelValues(op).Inc() }

// GroupCommitted records one group commit of the __manifest table (one
// log segment) this process wrote: the catalog sequences it carries and
// how long its write took.
func (m *Metrics) GroupCommitted(sequences int, took time.Duration) {
	m.materialize.Observe(took.Seconds())
	m.groupSize.Observe(float64(sequences))
}

// RedisError counts a failed Redis command or dial of kind (redisurl's
// ErrorHook calls it: redisurl.FailedReply, redisurl.FailedNetwork).
func (m *Metrics) RedisError(kind string) { m.redisErrors.WithLabelValues(kind).Inc() }

// SetConditionalCopy says whether promotions copy on the server.
func (m *Metrics) SetConditionalCopy(on bool) {
	v := 0.0
	if on {
		v = 1
	}
	m.condCopy.Set(v)
}
