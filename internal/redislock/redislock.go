package redislock

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)
	renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`)
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
