package bench

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"sync/atomic"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/flightns/flightns/objstore"
)

// objstoreScenario measures create-only puts of 1 KiB objects to fresh keys:
// the object-store ceiling under every commit (a commit is at least one
// create-only write).
func objstoreScenario() Scenario {
	return Scenario{
		Name:        "objstore-put",
		Description: "create-only 1 KiB puts to fresh keys on file://, mem:// and s3:// (in-process S3 server)",
		Run: func(ctx context.Context, cfg Config, rep *Report) error {
			backends, cleanup, err := benchStores(ctx)
			if err != nil {
				return err
			}
			defer cleanup()
			payload := make([]byte, 1024)
			for _, b := range backends {
				if !cfg.wants(b.name) {
					continue
				}
				for _, clients := range cfg.Clients {
					var seq atomic.Int64
					run := fmt.Sprintf("bench/c%d", clients)
					r := Measure(ctx, clients, cfg.Duration, func(ctx context.Context, _ int) Outcome {
						key := fmt.Sprintf("%s/%012d.manifest", run, seq.Add(1))
						if err := b.store.PutIfAbsent(ctx, key, payload); err != nil {
							return Failed
						}
						return OK
					})
					r.Scenario, r.Backend = "objstore-put", b.name
					rep.Results = append(rep.Results, r)
					cfg.progress(r)
				}
			}
			return nil
		},
	}
}

type namedStore struct {
	name  string
	store *objstore.Store
}

// benchStores opens a fresh store of each backend: a temp directory, memory,
// and a gofakes3 server on loopback.
func benchStores(ctx context.Context) ([]namedStore, func(), error) {
	dir, err := os.MkdirTemp("", "flightns-bench-")
	if err != nil {
		return nil, nil, err
	}
	backend := s3mem.New()
	if err := backend.CreateBucket("bench"); err != nil {
		return nil, nil, err
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_EC2_METADATA_DISABLED": "true"} {
		if os.Getenv(k) == "" {
			_ = os.Setenv(k, v)
		}
	}
	var out []namedStore
	cleanup := func() {
		for _, s := range out {
			_ = s.store.Close()
		}
		srv.Close()
		_ = os.RemoveAll(dir)
	}
	for _, u := range []struct{ name, uri string }{
		{"file", "file://" + dir},
		{"mem", "mem://"},
		{"s3", "s3://bench?endpoint=" + srv.URL + "&region=us-east-1&use_path_style=true&disable_https=true"},
	} {
		s, err := objstore.Open(ctx, u.uri)
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		out = append(out, namedStore{u.name, s})
	}
	return out, cleanup, nil
}
