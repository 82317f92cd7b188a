package namespace

import (
	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/nserror"
)

// tableID validates a table id (not the root).
func tableID(id api.ID) error {
	if id.IsRoot() {
		return nserror.New(nserror.InvalidInput, "a table id needs at least a name")
	}
	return id.Validate("table")
}
