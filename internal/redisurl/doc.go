// Package redisurl turns the URL of a --redis flag into a go-redis
// client: one server (redis://, rediss://, unix://), Sentinel
// (redis+sentinel://) or Cluster (redis+cluster://). The server and the
// SQL worker process take the same URLs.
//
// It also holds what the server adds to such a client: ErrorHook, which
// counts failed commands and dials for metrics (a nil reply is an
// answer, not a failure), and SetLogger, which sends go-redis's own
// messages to the server's log.
package redisurl
