package server

import (
	"errors"
	"time"

	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/obs"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/objstore"
	"github.com/flightns/flightns/redisclaim"
)

// The observers below plug the core's hooks into the metrics: obs knows
// none of the packages it observes, and these adapters are the one place
// that knows both.

// claimObserver is the claim store's hook.
func claimObserver(m *obs.Metrics) *redisclaim.Observer {
	return &redisclaim.Observer{
		Claim:    m.Claimed,
		Finalize: m.Finalized,
		Recovery: func(st redisclaim.RecoveryStats, err error) { m.Recovered(st.Duration, err) },
	}
}

// storeObserver is the object store's hook: failures by operation; "not
// found" and "already exists" are answers, not failures.
func storeObserver(m *obs.Metrics) objstore.ObserveFunc {
	return func(op objstore.Op, _ string, _ time.Duration, err error) {
		if err != nil && !errors.Is(err, objstore.ErrNotFound) && !errors.Is(err, objstore.ErrAlreadyExists) {
			m.StoreFailed(string(op))
		}
	}
}

// tableObserver is the __manifest table's hook: every group commit this
// process writes, and the opened table, whose maintenance totals the
// aggregate gauges read at each scrape (the last table opened).
func tableObserver(m *obs.Metrics) *manifesttable.Observer {
	return &manifesttable.Observer{
		Segment: m.GroupCommitted,
		Opened: func(t *manifesttable.Table) {
			m.MaintenanceFrom(func() obs.Maintenance {
				mt := t.MaintenanceTotals()
				return obs.Maintenance{NeedingCompaction: mt.NeedingCompaction, Chains: mt.Chains, Versions: mt.Versions,
					SmallFragments: mt.SmallFragments, DeletedRows: mt.DeletedRows, Unread: mt.Unread}
			})
		},
	}
}

// maintainObserver is the maintainer's hook.
func maintainObserver(m *obs.Metrics) func(namespace.MaintainReport) {
	return func(r namespace.MaintainReport) {
		m.MaintainerPassed(obs.MaintainerPass{Pruned: r.Pruned, CleanedVersions: r.CleanedVersions, Cleanups: r.Cleanups,
			Failed: r.Failed, Deleted: r.Deleted, Bytes: r.Bytes, Took: r.Took})
	}
}
