package namespace

import (
	"testing"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/manifesttable"
)

// The wire's id delimiter is the one __manifest joins an object_id's names
// with: an id's String is its row's object_id.
func TestTheWireDelimiterIsManifestTables(t *testing.T) {
	if api.Delimiter != manifesttable.IDSeparator {
		t.Fatalf("api.Delimiter %q, manifesttable.IDSeparator %q", api.Delimiter, manifesttable.IDSeparator)
	}
}
