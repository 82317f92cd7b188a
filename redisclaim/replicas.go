package redisclaim

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
// failover can promote a replica that lacks the newest claims, and a
// reader could then be told of an older version than one it was already
// told of. So nothing a claim entitles becomes visible (a final manifest,
// a transaction's commit record: the commit points) before a replica has
// the claim: the gate of that write (fence) first writes a fence key and
// WAITs until a replica acknowledged it. WAIT counts a connection's own
// writes, so it follows the fence write on the same connection; and
// since a replica applies the primary's writes in order, the fence on a
// replica means the claim read before it is there too. A writer replies
// after its commit point and a reader that helps answers after it, so
// every answer names a version some replica holds.

// DefaultReplicaTimeout is how long a commit point waits for a replica.
const DefaultReplicaTimeout = time.Second

// replicaCheckEvery is how often, with ReplicaAcks -1, the primary is
// asked how many replicas it has.
const replicaCheckEvery = time.Second

// replicas confirms that a replica has what the primary has.
type replicas struct {
	rdb     redis.UniversalClient
	key     string // the fence key, in the catalog's slot
	acks    int    // -1: one when the primary has replicas; 0: none; n: n
	timeout time.Duration

	mu      sync.Mutex
	checked time.Time
	have    int // the primary's connected replicas when checked
}

// node is a client of the primary that holds key: the cluster node of
// its slot, or the one client of a standalone or Sentinel setup.
type node interface {
	Info(ctx context.Context, sections ...string) *redis.StringCmd
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
}

func (r *replicas) primary(ctx context.Context) (node, error) {
	if c, ok := r.rdb.(interface {
		MasterForKey(ctx context.Context, key string) (*redis.Client, error)
	}); ok {
		return c.MasterForKey(ctx, r.key)
	}
	return r.rdb, nil
}

// needed is how many replicas must acknowledge now.
func (r *replicas) needed(ctx context.Context, c node) int {
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

// confirm returns once enough replicas have every write the primary had
// when it was called; ServiceUnavailable when they do not within the
// timeout (the outcome of the commit is then unknown: nothing was made
// visible, and its claim may or may not survive a failover).
func (r *replicas) confirm(ctx context.Context) error {
	if r.acks == 0 {
		return nil
	}
	c, err := r.primary(ctx)
	if err != nil {
		return err
	}
	n := r.needed(ctx, c)
	if n == 0 {
		return nil
	}
	var wait *redis.Cmd
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, r.key)
		wait = p.Do(ctx, "WAIT", n, r.timeout.Milliseconds())
		return nil
	}); err != nil {
		return nserror.New(nserror.ServiceUnavailable, "redisclaim: confirming the claim on a Redis replica: %v", err)
	}
	if got, _ := wait.Int64(); got < int64(n) {
		return nserror.New(nserror.ServiceUnavailable,
			"the claim reached %d of the %d Redis replicas it must reach within %s: not committed yet; retry the same request to learn the outcome", got, n, r.timeout)
	}
	return nil
}
