// Package obs is what an operator sees of a running flightns: Prometheus
// metrics, structured logs with request ids, and the health and readiness
// of the process (HTTP /healthz and /readyz, and the gRPC health service on
// the Flight port).
//
// The core packages know nothing of it, and it knows nothing of them: they
// expose small observer hooks (redisclaim.Observer, objstore.ObserveFunc,
// manifesttable.Observer, the maintainer's report, redisurl.ErrorHook's
// count) and the server adapts each to a method of Metrics (Claimed,
// StoreFailed, GroupCommitted, MaintainerPassed, RedisError, …), so obs imports only the error model; the surfaces are wrapped by its gRPC interceptors and
// HTTP middleware, outermost among them its recovery (RecoveryInterceptors,
// RecoverHTTP, Recovered), which turns a handler's panic into Internal,
// logs its stack and counts it (Metrics.PanicRecovered). Every metric lives in one registry per process
// (Metrics), never in a global one. The catalog's maintenance signals
// are aggregate gauges, never a series per table: each scrape reads the
// totals from the source the server sets (Metrics.MaintenanceFrom: the
// __manifest table's MaintenanceTotals, once it is opened).
//
// Invariants: an observer never changes an outcome and never blocks (a
// counter or a histogram update, nothing else); /healthz answers 200 as
// long as the process serves HTTP; /readyz and the gRPC health status say
// SERVING only after startup recovery has finished and while Redis
// answers, so a load balancer sends no commits to a process that cannot
// make them.
//
// What it must not do: decide anything about requests (it labels them, the
// surfaces answer them; the one answer it gives is Internal, to a request
// whose handler panicked), touch Redis keys or storage objects, or log
// request bodies (they may hold credentials or large manifests).
package obs
