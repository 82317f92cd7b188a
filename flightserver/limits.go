package flightserver

import (
	"fmt"
	"time"
)

// Limits bound what one client can ask of the server. Each breach is an
// error that names the limit.
type Limits struct {
	// MaxMessageBytes bounds one gRPC message either way (a request, an
	// action body, one result batch). Default 16 MiB.
	MaxMessageBytes int
	// MaxResultRows and MaxResultBytes bound one query's result (default
	// 10,000,000 rows and 2 GiB); a query past either fails with
	// ResourceExhausted after the batches already sent.
	MaxResultRows  int64
	MaxResultBytes int64
	// QueryTimeout bounds one query's run, streaming included (default 60 s).
	QueryTimeout time.Duration
	// StalledResultTimeout is how long a query waits for its client to
	// take the next batch before it is stopped and its slot freed
	// (default 10 s).
	StalledResultTimeout time.Duration
	// MaxPreparedStatements bounds the open prepared statements (default
	// 10,000); PreparedTTL is how long an unused one lives (default 15 min).
	MaxPreparedStatements int
	PreparedTTL           time.Duration
	// MaxStartedQueries bounds the queries GetFlightInfo started that wait
	// for their DoGet, each holding one of the SQL engine's slots (default
	// a quarter of its MaxQueries, rounded down: none below 4); past it,
	// GetFlightInfo only plans. Unfetched tickets never hold more slots.
	// (How many queries run at once is the engine's one bound:
	// SQL.MaxQueries.)
	MaxStartedQueries int
	// MaxUnfetchedResults bounds the plans (plan_scan) made and not yet
	// fetched by DoGet (default 1,024).
	MaxUnfetchedResults int
	// The per-principal shares of the three pools above, so that one
	// caller cannot fill a pool every caller needs: past its share a
	// principal's GetFlightInfo only plans (started queries), its PlanScan
	// fails with Throttling (unfetched plans) and so does its
	// CreatePreparedStatement (prepared statements), while the others go
	// on. Default a quarter of the pool's limit (at least 1). With
	// authentication off every caller is the one anonymous principal,
	// whose share is the whole pool.
	MaxStartedQueriesPerPrincipal     int
	MaxUnfetchedResultsPerPrincipal   int
	MaxPreparedStatementsPerPrincipal int
	// MaxMetadataBytes bounds the metadata (headers) of one call, as
	// HTTP/2's SETTINGS_MAX_HEADER_LIST_SIZE: a call past it is refused
	// before any handler runs (default 64 KiB).
	MaxMetadataBytes int
}

// Validate refuses limits New cannot serve with, naming the field: a
// negative one (0 is unset: EnsureDefaults fills it), and a
// per-principal share above its pool (both set), which no principal
// could use. New calls it before EnsureDefaults; server.Config.Validate
// after.
func (l *Limits) Validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"MaxMessageBytes", int64(l.MaxMessageBytes)},
		{"MaxResultRows", l.MaxResultRows},
		{"MaxResultBytes", l.MaxResultBytes},
		{"QueryTimeout", int64(l.QueryTimeout)},
		{"StalledResultTimeout", int64(l.StalledResultTimeout)},
		{"MaxPreparedStatements", int64(l.MaxPreparedStatements)},
		{"PreparedTTL", int64(l.PreparedTTL)},
		{"MaxStartedQueries", int64(l.MaxStartedQueries)},
		{"MaxUnfetchedResults", int64(l.MaxUnfetchedResults)},
		{"MaxStartedQueriesPerPrincipal", int64(l.MaxStartedQueriesPerPrincipal)},
		{"MaxUnfetchedResultsPerPrincipal", int64(l.MaxUnfetchedResultsPerPrincipal)},
		{"MaxPreparedStatementsPerPrincipal", int64(l.MaxPreparedStatementsPerPrincipal)},
		{"MaxMetadataBytes", int64(l.MaxMetadataBytes)},
	} {
		if f.v < 0 {
			return fmt.Errorf("flightserver: Limits.%s is negative (0: the default)", f.name)
		}
	}
	for _, s := range []struct {
		share, pool int
		name        string
	}{
		{l.MaxStartedQueriesPerPrincipal, l.MaxStartedQueries, "MaxStartedQueries"},
		{l.MaxUnfetchedResultsPerPrincipal, l.MaxUnfetchedResults, "MaxUnfetchedResults"},
		{l.MaxPreparedStatementsPerPrincipal, l.MaxPreparedStatements, "MaxPreparedStatements"},
	} {
		if s.share > 0 && s.pool > 0 && s.share > s.pool {
			return fmt.Errorf("flightserver: Limits.%sPerPrincipal (%d) exceeds Limits.%s (%d): a principal's share is part of the pool", s.name, s.share, s.name, s.pool)
		}
	}
	return nil
}

// quarter is the default per-principal share of a pool of n.
func quarter(n int) int { return max(1, n/4) }

// EnsureDefaults fills the limits that are unset (zero).
func (l *Limits) EnsureDefaults() {
	if l.MaxMessageBytes == 0 {
		l.MaxMessageBytes = 16 << 20
	}
	if l.MaxResultRows == 0 {
		l.MaxResultRows = 10_000_000
	}
	if l.MaxResultBytes == 0 {
		l.MaxResultBytes = 2 << 30
	}
	if l.QueryTimeout == 0 {
		l.QueryTimeout = time.Minute
	}
	if l.StalledResultTimeout == 0 {
		l.StalledResultTimeout = 10 * time.Second
	}
	if l.MaxPreparedStatements == 0 {
		l.MaxPreparedStatements = 10_000
	}
	if l.PreparedTTL == 0 {
		l.PreparedTTL = 15 * time.Minute
	}
	if l.MaxUnfetchedResults == 0 {
		l.MaxUnfetchedResults = 1024
	}
	if l.MaxUnfetchedResultsPerPrincipal == 0 {
		l.MaxUnfetchedResultsPerPrincipal = quarter(l.MaxUnfetchedResults)
	}
	if l.MaxPreparedStatementsPerPrincipal == 0 {
		l.MaxPreparedStatementsPerPrincipal = quarter(l.MaxPreparedStatements)
	}
	if l.MaxMetadataBytes == 0 {
		l.MaxMetadataBytes = 64 << 10
	}
}
