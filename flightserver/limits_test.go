package flightserver

import (
	"testing"
	"time"

	"github.com/flightns/flightns/internal/testutil/configtest"
)

func TestLimitsValidateRefusesNegativeLimitsAndSharesAbovePools(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits Limits
		want   string // "" accepted, else a part of the error
	}{
		{"the zero value (every default)", Limits{}, ""},
		{"a share equal to its pool", Limits{MaxUnfetchedResults: 8, MaxUnfetchedResultsPerPrincipal: 8}, ""},
		{"a share with its pool unset", Limits{MaxStartedQueriesPerPrincipal: 3}, ""},
		{"negative message size", Limits{MaxMessageBytes: -1}, "Limits.MaxMessageBytes is negative"},
		{"negative result rows", Limits{MaxResultRows: -1}, "Limits.MaxResultRows is negative"},
		{"negative result bytes", Limits{MaxResultBytes: -1}, "Limits.MaxResultBytes is negative"},
		{"negative query timeout", Limits{QueryTimeout: -time.Second}, "Limits.QueryTimeout is negative"},
		{"negative stalled timeout", Limits{StalledResultTimeout: -time.Second}, "Limits.StalledResultTimeout is negative"},
		{"negative prepared statements", Limits{MaxPreparedStatements: -1}, "Limits.MaxPreparedStatements is negative"},
		{"negative prepared TTL", Limits{PreparedTTL: -time.Second}, "Limits.PreparedTTL is negative"},
		{"negative started queries", Limits{MaxStartedQueries: -1}, "Limits.MaxStartedQueries is negative"},
		{"negative unfetched results", Limits{MaxUnfetchedResults: -1}, "Limits.MaxUnfetchedResults is negative"},
		{"negative started share", Limits{MaxStartedQueriesPerPrincipal: -1}, "Limits.MaxStartedQueriesPerPrincipal is negative"},
		{"negative unfetched share", Limits{MaxUnfetchedResultsPerPrincipal: -1}, "Limits.MaxUnfetchedResultsPerPrincipal is negative"},
		{"negative prepared share", Limits{MaxPreparedStatementsPerPrincipal: -1}, "Limits.MaxPreparedStatementsPerPrincipal is negative"},
		{"negative metadata size", Limits{MaxMetadataBytes: -1}, "Limits.MaxMetadataBytes is negative"},
		{"started share above its pool", Limits{MaxStartedQueries: 2, MaxStartedQueriesPerPrincipal: 3}, "MaxStartedQueriesPerPrincipal (3) exceeds Limits.MaxStartedQueries (2)"},
		{"unfetched share above its pool", Limits{MaxUnfetchedResults: 2, MaxUnfetchedResultsPerPrincipal: 3}, "MaxUnfetchedResultsPerPrincipal (3) exceeds"},
		{"prepared share above its pool", Limits{MaxPreparedStatements: 2, MaxPreparedStatementsPerPrincipal: 3}, "MaxPreparedStatementsPerPrincipal (3) exceeds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.limits.Validate()
			configtest.Check(t, err, tc.want)
		})
	}
	var l Limits
	l.EnsureDefaults()
	if err := l.Validate(); err != nil {
		t.Fatalf("the defaults: Validate() = %v", err)
	}
}
