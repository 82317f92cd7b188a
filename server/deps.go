package server

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/privateredis"
	"github.com/flightns/flightns/internal/redisproc"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/internal/redisurl"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/objstore"
)

// Deps is an opened catalog's connections: its object store, its Redis
// client, and the private redis-server when this process runs one.
type Deps struct {
	Store    *objstore.Store
	Redis    redisstate.Client
	RedisURL string // what Redis was opened from
	Addr     string // Redis address(es), for logs
	Catalog  string // the catalog's name

	private *privateredis.Private // nil with Store.Redis
}

// OpenDeps opens the object store and connects to Redis. Without a Redis
// URL it starts the private redis-server of the data directory; when
// another process (a running server) already runs it, share says whether
// to use that one (admin commands) or to fail (a second server); observe,
// when set, sees every storage operation (metrics). Close
// releases everything, the private Redis last.
func OpenDeps(ctx context.Context, c Store, log *slog.Logger, share bool, observe objstore.ObserveFunc) (*Deps, error) {
	c.EnsureDefaults()
	SetRedisLogger(log)
	data, err := filepath.Abs(c.DataDir)
	if err != nil {
		return nil, err
	}
	root := c.Root
	if root == "" {
		root = "file://" + filepath.Join(data, "root")
	}
	d := &Deps{Catalog: c.Catalog}
	// The storage client's own lines (the AWS SDK's) go to this log, in
	// its format and at its level.
	if d.Store, err = objstore.OpenWith(ctx, root, objstore.Options{Logger: log, Observer: observe}); err != nil {
		return nil, fmt.Errorf("catalog root (--root): %w", err)
	}
	redisURL := c.Redis
	if redisURL == "" {
		if d.private, err = privateredis.Open(ctx, data, share, log); err != nil {
			d.Close(log)
			return nil, err
		}
		redisURL = d.private.URL()
	}
	d.RedisURL = redisURL
	if d.Redis, d.Addr, err = redisurl.Client(redisURL); err != nil {
		d.Close(log)
		return nil, fmt.Errorf("redis URL (--redis): %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := d.Redis.Ping(pctx).Err(); err != nil {
		d.Close(log)
		return nil, fmt.Errorf("redis at %s does not answer: %w", d.Addr, err)
	}
	return d, nil
}

// OpenCatalog opens the catalog over d for work on its durable state
// (the admin commands): no SQL engine.
func (d *Deps) OpenCatalog(ctx context.Context, log *slog.Logger) (*namespace.Service, error) {
	svc, err := namespace.Open(ctx, namespace.Config{Objects: d.Store, Redis: d.Redis, Catalog: d.Catalog, Logger: log, Table: manifesttable.Config{NoSQL: true}})
	if err != nil {
		return nil, fmt.Errorf("opening the catalog: %w", err)
	}
	return svc, nil
}

// ownRedis is the redis-server this process runs, to be supervised; nil
// with a Redis URL or when it shares a running server's.
func (d *Deps) ownRedis() *redisproc.Server {
	if d.private == nil {
		return nil
	}
	return d.private.Server()
}

// Close releases everything, the private Redis after the client that
// talks to it.
func (d *Deps) Close(log *slog.Logger) {
	if d.Redis != nil {
		_ = d.Redis.Close()
	}
	if d.private != nil {
		if err := d.private.Close(); err != nil {
			log.Warn("stopping the private redis-server", "err", err)
		}
	}
	if d.Store != nil {
		_ = d.Store.Close()
	}
}

// SetRedisLogger sends go-redis's own messages ("failed to dial", pool
// notes) through log, at warn: they say Redis misbehaves, which the
// server's health and errors say too. go-redis has one logger per
// process.
func SetRedisLogger(log *slog.Logger) { redisurl.SetLogger(log) }
