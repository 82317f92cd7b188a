package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/auth"
	"github.com/flightns/flightns/flightserver"
	"github.com/flightns/flightns/internal/redisproc"
	"github.com/flightns/flightns/namespace"
	"github.com/flightns/flightns/objstore"
	"github.com/flightns/flightns/restserver"
)

// serveConfig is what the serve flags configure.
type serveConfig struct {
	dataDir    string
	rootURI    string
	redisURL   string
	catalog    string
	flightAddr string
	restAddr   string
	authFile   string
	tlsCert    string
	tlsKey     string
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
	fs.StringVar(&cfg.catalog, "catalog", envOr("FLIGHTNS_CATALOG", "flightns"),
		"catalog name: its Redis keys share the hash tag {catalog} [$FLIGHTNS_CATALOG]")
	fs.StringVar(&cfg.flightAddr, "flight-addr", envOr("FLIGHTNS_FLIGHT_ADDR", "127.0.0.1:31337"),
		"Arrow Flight SQL listen address (empty: no Flight) [$FLIGHTNS_FLIGHT_ADDR]")
	fs.StringVar(&cfg.restAddr, "rest-addr", envOr("FLIGHTNS_REST_ADDR", "127.0.0.1:31338"),
		"Lance Namespace REST listen address (empty: no REST) [$FLIGHTNS_REST_ADDR]")
	fs.StringVar(&cfg.authFile, "auth-file", os.Getenv("FLIGHTNS_AUTH_FILE"),
		`JSON file of tokens and users with roles ({"tokens":[{"token","name","role"}],"users":[{"name","password","role"}]}); none: no authentication [$FLIGHTNS_AUTH_FILE]`)
	fs.StringVar(&cfg.tlsCert, "tls-cert", os.Getenv("FLIGHTNS_TLS_CERT"), "TLS certificate file (PEM) for Flight and REST [$FLIGHTNS_TLS_CERT]")
	fs.StringVar(&cfg.tlsKey, "tls-key", os.Getenv("FLIGHTNS_TLS_KEY"), "TLS key file (PEM) [$FLIGHTNS_TLS_KEY]")
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
	authn, err := loadAuth(cfg.authFile)
	if err != nil {
		return err
	}
	svc, err := namespace.Open(ctx, namespace.Config{Objects: store, Redis: rc, Catalog: cfg.catalog, Logger: log})
	if err != nil {
		return err
	}
	defer func() { _ = svc.Close() }()

	var stops []func()
	defer func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}()
	errc := make(chan error, 2)
	if cfg.flightAddr != "" {
		fsrv, err := flightserver.New(flightserver.Config{Service: svc, Auth: authn, TLSCertFile: cfg.tlsCert, TLSKeyFile: cfg.tlsKey,
			Logger: log, Version: version})
		if err != nil {
			return err
		}
		l, err := net.Listen("tcp", cfg.flightAddr)
		if err != nil {
			return fmt.Errorf("--flight-addr: %w", err)
		}
		go func() { errc <- fsrv.Serve(l) }()
		stops = append(stops, fsrv.GracefulStop)
		log.Info("Flight SQL listening", "addr", l.Addr().String())
	}
	if cfg.restAddr != "" {
		l, err := net.Listen("tcp", cfg.restAddr)
		if err != nil {
			return fmt.Errorf("--rest-addr: %w", err)
		}
		hs := &http.Server{Handler: restserver.New(svc, restserver.Options{Auth: authn, Logger: log}), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if cfg.tlsCert != "" {
				errc <- hs.ServeTLS(l, cfg.tlsCert, cfg.tlsKey)
			} else {
				errc <- hs.Serve(l)
			}
		}()
		stops = append(stops, func() {
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = hs.Shutdown(sctx)
		})
		log.Info("Lance Namespace REST listening", "addr", l.Addr().String())
	}
	log.Info("flightns ready", "version", version, "root", store.URI(), "redis", opts.Addr, "catalog", cfg.catalog)
	select {
	case <-ctx.Done():
		log.Info("flightns stopping")
		return nil
	case err := <-errc:
		return err
	}
}

// loadAuth reads the credentials file; none means no authentication.
func loadAuth(path string) (*auth.Authenticator, error) {
	if path == "" {
		return auth.New(auth.Config{})
	}
	c, err := auth.LoadFile(path)
	if err != nil {
		return nil, err
	}
	return auth.New(c)
}
