package api

// BranchContents is a branch in ListTableBranches.
type BranchContents struct {
	ParentBranch  string            `json:"parentBranch,omitempty"`
	ParentVersion int64             `json:"parentVersion"`
	CreateAt      int64             `json:"createAt"`
	ManifestSize  int64             `json:"manifestSize"`
	Metadata      map[string]string `json:"metadata,omitempty"`
}

// ListTableBranchesRequest lists a table's branches.
type ListTableBranchesRequest struct {
	Common
	ID        ID     `json:"id"`
	PageToken string `json:"page_token,omitempty"`
	Limit     *int   `json:"limit,omitempty"`
}

// ListTableBranchesResponse holds a page of branches, by name.
type ListTableBranchesResponse struct {
	Branches  map[string]BranchContents `json:"branches"`
	PageToken string                    `json:"page_token,omitempty"`
}
