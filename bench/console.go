package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/flightserver"
	"github.com/flightns/flightns/internal/console"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/planner"
)

// consoleScenario measures the web console's pages on a big catalog: each
// page is the calls its script makes, through the console's HTTP API,
// served as flightns serves it (the SQL gate of the Flight SQL server, in
// this process).
func consoleScenario() Scenario {
	return Scenario{
		Name: "console",
		Description: "the web console on a big catalog: the namespace tree's root among 10,000 namespaces, " +
			"a table of 100,000 versions (its page and its newest and a middle page of versions); target under 1 s each",
		Run:   runConsole,
		Steps: func(Config) int { return 4 },
	}
}

const (
	consoleNamespaces = 10_000
	consoleVersions   = 100_000
)

func runConsole(ctx context.Context, cfg Config, rep *Report) error {
	svc, closeAll, err := openSQLCatalog(ctx, cfg, "flightns-bench-console-", 16)
	if err != nil {
		return err
	}
	defer closeAll()
	// The catalog goes straight into __manifest in large appends, as in
	// the plan scenario: what is measured is reading it.
	start := time.Now()
	var batch []manifesttable.Change
	add := func(r manifesttable.Row) error {
		batch = append(batch, manifesttable.Change{Row: r})
		if len(batch) < 20_000 {
			return nil
		}
		return appendDurable(ctx, svc, &batch)
	}
	for i := range consoleNamespaces {
		ns := fmt.Sprintf("n%05d", i)
		if err := add(manifesttable.Row{ObjectType: manifesttable.TypeNamespace, ObjectID: ns, Metadata: "{}"}); err != nil {
			return err
		}
		if err := add(manifesttable.Row{ObjectType: manifesttable.TypeTable, ObjectID: ns + "$t", Location: ns + "/t.lance", Metadata: "{}"}); err != nil {
			return err
		}
	}
	// The big table is declared as a writer would; its versions' rows
	// then go into __manifest as above.
	if _, err := svc.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: api.ID{"big"}}); err != nil {
		return err
	}
	if _, err := svc.DeclareTable(ctx, api.DeclareTableRequest{ID: api.ID{"big", "t"}}); err != nil {
		return err
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for v := uint64(1); v <= consoleVersions; v++ {
		if err := add(manifesttable.Row{ObjectType: manifesttable.TypeTableVersion, ObjectID: "big$t", TableVersion: v,
			ManifestPath: fmt.Sprintf("big/t.lance/_versions/%020d.manifest", v), CommittedAt: t0.Add(time.Duration(v) * time.Second),
			NumRows: v * 100, NumFragments: v, DataBytes: v * 4096}); err != nil {
			return err
		}
	}
	if err := appendDurable(ctx, svc, &batch); err != nil {
		return err
	}
	if err := svc.Table().WaitCaughtUp(ctx); err != nil {
		return err
	}
	load := time.Since(start)
	plan := planner.New(svc)
	fsrv, err := flightserver.New(flightserver.Config{Service: svc, Planner: plan, Logger: quietLogger(), Version: "bench"})
	if err != nil {
		return err
	}
	ch, err := console.New(console.Config{Service: svc, Planner: plan, SQL: fsrv, Logger: quietLogger()})
	if err != nil {
		return err
	}
	hs := httptest.NewServer(ch)
	defer hs.Close()
	get := func(paths ...string) func() error {
		return func() error {
			for _, p := range paths {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL+p, nil)
				req.Header.Set(console.Header, "1")
				resp, err := hs.Client().Do(req)
				if err != nil {
					return err
				}
				body, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					return fmt.Errorf("GET %s: HTTP %d %s", p, resp.StatusCode, body)
				}
			}
			return nil
		}
	}
	pages := []struct {
		name, note string
		open       func() error
	}{
		{"console:tree", fmt.Sprintf("the root of the namespace tree: the first 100 of %d namespaces with their counts", consoleNamespaces),
			get("/api/namespaces?limit=100")},
		{"console:table", fmt.Sprintf("a table of %d versions: its page and its newest 100 versions", consoleVersions),
			get("/api/table?id=big&id=t", "/api/table/versions?id=big&id=t&limit=100")},
		{"console:versions-middle", "100 versions from the middle of the 100,000 (paging back)",
			get(fmt.Sprintf("/api/table/versions?id=big&id=t&limit=100&before=%d", consoleVersions/2))},
		{"console:sql", "the SQL page: the first 100 of the 100,000 versions' rows",
			func() error { return postSQL(ctx, hs, `SELECT * FROM table_versions WHERE table_id = 'big$t'`) }},
	}
	for _, p := range pages {
		var failed error
		r := measureN(30, func() error {
			err := p.open()
			if err != nil {
				failed = err
			}
			return err
		})
		if failed != nil {
			return fmt.Errorf("%s: %w", p.name, failed)
		}
		r.Scenario, r.Backend = p.name, "file"
		r.Note = fmt.Sprintf("%s; catalog loaded in %.1fs; target under 1000 ms", p.note, load.Seconds())
		rep.Results = append(rep.Results, r)
		cfg.progress(r)
	}
	return nil
}

// appendDurable appends the batch to __manifest and waits until it is
// durable.
func appendDurable(ctx context.Context, svc *namespace.Service, batch *[]manifesttable.Change) error {
	if len(*batch) == 0 {
		return nil
	}
	seq, err := svc.Table().Append(ctx, *batch)
	if err == nil {
		err = svc.Table().WaitDurable(ctx, seq)
	}
	*batch = (*batch)[:0]
	return err
}

// postSQL runs query through the console's SQL page (its first page).
func postSQL(ctx context.Context, hs *httptest.Server, query string) error {
	body := fmt.Sprintf(`{"sql": %q, "limit": 100}`, query)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL+"/api/sql", strings.NewReader(body))
	req.Header.Set(console.Header, "1")
	resp, err := hs.Client().Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST /api/sql: HTTP %d", resp.StatusCode)
	}
	return nil
}

// openSQLCatalog opens a catalog with its SQL engine (2 GB) over a fresh
// environment (prefix names its directory; poolSize Redis connections);
// closeAll closes both.
func openSQLCatalog(ctx context.Context, cfg Config, prefix string, poolSize int) (*namespace.Service, func(), error) {
	e, err := newEnv(ctx, prefix, cfg.persistence(), poolSize)
	if err != nil {
		return nil, nil, err
	}
	svc, err := namespace.Open(ctx, namespace.Config{Objects: e.objs, Redis: e.rdb, Catalog: "bench", Logger: quietLogger(), Table: manifesttable.Config{Engine: sqlengine.Config{MemoryLimit: "2GB"}}})
	if err != nil {
		e.close()
		return nil, nil, err
	}
	return svc, func() { _ = svc.Close(); e.close() }, nil
}
