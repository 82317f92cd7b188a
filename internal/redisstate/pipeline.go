package redisstate

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// pipeliner sends the scripts of concurrent callers to Redis in pipelines:
// while one batch is on the wire the next one gathers, so under load many
// commits share one write and one read on the connection (and Redis parses
// them in one go). A caller alone pays one round trip, as without it.
//
// Scripts run by SHA; a batch answered NOSCRIPT (Redis restarted or failed
// over) is run again one by one with Script.Run, which loads the script.
type pipeliner struct {
	rdb  redis.UniversalClient
	reqs chan *pipeReq
	stop chan struct{}
}

type pipeReq struct {
	ctx    context.Context
	script *redis.Script
	keys   []string
	args   []any
	res    any
	err    error
	done   chan struct{}
}

const (
	pipeWorkers  = 4   // batches in flight at once
	pipeMaxBatch = 128 // commands per pipeline
)

func newPipeliner(rdb redis.UniversalClient) *pipeliner {
	p := &pipeliner{rdb: rdb, reqs: make(chan *pipeReq, 1024), stop: make(chan struct{})}
	for range pipeWorkers {
		go p.loop()
	}
	return p
}

func (p *pipeliner) close() { close(p.stop) }

// run executes script and returns its reply, like Script.Run.
func (p *pipeliner) run(ctx context.Context, s *redis.Script, keys []string, args ...any) (any, error) {
	r := &pipeReq{ctx: ctx, script: s, keys: keys, args: args, done: make(chan struct{})}
	select {
	case p.reqs <- r:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-r.done:
		return r.res, r.err
	case <-ctx.Done():
		// The script may still run: the caller treats this as an unknown
		// outcome, as with any timeout.
		return nil, ctx.Err()
	}
}

func (p *pipeliner) loop() {
	batch := make([]*pipeReq, 0, pipeMaxBatch)
	for {
		batch = batch[:0]
		select {
		case r := <-p.reqs:
			batch = append(batch, r)
		case <-p.stop:
			return
		}
	gather:
		for len(batch) < pipeMaxBatch {
			select {
			case r := <-p.reqs:
				batch = append(batch, r)
			default:
				break gather
			}
		}
		p.exec(batch)
	}
}

func (p *pipeliner) exec(batch []*pipeReq) {
	live := batch[:0:0]
	for _, r := range batch {
		if r.ctx.Err() != nil {
			r.err = r.ctx.Err()
			close(r.done)
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	if len(live) == 1 {
		r := live[0]
		r.res, r.err = r.script.Run(r.ctx, p.rdb, r.keys, r.args...).Result()
		close(r.done)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pipe := p.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(live))
	for i, r := range live {
		cmds[i] = r.script.EvalSha(ctx, pipe, r.keys, r.args...)
	}
	_, _ = pipe.Exec(ctx)
	for i, r := range live {
		r.res, r.err = cmds[i].Result()
		if redis.HasErrorPrefix(r.err, "NOSCRIPT") {
			r.res, r.err = r.script.Run(r.ctx, p.rdb, r.keys, r.args...).Result()
		}
		close(r.done)
	}
}
