package api

// TagContents is a tag in ListTableTags: the version it points to, the
// size of that version's manifest, and its branch (absent: main).
type TagContents struct {
	Branch       string `json:"branch,omitempty"`
	Version      int64  `json:"version"`
	ManifestSize int64  `json:"manifestSize"`
}

// ListTableTagsRequest lists a table's tags.
type ListTableTagsRequest struct {
	Common
	ID        ID     `json:"id"`
	PageToken string `json:"page_token,omitempty"`
	Limit     *int   `json:"limit,omitempty"`
}

// ListTableTagsResponse holds a page of tags, by name.
type ListTableTagsResponse struct {
	Tags      map[string]TagContents `json:"tags"`
	PageToken string                 `json:"page_token,omitempty"`
}

// GetTableTagVersionRequest asks which version a tag points to.
type GetTableTagVersionRequest struct {
	Common
	ID  ID     `json:"id"`
	Tag string `json:"tag"`
}

// GetTableTagVersionResponse is the version a tag points to.
type GetTableTagVersionResponse struct {
	Version int64  `json:"version"`
	Branch  string `json:"branch,omitempty"`
}

// CreateTableTagRequest creates a tag (UpdateTableTag moves one).
type CreateTableTagRequest struct {
	Common
	ID      ID     `json:"id"`
	Tag     string `json:"tag"`
	Version int64  `json:"version"`
	Branch  string `json:"branch,omitempty"`
}

// DeleteTableTagRequest deletes a tag.
type DeleteTableTagRequest struct {
	Common
	ID  ID     `json:"id"`
	Tag string `json:"tag"`
}

// TableTagResponse answers CreateTableTag, UpdateTableTag and
// DeleteTableTag.
type TableTagResponse struct {
	TransactionID string `json:"transaction_id,omitempty"`
}
