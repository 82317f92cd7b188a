package redisurl

import (
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Client makes a client from a Redis URL: redis:// or rediss://
// for one server, redis+sentinel:// (rediss+sentinel://) for Sentinel,
// redis+cluster:// (rediss+cluster://) for a Cluster, unix:// for a
// socket. The string returned names what it connects to, for logs.
func Client(u string) (redis.UniversalClient, string, error) {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return nil, "", fmt.Errorf("redis URL %q: not a URL (want redis://host:port)", u)
	}
	base, mode, _ := strings.Cut(scheme, "+")
	if scheme == "unix" {
		o, err := redis.ParseURL(u)
		if err != nil {
			return nil, "", fmt.Errorf("redis URL %q: %w", u, err)
		}
		return redis.NewClient(o), o.Addr, nil
	}
	if base != "redis" && base != "rediss" {
		return nil, "", fmt.Errorf("redis URL %q: unknown scheme %q (want redis, rediss, unix, redis+sentinel or redis+cluster)", u, scheme)
	}
	plain := base + "://" + rest
	switch mode {
	case "":
		o, err := redis.ParseURL(plain)
		if err != nil {
			return nil, "", fmt.Errorf("redis URL %q: %w", u, err)
		}
		return redis.NewClient(o), o.Addr, nil
	case "sentinel":
		o, err := redis.ParseFailoverURL(plain)
		if err != nil {
			return nil, "", fmt.Errorf("redis URL %q: %w", u, err)
		}
		if o.MasterName == "" {
			return nil, "", fmt.Errorf("redis URL %q: a Sentinel URL needs ?master_name=NAME", u)
		}
		return redis.NewFailoverClient(o), "sentinel " + strings.Join(o.SentinelAddrs, ",") + " master " + o.MasterName, nil
	case "cluster":
		o, err := redis.ParseClusterURL(plain)
		if err != nil {
			return nil, "", fmt.Errorf("redis URL %q: %w", u, err)
		}
		return redis.NewClusterClient(o), "cluster " + strings.Join(o.Addrs, ","), nil
	}
	return nil, "", fmt.Errorf("redis URL %q: unknown scheme %q (want redis, rediss, unix, redis+sentinel or redis+cluster)", u, scheme)
}
