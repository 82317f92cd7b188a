package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/objstore"
)

// The sizes of cleanup-s3: tables × versions per mode (tests make them
// smaller; --quick uses cleanupQuick).
var (
	cleanupTables   = 32
	cleanupVersions = 100
	cleanupQuick    = [2]int{4, 20}
)

// cleanupGrace is the grace period of the cleanup benchmarks' service:
// the shortest flightns accepts (cleanup.MinGrace, `serve
// --cleanup-grace 1h`).
const cleanupGrace = time.Hour

// cleanupRetain is the versions each cleanup keeps per table
// (retain_versions): the latest alone, as Lance's cleanup_old_versions
// with older_than 0 keeps it.
const cleanupRetain = 1

// stagingSwept is how long after its commit a staging object is gone
// (redisclaim sweeps them a second after they are queued).
const stagingSwept = 1500 * time.Millisecond

// cleanupS3Scenario measures flightns's own cleanup (CleanupTable) on a
// MinIO bucket: tables of real Lance manifests, each cleaned up in turn
// as the maintainer does, once with the real clock (only the pruned
// manifests can go: every other file is younger than the grace period,
// and MinIO's modification times cannot be backdated) and once with the
// service's clock past the grace period (the pruned versions'
// transaction files go as well).
func cleanupS3Scenario() Scenario {
	return Scenario{
		Name: "cleanup-s3",
		Description: fmt.Sprintf("CleanupTable on MinIO (through a counting proxy) over %d tables × %d versions of real Lance manifests, one table at a time, keeping %d: "+
			"versions pruned/s, objects deleted/s, S3 requests per pruned version, wall time; with the real clock (manifests only) and with the clock past the %s grace period",
			cleanupTables, cleanupVersions, cleanupRetain, cleanupGrace),
		Run:   runCleanupS3,
		Steps: func(Config) int { return 4 },
	}
}

// cleanupMode is one half of cleanup-s3.
type cleanupMode struct {
	backend string
	ahead   time.Duration // how far the service's clock runs ahead while it cleans up
	what    string
}

var cleanupModes = []cleanupMode{
	{"minio", 0, "the real clock: the pruned manifests go, every other file is younger than the grace period and stays"},
	{"minio-after-grace", cleanupGrace + time.Minute, "the service's clock " + (cleanupGrace + time.Minute).String() +
		" ahead while it cleans up, as if the cleanup ran after the grace period: the pruned versions' transaction files go too"},
}

func runCleanupS3(ctx context.Context, cfg Config, rep *Report) error {
	tables, versions := cleanupTables, cleanupVersions
	if cfg.Quick {
		tables, versions = cleanupQuick[0], cleanupQuick[1]
	}
	rdb, stop, err := scenarioRedis(ctx, cfg)
	if err != nil {
		return err
	}
	defer stop()
	objs, log, _, stopS3, err := tracedMinIO(ctx)
	if err != nil {
		return err
	}
	defer stopS3()
	var ahead atomic.Int64
	svc, err := namespace.Open(ctx, namespace.Config{Objects: objs, Redis: rdb, Catalog: "bench-cleanup", Logger: quietLogger(), CleanupGrace: cleanupGrace, Now: func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }, Table: manifesttable.Config{Engine: sqlengine.Config{MemoryLimit: "1GB"}}})
	if err != nil {
		return err
	}
	defer func() { _ = svc.Close() }()

	sets := map[string]*lanceTables{}
	for _, m := range cleanupModes {
		if !cfg.wants(m.backend) {
			continue
		}
		name := strings.ReplaceAll(m.backend, "-", "_")
		if sets[m.backend], err = newLanceTables(ctx, svc, objs, name, "t", tables, nil); err != nil {
			return err
		}
	}
	start := time.Now()
	for _, m := range cleanupModes {
		if t := sets[m.backend]; t != nil {
			if err := t.build(ctx, versions, 8); err != nil {
				return err
			}
		}
	}
	built := time.Since(start)
	if err := settle(ctx, svc); err != nil {
		return err
	}
	// The commits' staging objects are swept in batches a second after
	// their commits (redisclaim's sweeper): wait, so that the cleanups
	// find the tables as a writer left them.
	time.Sleep(stagingSwept)
	for _, m := range cleanupModes {
		t := sets[m.backend]
		if t == nil {
			continue
		}
		ahead.Store(int64(m.ahead))
		res, err := cleanupAll(ctx, svc, t, log)
		ahead.Store(0)
		if err != nil {
			return fmt.Errorf("%s: %w", m.backend, err)
		}
		left, err := manifestsLeft(ctx, objs, t)
		if err != nil {
			return err
		}
		setup := fmt.Sprintf("%d tables × %d versions of real Lance manifests (built by %d writers in %.1f s, every set of this run together), keeping %d each; %s; "+
			"one CleanupTable at a time; %d manifests left after it",
			tables, versions, 8, built.Seconds(), cleanupRetain, m.what, left)
		v, o := res.results(setup)
		v.Backend, o.Backend = m.backend, m.backend
		cfg.add(rep, v)
		cfg.add(rep, o)
	}
	return nil
}

