package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/redisproc"
	"github.com/flightns/flightns/objstore"
)

// serveConfig is what the serve flags configure.
type serveConfig struct {
	dataDir  string
	rootURI  string
	redisURL string
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var cfg serveConfig
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.dataDir, "data", envOr("FLIGHTNS_DATA", "./flightns-data"),
		"local data directory: the catalog root (unless --root) and the private Redis's files (unless --redis) [$FLIGHTNS_DATA]")
	fs.StringVar(&cfg.rootURI, "root", os.Getenv("FLIGHTNS_ROOT"),
		"catalog root URI: file:///abs/dir or s3://bucket/prefix?endpoint=…&region=… (default: <data>/root) [$FLIGHTNS_ROOT]")
	fs.StringVar(&cfg.redisURL, "redis", os.Getenv("FLIGHTNS_REDIS"),
		"Redis URL (redis://host:port); default: a private redis-server child with an fsynced append-only file in <data>/redis [$FLIGHTNS_REDIS]")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if err := runServer(ctx, cfg, log); err != nil {
		log.Error("flightns stopped", "err", err)
		return 1
	}
	return 0
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func runServer(ctx context.Context, cfg serveConfig, log *slog.Logger) error {
	data, err := filepath.Abs(cfg.dataDir)
	if err != nil {
		return err
	}
	root := cfg.rootURI
	if root == "" {
		root = "file://" + filepath.Join(data, "root")
	}
	store, err := objstore.Open(ctx, root)
	if err != nil {
		return err
	}
	defer func() { _ = store.Close() }()

	redisURL := cfg.redisURL
	if redisURL == "" {
		rs, err := redisproc.Start(ctx, redisproc.Config{Dir: filepath.Join(data, "redis"), Persistence: redisproc.AOFAlways})
		if err != nil {
			return fmt.Errorf("starting the private redis-server: %w", err)
		}
		defer func() {
			if err := rs.Stop(); err != nil {
				log.Warn("stopping the private redis-server", "err", err)
			}
		}()
		redisURL = rs.URL()
		log.Info("private redis-server started", "addr", rs.Addr(), "pid", rs.Pid(), "dir", rs.Dir())
	}
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		return fmt.Errorf("--redis %q: %w", redisURL, err)
	}
	rc := redis.NewClient(opts)
	defer func() { _ = rc.Close() }()
	if err := rc.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis at %s: %w", opts.Addr, err)
	}
	log.Info("flightns ready", "version", version, "root", store.URI(), "redis", opts.Addr)
	<-ctx.Done()
	log.Info("flightns stopping")
	return nil
}
