package bench

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/objstore"
)

// namespaceScenario measures the namespace service on file://: catalog
// mutations (each acknowledged once its __manifest segment is durable) and
// CreateTableVersion commits (each acknowledged once its manifest is
// durable), at 1 and 32 callers by default.
func namespaceScenario() Scenario {
	return Scenario{
		Name:        "namespace",
		Description: "CreateNamespace, DeclareTable and CreateTableVersion through the namespace service on file://, each acknowledged only when durable",
		Run:         runNamespace,
		Steps:       func(cfg Config) int { return 3 * len(cfg.Clients) },
	}
}

func runNamespace(ctx context.Context, cfg Config, rep *Report) error {
	e, err := newEnv(ctx, "flightns-bench-ns-", cfg.persistence(), 256)
	if err != nil {
		return err
	}
	defer e.close()
	objs, rdb := e.objs, e.rdb
	s, err := namespace.Open(ctx, namespace.Config{Objects: objs, Redis: rdb, Catalog: "bench", Logger: quietLogger(), Table: manifesttable.Config{Engine: sqlengine.Config{MemoryLimit: "2GB"}}})
	if err != nil {
		return err
	}
	defer func() { _ = s.Close() }()
	// Catalog mutations are bound by the durable segment write, commits
	// by the claim and the durable manifest write.
	add := func(r Result, name, note string) error {
		r.Scenario, r.Backend, r.Note = "namespace:"+name, "file", note
		if err := cfg.run.ceil.compare(ctx, cfg, rep, &r, name == "create-table-version", true, 1); err != nil {
			return err
		}
		cfg.add(rep, r)
		return nil
	}
	var n atomic.Int64
	for _, clients := range cfg.Clients {
		r := Measure(ctx, clients, cfg.Duration, func(ctx context.Context, c int) Outcome {
			_, err := s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: api.ID{fmt.Sprintf("ns%d", n.Add(1))}})
			return outcomeOf(err)
		})
		if err := add(r, "create-namespace", "target ≥ 2,000 catalog mutations/s with 32 callers; Lance's directory namespace: about 138/s"); err != nil {
			return err
		}
	}
	for _, clients := range cfg.Clients {
		r := Measure(ctx, clients, cfg.Duration, func(ctx context.Context, c int) Outcome {
			_, err := s.DeclareTable(ctx, api.DeclareTableRequest{ID: api.ID{fmt.Sprintf("t%d", n.Add(1))}})
			return outcomeOf(err)
		})
		if err := add(r, "declare-table", "target ≥ 2,000 catalog mutations/s with 32 callers; Lance's directory namespace: about 65 CreateTable/s"); err != nil {
			return err
		}
	}
	payload := make([]byte, 1024)
	for _, clients := range cfg.Clients {
		// One table per caller: commits without conflicts.
		tables := make([]string, clients)
		heads := make([]int64, clients)
		for c := range clients {
			id := api.ID{fmt.Sprintf("commits%d_%d", clients, c)}
			if _, err := s.DeclareTable(ctx, api.DeclareTableRequest{ID: id}); err != nil {
				return err
			}
			d, err := s.DescribeTable(ctx, api.DescribeTableRequest{ID: id})
			if err != nil {
				return err
			}
			if tables[c], err = tableKey(objs, fmt.Sprint(id), d.Location); err != nil {
				return err
			}
		}
		r := Measure(ctx, clients, cfg.Duration, func(ctx context.Context, c int) Outcome {
			v := heads[c] + 1
			key := lancemanifest.StagingPath(lancemanifest.Dir(tables[c]).Manifest(lancemanifest.V2, uint64(v)))
			if err := objs.PutWith(ctx, key, payload, objstore.WriteOptions{NoSync: true}); err != nil {
				return Failed
			}
			_, err := s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: api.ID{fmt.Sprintf("commits%d_%d", clients, c)},
				Version: v, ManifestPath: key})
			if err == nil {
				heads[c] = v
			}
			return outcomeOf(err)
		})
		if err := add(r, "create-table-version", "one table per caller; the writer's staging upload included"); err != nil {
			return err
		}
	}
	return nil
}
