package api

import (
	"slices"
	"strings"

	"github.com/flightns/flightns/nserror"
)

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

// Validate refuses a request with a malformed filter: an id that is no
// id, or a type that is none of EventTypes (each once), so that what a
// filter holds is bounded by what the feed can carry.
func (r ChangesRequest) Validate() error {
	for _, id := range []ID{r.Namespace, r.Table} {
		if len(id) > 0 {
			if err := id.Validate("filter"); err != nil {
				return err
			}
		}
	}
	for i, t := range r.Types {
		if !slices.Contains(EventTypes, t) {
			if len(t) > 64 {
				t = t[:64] + "…"
			}
			return nserror.New(nserror.InvalidInput, "the change feed has no event type %q (its types: %s)", t, strings.Join(EventTypes, ", "))
		}
		if slices.Contains(r.Types[:i], t) {
			return nserror.New(nserror.InvalidInput, "the change feed's type filter names %q twice", t)
		}
	}
	return nil
}
