// Package redisurl turns the URL of a --redis flag into a go-redis
// client: one server (redis://, rediss://, unix://), Sentinel
// (redis+sentinel://) or Cluster (redis+cluster://). The server and the
// SQL worker process take the same URLs.
package redisurl
