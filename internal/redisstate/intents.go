package redisstate

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// The intents of package namespace (Keys.Intents): a change made in
// object storage, not in a script (a tag, a branch's ref, the grants, a
// restore's version), is recorded here before it is made; its event is
// appended by the script that deletes the intent once it is made (a
// guarded commit: GuardEq on the intent, HDel), or the intent is dropped
// when the change was not. What a crash leaves, another process resolves
// by looking at storage.

// BeginIntent records intent doc under id, confirmed on the replicas of
// ConfirmOn when there are any: a failover must not lose an intent whose
// change is then made.
func (c *Catalog) BeginIntent(ctx context.Context, id string, doc []byte) error {
	return c.sessionWrite(ctx, func(p redis.Pipeliner) { p.HSet(ctx, string(c.Intents()), id, doc) })
}

// DropIntent runs intent_drop.lua: intent id goes if it is still doc;
// dropped says whether it went.
func (c *Catalog) DropIntent(ctx context.Context, id string, doc []byte) (dropped bool, err error) {
	n, err := intentDropS.Run(ctx, c.rdb, []string{string(c.Intents())}, id, doc).Int()
	return n == 1, err
}
