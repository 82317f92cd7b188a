package redisstate

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// RevokeSessions runs revoke.lua: every session of principal name issued
// up to at ends, on every replica.
func (c *Catalog) RevokeSessions(ctx context.Context, name string, at time.Time) error {
	return c.sessionWrite(ctx, func(p redis.Pipeliner) {
		revokeS.Eval(ctx, p, []string{string(c.Revoked())}, name, strconv.FormatInt(at.UnixMilli(), 10))
	})
}

// ConfirmOn makes the session writes (RevokeSessions, EndSession) return
// only once r's replicas have them: a failover must not bring back a
// session that was ended.
func (c *Catalog) ConfirmOn(r *Replicas) { c.replicas = r }

// Replicas is the waiter ConfirmOn set (nil: none), which the layers that
// share this Catalog confirm their own writes on too.
func (c *Catalog) Replicas() *Replicas { return c.replicas }

// sessionWrite sends write's commands, confirmed on the replicas of
// ConfirmOn when there are any to wait for.
func (c *Catalog) sessionWrite(ctx context.Context, write func(redis.Pipeliner)) error {
	if c.replicas != nil {
		sent, err := c.replicas.ConfirmWith(ctx, func(p redis.Pipeliner) error { write(p); return nil })
		if sent || err != nil {
			return err
		}
	}
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { write(p); return nil })
	return err
}

// SessionsRevokedAt is when name's sessions were last revoked (zero:
// never); it implements auth.Revocations.
func (c *Catalog) SessionsRevokedAt(ctx context.Context, name string) (time.Time, error) {
	v, err := c.rdb.HGet(ctx, string(c.Revoked()), name).Int64()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(v), nil
}

// EndSession ends one session (a logout) until its expiry: a key of its
// own that expires then. It implements auth.SessionEnds; id is the
// session's nonce, from a token whose signature was checked.
func (c *Catalog) EndSession(ctx context.Context, id string, until time.Time) error {
	// A second more: the expiry may be sent in whole seconds.
	return c.sessionWrite(ctx, func(p redis.Pipeliner) {
		p.SetArgs(ctx, string(c.EndedSession(id)), "1", redis.SetArgs{ExpireAt: until.Add(time.Second)})
	})
}

// SessionEnded reports whether session id was ended (auth.SessionEnds).
func (c *Catalog) SessionEnded(ctx context.Context, id string) (bool, error) {
	n, err := c.rdb.Exists(ctx, string(c.EndedSession(id))).Result()
	return n == 1, err
}
