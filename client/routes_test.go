package client

import (
	"testing"

	"github.com/flightns/flightns/internal/namespace"
)

// The client's routes are the server's: every operation of the registry
// has its path here, under its name (but the deprecated CreateEmptyTable,
// which is DeclareTable), and nothing else is routed.
func TestRoutesAreTheServerRegistrys(t *testing.T) {
	served := map[string]bool{}
	for _, o := range namespace.Ops {
		served[o.Name] = true
		path, ok := routes[o.Name]
		switch {
		case o.Name == "CreateEmptyTable":
			if ok {
				t.Errorf("the deprecated CreateEmptyTable has a route: %q", path)
			}
		case !ok:
			t.Errorf("operation %s has no route in the client", o.Name)
		case path != o.Path:
			t.Errorf("operation %s: the client posts to %q, the server serves %q", o.Name, path, o.Path)
		}
	}
	for name := range routes {
		if !served[name] {
			t.Errorf("the client routes %s, which the server does not serve", name)
		}
	}
}
