package redislock

import (
	"context"
	_ "embed"
	"time"

	"github.com/redis/go-redis/v9"
)

// The scripts, one file each under scripts/, headed by their KEYS, ARGV
// and guarantee.
var (
	//go:embed scripts/release.lua
	releaseLua string
	//go:embed scripts/renew.lua
	renewLua string

	releaseScript = redis.NewScript(releaseLua)
	renewScript   = redis.NewScript(renewLua)
)

// Release deletes key if token still holds it; it reports whether it did.
func Release(ctx context.Context, rdb redis.Scripter, key, token string) (bool, error) {
	n, err := releaseScript.Run(ctx, rdb, []string{key}, token).Int()
	return n == 1, err
}

// Renew extends key's lifetime to ttl if token still holds it; it reports
// whether it did.
func Renew(ctx context.Context, rdb redis.Scripter, key, token string, ttl time.Duration) (bool, error) {
	n, err := renewScript.Run(ctx, rdb, []string{key}, token, ttl.Milliseconds()).Int()
	return n == 1, err
}
