package api

import "time"

// Compaction jobs (flightns's own operations). flightns decides which
// tables need a compaction and hands each out as a job leased to one
// worker at a time; the worker (a Lance engine: LanceDB's optimize, say)
// compacts the table through the catalog, renews its lease while it
// works, and reports the job completed or failed. A lease that lapses
// is handed out again, its attempt counted. Every change of a job is an
// event of the change feed (the compaction.* types below), written with
// the change itself.

// The compaction operations: an operation's name on every surface (the
// Flight action's type, the metrics' op label, the REST route's key).
const (
	OpClaimCompaction     = "ClaimCompaction"
	OpHeartbeatCompaction = "HeartbeatCompaction"
	OpCompleteCompaction  = "CompleteCompaction"
	OpFailCompaction      = "FailCompaction"
	OpListCompactions     = "ListCompactions"
)

// The events of compaction jobs. Each carries the table (ID, Location)
// and, in Properties, the job: job_id, worker, attempt (a decimal), and
// reason (why it was due, or why it failed). A job's life on the feed is
// claimed, renewed at each heartbeat, then exactly one of completed,
// failed or expired (its lease lapsed and it was handed out again, or
// the table needs no compaction any more); two jobs of one table never
// overlap.
const (
	EventCompactionClaimed   = "compaction.claimed"
	EventCompactionRenewed   = "compaction.renewed"
	EventCompactionCompleted = "compaction.completed"
	EventCompactionFailed    = "compaction.failed"
	EventCompactionExpired   = "compaction.expired"
)

// The keys of a compaction event's Properties.
const (
	CompactionJobIDProperty   = "job_id"
	CompactionWorkerProperty  = "worker"
	CompactionAttemptProperty = "attempt"
	CompactionReasonProperty  = "reason"
)

// ClaimCompactionRequest asks for the next compaction job due, leased to
// Worker.
type ClaimCompactionRequest struct {
	// Worker names the claimant (any text of 1 to 256 bytes without
	// control characters): the job's heartbeat, completion or failure
	// must name it again.
	Worker string `json:"worker"`
	// LeaseSeconds is how long the job is the worker's without a
	// heartbeat (default 60, at most 3600).
	LeaseSeconds *int `json:"lease_seconds,omitempty"`
	// Namespace, when set, limits the claim to the tables inside it.
	Namespace ID `json:"namespace,omitempty"`
}

// ClaimCompactionResponse is the job claimed; Job is nil when no table
// the caller may write needs a compaction now.
type ClaimCompactionResponse struct {
	Job *CompactionJob `json:"job,omitempty"`
}

// CompactionJob is one compaction of one table, leased to a worker.
type CompactionJob struct {
	JobID string `json:"job_id"`
	// ID and Location are the table's id (as it is now: a job follows
	// its table through a rename) and its directory under the catalog
	// root.
	ID       ID     `json:"id"`
	Location string `json:"location"`
	// Reason says why the table was due: its fragments and the bound.
	Reason string `json:"reason"`
	// Version is the table's latest version (main) when it was found due,
	// Fragments its fragments under Lance's compaction target then.
	Version   uint64 `json:"version"`
	Fragments int    `json:"fragments"`
	Worker    string `json:"worker"`
	// Principal is who claimed the job (none when authentication is off):
	// only it, or an admin of the catalog, renews, completes or fails it,
	// whatever the worker's name (which the list and the feed show).
	Principal string `json:"principal,omitempty"`
	// Attempt counts the table's jobs handed out since its last one ended
	// (1, then 2 once a lease lapsed and the job was handed out again, …).
	Attempt   int       `json:"attempt"`
	ClaimedAt time.Time `json:"claimed_at"`
	// LeaseSeconds is the lease the worker asked for last (a heartbeat
	// without one renews it for as long), LeaseExpires when it lapses.
	LeaseSeconds int       `json:"lease_seconds"`
	LeaseExpires time.Time `json:"lease_expires"`
}

// HeartbeatCompactionRequest renews the lease of a job the worker holds.
type HeartbeatCompactionRequest struct {
	JobID  string `json:"job_id"`
	Worker string `json:"worker"`
	// LeaseSeconds is the lease from now (default: as claimed).
	LeaseSeconds *int `json:"lease_seconds,omitempty"`
}

// HeartbeatCompactionResponse is the renewed lease.
type HeartbeatCompactionResponse struct {
	LeaseExpires time.Time `json:"lease_expires"`
}

// CompleteCompactionRequest reports a job done.
type CompleteCompactionRequest struct {
	JobID  string `json:"job_id"`
	Worker string `json:"worker"`
	// Version is the version the compaction committed, if the worker knows
	// it (the event carries it; the table is judged afresh at its head).
	Version *uint64 `json:"version,omitempty"`
}

// FailCompactionRequest reports a job failed: the table is not handed
// out again at the version the job was claimed at.
type FailCompactionRequest struct {
	JobID  string `json:"job_id"`
	Worker string `json:"worker"`
	// Reason says why (at most 4,096 bytes are kept).
	Reason string `json:"reason"`
}

// ListCompactionsRequest lists the jobs in progress (leased, or lapsed
// and not handed out again yet) of the tables the caller may read.
type ListCompactionsRequest struct {
	// Namespace, when set, limits the list to the tables inside it.
	Namespace ID `json:"namespace,omitempty"`
}

// ListCompactionsResponse is the jobs in progress, by table id.
type ListCompactionsResponse struct {
	Jobs []CompactionJob `json:"jobs"`
}
