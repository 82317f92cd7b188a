package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/flightns/flightns/internal/obs"
	"github.com/flightns/flightns/internal/redisurl"
	"github.com/flightns/flightns/internal/sqlworker"
	"github.com/flightns/flightns/objstore"
	"github.com/flightns/flightns/server"
)

// sqlWorkerCmd runs the SQL worker process that flightns serve starts and
// supervises (package sqlworker); its configuration comes in the
// environment. It is not a command for people to run.
func sqlWorkerCmd(ctx context.Context, stderr io.Writer) int {
	spec, err := sqlworker.SpecFromEnv()
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "flightns sql-worker: %v\n", err)
		return 2
	}
	// The bounds come first, before DuckDB allocates anything.
	if err := sqlworker.LimitSelf(spec); err != nil {
		_, _ = fmt.Fprintf(stderr, "flightns sql-worker: %v\n", err)
		return 1
	}
	log, err := obs.NewLogger(stderr, spec.LogFormat, spec.LogLevel)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "flightns sql-worker: %v\n", err)
		return 2
	}
	log = log.With("process", "sql-worker", "pid", os.Getpid())
	server.SetRedisLogger(log) // the Redis client's complaints, structured as serve's
	objs, err := objstore.OpenWith(ctx, spec.Root, objstore.Options{Logger: log})
	if err != nil {
		log.Error("opening the catalog root", "err", err)
		return 1
	}
	defer func() { _ = objs.Close() }()
	rdb, _, err := redisurl.Client(spec.Redis)
	if err != nil {
		log.Error("connecting to Redis", "err", err)
		return 1
	}
	defer func() { _ = rdb.Close() }()
	l, err := net.Listen("unix", spec.Socket)
	if err != nil {
		log.Error("listening", "err", err)
		return 1
	}
	if err := os.Chmod(spec.Socket, 0o600); err != nil {
		log.Error("making the socket private", "err", err)
		return 1
	}
	err = sqlworker.Serve(ctx, l, sqlworker.ServeConfig{Objects: objs, Redis: rdb, Catalog: spec.Catalog,
		Engine: spec.Engine, Token: spec.Token, StopGrace: spec.StopGrace, Logger: log})
	switch {
	case errors.Is(err, sqlworker.ErrStuck):
		log.Error("exiting", "err", err)
		return sqlworker.StuckExit
	case err != nil:
		log.Error("exiting", "err", err)
		return 1
	}
	return 0
}
