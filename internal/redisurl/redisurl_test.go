package redisurl

import (
	"strings"
	"testing"
)

func TestRedisURLs(t *testing.T) {
	cases := []struct{ url, addr, err string }{
		{"redis://127.0.0.1:7000/2", "127.0.0.1:7000", ""},
		{"rediss://u:p@h:7000", "h:7000", ""},
		{"redis+sentinel://s1:26379?master_name=m&addr=s2:26379", "sentinel s1:26379,s2:26379 master m", ""},
		{"redis+sentinel://s1:26379", "", "master_name"},
		{"redis+cluster://n1:7000?addr=n2:7001", "cluster n1:7000,n2:7001", ""},
		{"memcached://x", "", "unknown scheme"},
		{"localhost:6380", "", "not a URL"},
		{"unix:///tmp/redis.sock", "/tmp/redis.sock", ""},
	}
	for _, c := range cases {
		rc, addr, err := Client(c.url)
		if rc != nil {
			_ = rc.Close()
		}
		if addr != c.addr || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: %q, %v; want %q, %q", c.url, addr, err, c.addr, c.err)
		}
	}
}
