package obs

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Maintenance is the catalog's maintenance signals summed over every
// table and branch (the __manifest table's totals), as the gauges show
// them.
type Maintenance struct {
	// NeedingCompaction is the chains whose latest version needs a
	// compaction; Chains the chains with a version record, Versions
	// those records.
	NeedingCompaction, Chains, Versions int
	// SmallFragments and DeletedRows sum over the latest versions whose
	// fragments were read; Unread counts the chains whose were not.
	SmallFragments, DeletedRows uint64
	Unread                      int
}

// maintenanceGauges are the catalog's maintenance signals as aggregate
// gauges (Maintenance): one series each, never one per table, whose
// count has no bound. They are read from the catalog at every scrape, so
// every server of a catalog reports the same values (aggregate them
// across servers with max, not sum).
type maintenanceGauges struct {
	source atomic.Pointer[func() Maintenance] // reads the totals; nil: no catalog yet

	needing, chains, versions, small, deleted, unread *prometheus.Desc
}

func newMaintenanceGauges() *maintenanceGauges {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &maintenanceGauges{
		needing: d("flightns_tables_needing_compaction",
			"Tables whose latest version needs a compaction (table_maintenance.needs_compaction; each Lance branch counts as a table of its own)."),
		chains: d("flightns_table_version_chains",
			"Version chains of tables (main, and each Lance branch) with at least one version record."),
		versions: d("flightns_table_version_records",
			"Version records of every table in the catalog (main and branches): what cleanups remove."),
		small: d("flightns_table_small_fragments",
			"Small fragments (fewer than 100,000 physical rows) of the latest version of every table and branch."),
		deleted: d("flightns_table_deleted_rows",
			"Rows marked deleted (not yet materialized by a compaction) in the latest version of every table and branch."),
		unread: d("flightns_table_maintenance_unread",
			"Tables and branches whose latest version's fragments are not read yet (their signals are unknown)."),
	}
}

// Describe implements prometheus.Collector.
func (g *maintenanceGauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{g.needing, g.chains, g.versions, g.small, g.deleted, g.unread} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: nothing until a source is set.
func (g *maintenanceGauges) Collect(ch chan<- prometheus.Metric) {
	src := g.source.Load()
	if src == nil {
		return
	}
	m := (*src)()
	for d, v := range map[*prometheus.Desc]float64{
		g.needing: float64(m.NeedingCompaction), g.chains: float64(m.Chains), g.versions: float64(m.Versions),
		g.small: float64(m.SmallFragments), g.deleted: float64(m.DeletedRows), g.unread: float64(m.Unread),
	} {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
}

// maintainerMetrics count what the maintainer does, in the process that
// holds its lease.
type maintainerMetrics struct {
	passes   prometheus.Counter
	took     prometheus.Histogram
	pruned   *prometheus.CounterVec // by: lance, flightns
	cleanups *prometheus.CounterVec // result: ok, error
	objects  prometheus.Counter
	bytes    prometheus.Counter
}

func newMaintainerMetrics() *maintainerMetrics {
	m := &maintainerMetrics{
		passes: prometheus.NewCounter(prometheus.CounterOpts{Name: "flightns_maintainer_passes_total",
			Help: "Passes of the maintainer run by this process (it holds the catalog's maintainer lease)."}),
		took: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "flightns_maintainer_pass_duration_seconds",
			Help: "Duration of the maintainer's passes in this process.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 20)}),
		pruned: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flightns_versions_pruned_total",
			Help: "Version records that left the catalog because their versions were pruned, by who pruned them: lance (its cleanup deleted the manifests; followed) or flightns (a cleanup under retention)."}, []string{"by"}),
		cleanups: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flightns_cleanups_total",
			Help: "Cleanups of tables run by the maintainer of this process, by result (ok, error)."}, []string{"result"}),
		objects: prometheus.NewCounter(prometheus.CounterOpts{Name: "flightns_cleanup_deleted_objects_total",
			Help: "Objects (manifests, transaction, deletion, index and data files) the maintainer's cleanups deleted."}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "flightns_cleanup_deleted_bytes_total",
			Help: "Bytes of the objects the maintainer's cleanups deleted."}),
	}
	for _, by := range []string{"lance", "flightns"} {
		m.pruned.WithLabelValues(by)
	}
	for _, r := range []string{"ok", "error"} {
		m.cleanups.WithLabelValues(r)
	}
	return m
}

func (m *maintainerMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.passes, m.took, m.pruned, m.cleanups, m.objects, m.bytes}
}

// MaintenanceFrom makes the maintenance gauges read totals from src at
// every scrape (the last source set wins; none set: no series).
func (m *Metrics) MaintenanceFrom(src func() Maintenance) { m.maintenance.source.Store(&src) }

// MaintainerPass is what one pass of the maintainer did.
type MaintainerPass struct {
	// Pruned is the version records that left because Lance pruned their
	// manifests; CleanedVersions those flightns's own cleanups pruned.
	Pruned, CleanedVersions int
	// Cleanups and Failed count the tables cleaned up and the cleanups
	// that failed; Deleted and Bytes the objects the cleanups deleted.
	Cleanups, Failed, Deleted int
	Bytes                     int64
	Took                      time.Duration
}

// MaintainerPassed records one pass of the maintainer.
func (m *Metrics) MaintainerPassed(p MaintainerPass) {
	mm := m.maintainer
	mm.passes.Inc()
	mm.took.Observe(p.Took.Seconds())
	mm.pruned.WithLabelValues("lance").Add(float64(p.Pruned))
	mm.pruned.WithLabelValues("flightns").Add(float64(p.CleanedVersions))
	mm.cleanups.WithLabelValues("ok").Add(float64(p.Cleanups))
	mm.cleanups.WithLabelValues("error").Add(float64(p.Failed))
	mm.objects.Add(float64(p.Deleted))
	mm.bytes.Add(float64(p.Bytes))
}
