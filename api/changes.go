package api

// ChangesRequest asks for the change feed after a sequence, narrowed by
// optional filters; a filter narrows what the caller may read, never
// widens it.
type ChangesRequest struct {
	// After is the sequence to resume after (0: from the oldest kept).
	After uint64 `json:"after,omitempty"`
	// Namespace keeps the events of objects in this namespace's subtree.
	Namespace ID `json:"namespace,omitempty"`
	// Table keeps the events of this table.
	Table ID `json:"table,omitempty"`
	// Types keeps events of these types (Event.Type).
	Types []string `json:"types,omitempty"`
	// Follow keeps the feed going as changes happen (nil: true); false
	// ends it once it has delivered every change appended before the
	// request.
	Follow *bool `json:"follow,omitempty"`
}

// Following is whether r keeps following (Follow, default true).
func (r ChangesRequest) Following() bool { return r.Follow == nil || *r.Follow }

// Validate refuses a request with a malformed filter.
func (r ChangesRequest) Validate() error {
	for _, id := range []ID{r.Namespace, r.Table} {
		if len(id) > 0 {
			if err := id.Validate("filter"); err != nil {
				return err
			}
		}
	}
	return nil
}
