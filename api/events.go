package api

import "time"

// Event is one committed change of the catalog, as the change feed
// delivers it: its catalog sequence (the order of the feed, shared by the
// events of one change), when and by whom it was made, what it did, and
// to what. An event exists if and only if its change committed.
type Event struct {
	Seq       uint64    `json:"seq"`
	Time      time.Time `json:"time"`
	Type      string    `json:"type"`
	ID        ID        `json:"id,omitempty"`
	Principal string    `json:"principal,omitempty"`
	// TxnID names the multi-table transaction the change was part of.
	TxnID string `json:"txn_id,omitempty"`
	// Location is a table's directory under the catalog root (created,
	// registered, dropped tables; a version of a directory no table has).
	Location string `json:"location,omitempty"`
	// From is a renamed table's old id.
	From ID `json:"from,omitempty"`
	// Branch, Version, ManifestPath and ManifestSize describe a table
	// version (Branch "" for main).
	Branch       string `json:"branch,omitempty"`
	Version      uint64 `json:"version,omitempty"`
	ManifestPath string `json:"manifest_path,omitempty"`
	ManifestSize int64  `json:"manifest_size,omitempty"`
	// Versions are the versions a deletion or a cleanup forgot.
	Versions []uint64 `json:"versions,omitempty"`
	// Tag names a tag (it points to Branch's Version).
	Tag string `json:"tag,omitempty"`
	// FromBranch and FromVersion are what a branch was created from ("":
	// main), or the version a restore brought back.
	FromBranch  string `json:"from_branch,omitempty"`
	FromVersion uint64 `json:"from_version,omitempty"`
	// Grantee (a principal) or Group, and Role, describe a grant on the
	// namespace ID (Role "" when taken away).
	Grantee string `json:"grantee,omitempty"`
	Group   string `json:"group,omitempty"`
	Role    string `json:"role,omitempty"`
	// Files and Bytes are what a cleanup deleted.
	Files int   `json:"files,omitempty"`
	Bytes int64 `json:"bytes,omitempty"`
	// Properties are the properties of an updated namespace.
	Properties Properties `json:"properties,omitempty"`
	// LostThrough ends the sequences an EventSequencesLost names (from
	// Seq): the commit log lost them before they were durable. What
	// storage proves they committed (table versions) follows as events of
	// Seq.
	LostThrough uint64 `json:"lost_through,omitempty"`
}

// The types of events.
const (
	EventNamespaceCreated   = "namespace.created"
	EventNamespaceDropped   = "namespace.dropped"
	EventNamespaceUndropped = "namespace.undropped"
	EventNamespaceUpdated   = "namespace.updated" // its properties replaced (overwrite)
	EventTableDeclared      = "table.declared"
	EventTableRegistered    = "table.registered"
	EventTableDropped       = "table.dropped"
	EventTableDeregistered  = "table.deregistered"
	EventTableRenamed       = "table.renamed"
	EventTableUndropped     = "table.undropped"
	EventVersionCreated     = "table.version.created"
	EventVersionsDeleted    = "table.versions.deleted"
	EventTableRestored      = "table.restored"
	EventTableCleaned       = "table.cleaned"
	EventTagCreated         = "table.tag.created"
	EventTagUpdated         = "table.tag.updated"
	EventTagDeleted         = "table.tag.deleted"
	EventBranchCreated      = "table.branch.created"
	EventBranchDeleted      = "table.branch.deleted"
	EventGrantCreated       = "grant.created" // or changed: a grantee holds one role on a namespace
	EventGrantDeleted       = "grant.deleted"
	EventSequencesLost      = "catalog.sequences.lost"
)

// EventTypes are the types of every event the feed carries, in the order
// above, then the compaction jobs' (a change feed filter names only
// these).
var EventTypes = []string{
	EventNamespaceCreated, EventNamespaceDropped, EventNamespaceUndropped, EventNamespaceUpdated,
	EventTableDeclared, EventTableRegistered, EventTableDropped, EventTableDeregistered, EventTableRenamed, EventTableUndropped,
	EventVersionCreated, EventVersionsDeleted, EventTableRestored, EventTableCleaned,
	EventTagCreated, EventTagUpdated, EventTagDeleted, EventBranchCreated, EventBranchDeleted,
	EventGrantCreated, EventGrantDeleted, EventSequencesLost,
	EventCompactionClaimed, EventCompactionRenewed, EventCompactionCompleted, EventCompactionFailed, EventCompactionExpired,
}
