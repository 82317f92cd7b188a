package redisstate

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// The records of package idempotency, one per idempotency key
// (Keys.Idempotency, by the hash of its principal and key): a
// reservation while its request runs, then the request's answer. They
// run alone, outside the pipeliner.

// ReserveIdempotency records rec under hash for lease unless a record is
// there (SET NX GET: a plain write, safe alone): reserved, or the record
// found.
func (c *Catalog) ReserveIdempotency(ctx context.Context, hash string, rec []byte, lease time.Duration) (found string, reserved bool, err error) {
	found, err = c.rdb.SetArgs(ctx, string(c.Idempotency(hash)), rec, redis.SetArgs{Mode: "NX", Get: true, TTL: lease}).Result()
	if errors.Is(err, redis.Nil) {
		return "", true, nil
	}
	return found, false, err
}

// FinishIdempotency runs idem_finish.lua: owner's reservation under hash
// becomes rec, kept for window.
func (c *Catalog) FinishIdempotency(ctx context.Context, hash, owner string, rec []byte, window time.Duration) error {
	return orNil(idemFinishS.Run(ctx, c.rdb, []string{string(c.Idempotency(hash))}, owner, rec, window.Milliseconds()).Err())
}

// ReleaseIdempotency runs idem_release.lua: owner's reservation under
// hash is dropped.
func (c *Catalog) ReleaseIdempotency(ctx context.Context, hash, owner string) error {
	return orNil(idemReleaseS.Run(ctx, c.rdb, []string{string(c.Idempotency(hash))}, owner).Err())
}

// orNil is err, but nil for a nil reply (the scripts' "not this owner's").
func orNil(err error) error {
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}