// cleanupRun is what cleaning up one set of tables did.
type cleanupRun struct {
	tables, failed      int
	pruned, deleted     int
	planned             int   // other files the plans found (manifests apart)
	bytes               int64 // deleted
	took                []time.Duration
	wall                time.Duration // first cleanup's start to last's end
	count               s3Count       // requests, cleanups to catalog durable
	firstError          string
	settled             time.Duration // the catalog's segments after the last cleanup
	requestsWhileSettle int
}

// cleanupAll cleans up every table of t, one at a time, and counts the
// S3 requests from the first cleanup until the catalog changes they made
// are durable.
func cleanupAll(ctx context.Context, svc *namespace.Service, t *lanceTables, log *requestLog) (cleanupRun, error) {
	retain := cleanupRetain
	r := cleanupRun{tables: len(t.ids)}
	log.reset()
	start := time.Now()
	for _, id := range t.ids {
		t0 := time.Now()
		resp, err := svc.CleanupTable(ctx, api.CleanupTableRequest{ID: id, OlderThan: "1ms", RetainVersions: &retain})
		r.took = append(r.took, time.Since(t0))
		if err != nil {
			r.failed++
			if r.firstError == "" {
				r.firstError = fmt.Sprintf("%s: %v", id, err)
			}
		}
		if resp == nil {
			continue
		}
		for _, vs := range resp.Pruned {
			r.pruned += len(vs)
		}
		r.deleted += resp.FilesDeleted
		r.planned += resp.Files
		r.bytes += resp.BytesDeleted
	}
	r.wall = time.Since(start)
	if err := settle(ctx, svc); err != nil {
		return r, err
	}
	end := time.Now()
	r.settled = end.Sub(start) - r.wall
	reqs := log.between(start, end)
	r.count = s3Count{commits: int64(r.pruned), byKind: map[string]int{}}
	for _, q := range reqs {
		r.count.byKind[s3Kind(q)]++
		if q.Start.After(start.Add(r.wall)) {
			r.requestsWhileSettle++
		}
	}
	return r, nil
}

// results are the run's two rows: versions pruned, and objects deleted.
func (r cleanupRun) results(setup string) (versions, objects Result) {
	sorted := slices.Clone(r.took)
	slices.Sort(sorted)
	secs := r.wall.Seconds()
	base := Result{Clients: 1, Seconds: secs, Errors: int64(r.failed), FirstError: r.firstError,
		P50Ms: pct(sorted, 0.50), P95Ms: pct(sorted, 0.95), P99Ms: pct(sorted, 0.99)}
	total := r.count.total()
	versions, objects = base, base
	versions.Scenario, versions.Ops = "cleanup-s3/versions", int64(r.pruned)
	objects.Scenario, objects.Ops = "cleanup-s3/objects", int64(r.deleted)
	if secs > 0 {
		versions.OpsPerSec, objects.OpsPerSec = float64(r.pruned)/secs, float64(r.deleted)/secs
	}
	if r.pruned > 0 {
		versions.S3PerOp = float64(total) / float64(r.pruned)
	}
	if r.deleted > 0 {
		objects.S3PerOp = float64(total) / float64(r.deleted)
	}
	others := r.deleted - r.pruned
	summary := fmt.Sprintf("%s. Wall time %.2f s for %d tables (%.1f tables/s; p50/p95/p99 are per table); %d versions pruned (%.0f/s), %d objects deleted (%.0f/s: %d manifests, %d other files of the %d the plans listed, %.1f KiB); "+
		"S3 requests from the first cleanup until its catalog changes were durable (%.2f s later, %d requests of them meanwhile): %d, %.2f per pruned version, %s",
		setup, secs, r.tables, float64(r.tables)/max(secs, 1e-9), r.pruned, versions.OpsPerSec, r.deleted, objects.OpsPerSec, r.pruned, others, r.planned,
		float64(r.bytes)/1024, r.settled.Seconds(), r.requestsWhileSettle, total, versions.S3PerOp, r.count.breakdownPer("pruned version"))
	versions.Note, objects.Note = "versions pruned per second; "+summary, "objects deleted per second (s3_requests_per_op: per object deleted); "+summary
	return versions, objects
}

// breakdownPer is the requests by kind per unit ("pruned version").
func (c s3Count) breakdownPer(unit string) string {
	if c.commits == 0 {
		return "none pruned"
	}
	keys := slices.Collect(maps.Keys(c.byKind))
	slices.SortFunc(keys, func(a, b string) int {
		if c.byKind[a] != c.byKind[b] {
			return c.byKind[b] - c.byKind[a]
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d (%.3f)", k, c.byKind[k], float64(c.byKind[k])/float64(c.commits)))
	}
	return fmt.Sprintf("by kind, in all and per %s: %s", unit, strings.Join(parts, ", "))
}

// manifestsLeft counts the final manifests left in the tables of t.
func manifestsLeft(ctx context.Context, objs *objstore.Store, t *lanceTables) (int, error) {
	n := 0
	for _, key := range t.keys {
		objects, err := objs.ListAll(ctx, key+"/_versions/")
		if err != nil {
			return 0, err
		}
		for _, o := range objects {
			if strings.HasSuffix(o.Key, ".manifest") {
				n++
			}
		}
	}
	return n, nil
}
