package api

// GetTableStatsRequest asks for a table's statistics at the latest
// version of a branch (main when none is named).
type GetTableStatsRequest struct {
	Common
	ID     ID     `json:"id"`
	Branch string `json:"branch,omitempty"`
}

// GetTableStatsResponse is the spec's table statistics.
type GetTableStatsResponse struct {
	TotalBytes    int64         `json:"total_bytes"`
	NumRows       int64         `json:"num_rows"`
	NumIndices    int64         `json:"num_indices"`
	FragmentStats FragmentStats `json:"fragment_stats"`
}

// FragmentStats describes a version's fragments.
type FragmentStats struct {
	NumFragments      int64           `json:"num_fragments"`
	NumSmallFragments int64           `json:"num_small_fragments"`
	Lengths           FragmentSummary `json:"lengths"`
}

// FragmentSummary is the distribution of rows over fragments.
type FragmentSummary struct {
	Min  int64 `json:"min"`
	Max  int64 `json:"max"`
	Mean int64 `json:"mean"`
	P25  int64 `json:"p25"`
	P50  int64 `json:"p50"`
	P75  int64 `json:"p75"`
	P99  int64 `json:"p99"`
}

// TableBasicStats is DescribeTable's summary of a version.
type TableBasicStats struct {
	NumDeletedRows int64 `json:"num_deleted_rows"`
	NumFragments   int64 `json:"num_fragments"`
}
