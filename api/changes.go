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
}
