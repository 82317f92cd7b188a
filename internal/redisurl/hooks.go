package redisurl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The kinds of failure ErrorHook counts.
const (
	FailedReply   = "reply"   // Redis answered with an error
	FailedNetwork = "network" // Redis did not answer (a dial, a lost connection, a timeout)
)

// ErrorHook is a go-redis hook that calls count with the kind of every
// failed command and dial (FailedReply, FailedNetwork), for metrics. A
// nil reply (redis.Nil) is an answer, not a failure; neither is NOSCRIPT
// (go-redis loads the script and retries) nor a caller's cancel.
func ErrorHook(count func(kind string)) redis.Hook { return errorHook{count} }

type errorHook struct{ count func(kind string) }

func (h errorHook) failed(err error) {
	if err == nil || errors.Is(err, redis.Nil) {
		return
	}
	var re redis.Error
	if errors.As(err, &re) {
		if strings.HasPrefix(re.Error(), "NOSCRIPT") {
			return // go-redis loads the script and retries
		}
		h.count(FailedReply)
		return
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	h.count(FailedNetwork)
}

func (h errorHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (conn net.Conn, err error) {
		conn, err = next(ctx, network, addr)
		h.failed(err)
		return conn, err
	}
}

func (h errorHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.failed(err)
		return err
	}
}

func (h errorHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if err != nil {
			h.failed(err)
			return err
		}
		for _, c := range cmds {
			h.failed(c.Err())
		}
		return nil
	}
}

// SetLogger sends go-redis's own messages ("failed to dial", pool notes)
// through log, at warn. go-redis has one logger per process.
func SetLogger(log *slog.Logger) { redis.SetLogger(logger{log}) }

type logger struct{ log *slog.Logger }

func (l logger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, "redis client", "detail", fmt.Sprintf(format, v...))
}
