package api

// CleanupTableRequest asks for a cleanup of a table's old versions
// (flightns's own operation; admins only).
type CleanupTableRequest struct {
	Common
	ID ID `json:"id"`
	// DryRun reports what a cleanup would delete, and deletes nothing.
	DryRun bool `json:"dry_run,omitempty"`
	// OlderThan and RetainVersions replace the table's retention
	// properties for this run (same forms: "7d", "36h"; K ≥ 1). Without
	// OlderThan the table's policy applies; a table without one is
	// InvalidInput.
	OlderThan      string `json:"older_than,omitempty"`
	RetainVersions *int   `json:"retain_versions,omitempty"`
}

// CleanupTableResponse is what a cleanup did (or, dry, would do).
type CleanupTableResponse struct {
	DryRun bool `json:"dry_run"`
	// CutoffMillis: versions committed before it were old enough to go.
	CutoffMillis int64 `json:"cutoff_millis"`
	// Pruned are the versions the cleanup removed, per branch ("" main).
	Pruned map[string][]uint64 `json:"pruned_versions"`
	// KeptVersions counts the versions left, every branch together.
	KeptVersions int `json:"kept_versions"`
	// Files and FileBytes are the unreferenced files the plan deletes
	// (manifests apart); FilesDeleted and BytesDeleted what was deleted,
	// manifests included.
	Files        int   `json:"files"`
	FileBytes    int64 `json:"file_bytes"`
	FilesDeleted int   `json:"files_deleted"`
	BytesDeleted int64 `json:"bytes_deleted"`
	// Spared counts the files the plan deleted but a check before the
	// deletion found referenced (written since the plan).
	Spared int `json:"spared"`
}
