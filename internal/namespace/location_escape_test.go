package namespace

import (
	"context"
	"fmt"
	"testing"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/nserror"
)

// A location with a percent-encoded dot segment is refused: DescribeTable
// hands it back as a URI, and URL parsers (Lance's among them) read
// %2e%2e as "..", so file:///root/%2e%2e/x would be outside the root.
// (Found by the reliability suite's hostile-input test.)
func TestEncodedDotSegmentsInLocationsAreRefused(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	root := e.objs.LocalDir()
	for i, loc := range []string{"%2e%2e/outside", "%2E%2E/outside", "a/%2e%2e/%2e%2e/outside", ".%2e/x", "%2e/x",
		"file://" + root + "/%2e%2e/outside", e.s.root.objectPath("%2e%2e/x"),
		"%252e%252e/outside", "a%2fb", "50%/x", "a?b=c", "a#frag", e.s.root.objectPath("t?x")} {
		_, err := e.s.DeclareTable(ctx, api.DeclareTableRequest{ID: id(fmt.Sprintf("t%d", i)), Location: loc})
		wantCode(t, "declaring at "+loc, err, nserror.InvalidInput)
	}
}
