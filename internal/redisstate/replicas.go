package redisstate

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/nserror"
)

// Replication from a Redis primary to its replicas is asynchronous: a
// failover can promote a replica that lacks the newest writes. So what a
// caller is told, and what is made durable elsewhere, must rest only on
// writes a replica has: redisclaim's commit points (a final manifest, a
// transaction's commit record), its refusals (a version taken, a guard
// that does not hold), catalog changes, and the commit-log entries the
// materializer writes into __manifest segments. Replicas confirms that:
// a fence key is written and WAIT sent on the same connection (WAIT
// counts a connection's own writes), after the reads or writes to
// confirm; a replica applies the primary's writes in order, so the fence
// on a replica means they are there too, and the replica a failover
// promotes (the most advanced one) has them.

// DefaultReplicaTimeout is how long a commit point waits for a replica.
const DefaultReplicaTimeout = time.Second

// replicaCheckEvery is how often, with ReplicaAcks -1, the primary is
// asked how many replicas it has.
const replicaCheckEvery = time.Second

// Replicas confirms that a replica has what the primary has. Make one
// with NewReplicas.
type Replicas struct {
	rdb     Client
	key     Key // the fence key, in the catalog's slot
	acks    int // -1: one when the primary has replicas; 0: none; n: n
	timeout time.Duration

	mu      sync.Mutex
	checked time.Time
	have    int // the primary's connected replicas when checked
}

// NewReplicas confirms on rdb's replicas with the fence key of keys'
// catalog: acks nil one whenever the primary has replicas, 0 none, n n;
// timeout (DefaultReplicaTimeout when 0) bounds each wait.
func NewReplicas(rdb Client, keys Keys, acks *int, timeout time.Duration) *Replicas {
	if timeout <= 0 {
		timeout = DefaultReplicaTimeout
	}
	r := &Replicas{rdb: rdb, key: keys.Fence(), acks: -1, timeout: timeout}
	if acks != nil {
		r.acks = *acks
	}
	return r
}

// Node is a client of the primary that holds key: the cluster node of
// its slot, or the one client of a standalone or Sentinel setup.
type Node interface {
	Info(ctx context.Context, sections ...string) *redis.StringCmd
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
}

func (r *Replicas) primary(ctx context.Context) (Node, error) {
	if c, ok := r.rdb.(interface {
		MasterForKey(ctx context.Context, key string) (*redis.Client, error)
	}); ok {
		return c.MasterForKey(ctx, string(r.key))
	}
	return r.rdb, nil
}

// Needed is how many replicas must acknowledge now, asking c (the
// primary) when that depends on how many it has.
func (r *Replicas) Needed(ctx context.Context, c Node) int {
	if r.acks >= 0 {
		return r.acks
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.checked) >= replicaCheckEvery {
		if info, err := c.Info(ctx, "replication").Result(); err == nil {
			r.have, r.checked = connectedReplicas(info), time.Now()
		}
	}
	return min(r.have, 1)
}

// connectedReplicas reads connected_slaves from INFO replication.
func connectedReplicas(info string) int {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_slaves:"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// Confirm returns once enough replicas have every write the primary had
// when it was called; ServiceUnavailable when they do not within the
// timeout (the outcome of the commit is then unknown: nothing was made
// visible, and its claim may or may not survive a failover).
func (r *Replicas) Confirm(ctx context.Context) error {
	_, err := r.ConfirmWith(ctx, nil)
	return err
}

// ConfirmWith is Confirm with read (nil for none) sent first, on the same
// connection: whatever read reads from the primary is on a replica once
// ConfirmWith returns nil. sent is false when no replica is needed (read
// was not sent).
func (r *Replicas) ConfirmWith(ctx context.Context, read func(redis.Pipeliner) error) (sent bool, err error) {
	if r.acks == 0 {
		return false, nil
	}
	c, err := r.primary(ctx)
	if err != nil {
		return false, err
	}
	n := r.Needed(ctx, c)
	if n == 0 {
		return false, nil
	}
	var wait *redis.Cmd
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		if read != nil {
			if err := read(p); err != nil {
				return err
			}
		}
		p.Incr(ctx, string(r.key))
		wait = p.Do(ctx, "WAIT", n, r.timeout.Milliseconds())
		return nil
	}); err != nil {
		return true, nserror.New(nserror.ServiceUnavailable, "confirming on a Redis replica: %v", err)
	}
	if got, _ := wait.Int64(); got < int64(n) {
		return true, nserror.New(nserror.ServiceUnavailable,
			"%d of the %d Redis replicas that must have this change confirmed it within %s: not committed yet; retry the same request to learn the outcome", got, n, r.timeout)
	}
	return true, nil
}
