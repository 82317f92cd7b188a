// Package redistest gives tests real Redis servers: a standalone
// redis-server or a Redis Cluster of child processes on free loopback ports,
// each in a temp directory, stopped when the test ends (pass or fail) and
// killed by the kernel if the test binary dies first.
//
// Tests fail loudly when redis-server is missing; `make test` and .ci/run
// install it. Never port 6379, never a shared server.
package redistest
