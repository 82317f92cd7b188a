package redisclaim

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts, one file each, headed by their KEYS, ARGV and guarantee.
// They are the only writers of the catalog's Redis state.
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
		claim:          redis.NewScript(claimLua),
		get:            redis.NewScript(getLua),
		list:           redis.NewScript(listLua),
		flip:           redis.NewScript(flipLua),
		seed:           redis.NewScript(seedLua),
		supersede:      redis.NewScript(supersedeLua),
		confirm:        redis.NewScript(confirmLua),
		latest:         redis.NewScript(latestLua),
		deleteVersions: redis.NewScript(deleteVersionsLua),
		drop:           redis.NewScript(dropLua),
		openEpoch:      redis.NewScript(openEpochLua),
		fork:           redis.NewScript(forkLua),
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
