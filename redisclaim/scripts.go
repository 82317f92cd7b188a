package redisclaim

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/commitlog"
)

// The Lua scripts, one file each, headed by their KEYS, ARGV and guarantee.
// Every write of versions, heads, the epoch, the sequence and the commit
// log goes through one of them (or through namespace's and manifesttable's
// scripts, for objects and the materializer's lease). Four writes are
// plain commands, each safe alone:
//
//   - the recovery lock, SETNX with an expiry (recover.go): it guards
//     nothing but who recovers, and open_epoch.lua checks the token before
//     it opens the epoch; released and renewed by compare-and-delete
//     (internal/redislock);
//   - DEL of a settled transaction's hash (txn.go finishTxn): only after
//     every member is final and its record deleted from storage, so a
//     reader that finds it gone finds no staged member either;
//   - the catalog's root binding, SETNX (namespace/binding.go): written
//     once, never changed;
//   - the durable sequence, SET by the materializer's lease holder alone
//     (manifesttable publishDurable), in order, or by `admin repair`,
//     which refuses while a server holds that lease; a follower only reads
//     it as a hint to load segments, which storage then proves.
var (
	//go:embed scripts/claim.lua
	claimLua string
	//go:embed scripts/get.lua
	getLua string
	//go:embed scripts/flip.lua
	flipLua string
	//go:embed scripts/seed.lua
	seedLua string
	//go:embed scripts/supersede.lua
	supersedeLua string
	//go:embed scripts/confirm.lua
	confirmLua string
	//go:embed scripts/latest.lua
	latestLua string
	//go:embed scripts/delete_versions.lua
	deleteVersionsLua string
	//go:embed scripts/drop.lua
	dropLua string
	//go:embed scripts/open_epoch.lua
	openEpochLua string
	//go:embed scripts/list.lua
	listLua string
	//go:embed scripts/fork.lua
	forkLua string
)

// scripts are run by SHA; go-redis falls back to EVAL (which loads the
// script) on NOSCRIPT, so they survive a Redis restart or failover.
type scripts struct {
	claim, get, list, flip, seed, supersede, confirm, latest, deleteVersions, drop, openEpoch, fork *redis.Script
}

func newScripts() *scripts {
	return &scripts{
		claim:          commitlog.Script(claimLua),
		get:            commitlog.Script(getLua),
		list:           commitlog.Script(listLua),
		flip:           commitlog.Script(flipLua),
		seed:           commitlog.Script(seedLua),
		supersede:      commitlog.Script(supersedeLua),
		confirm:        commitlog.Script(confirmLua),
		latest:         commitlog.Script(latestLua),
		deleteVersions: commitlog.Script(deleteVersionsLua),
		drop:           commitlog.Script(dropLua),
		openEpoch:      commitlog.Script(openEpochLua),
		fork:           commitlog.Script(forkLua),
	}
}

func (s *scripts) all() []*redis.Script {
	return []*redis.Script{s.claim, s.get, s.list, s.flip, s.seed, s.supersede, s.confirm, s.latest, s.deleteVersions, s.drop, s.openEpoch, s.fork}
}

// load loads every script (on every master of a cluster) so that the first
// calls run by SHA.
func (s *scripts) load(ctx context.Context, c redis.Scripter) error {
	for _, sc := range s.all() {
		if err := sc.Load(ctx, c).Err(); err != nil {
			return fmt.Errorf("loading Lua script: %w", err)
		}
	}
	return nil
}

// maxScriptVersion is the largest version a script handles: Lua numbers
// are doubles, so versions above it are refused.
const maxScriptVersion = 1<<53 - 1

// reply is a script's array reply.
type reply []any

func (r reply) str(i int) string {
	if i >= len(r) {
		return ""
	}
	switch v := r[i].(type) {
	case string:
		return v
	case int64:
		return fmt.Sprint(v)
	}
	return ""
}

func (r reply) status() string { return r.str(0) }

// scriptRunner runs a script and returns its raw reply.
type scriptRunner interface {
	run(ctx context.Context, s *redis.Script, keys []string, args ...any) (any, error)
}

func run(ctx context.Context, c scriptRunner, s *redis.Script, keys []string, args ...any) (reply, error) {
	v, err := c.run(ctx, s, keys, args...)
	if err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case []any:
		return v, nil
	default:
		return reply{v}, nil
	}
}
