package namespace

import (
	"context"
	"strings"
	"testing"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/nserror"
)

// Every operation of the registry runs: it has its Run, a name, a route
// and a description of its own, so no surface can list an operation it
// cannot run.
func TestEveryOpHasItsRunNameRouteAndDescription(t *testing.T) {
	names, paths := map[string]bool{}, map[string]bool{}
	for _, o := range Ops {
		switch {
		case o.Name == "" || o.Path == "" || o.Desc == "":
			t.Errorf("%+v lacks a name, a path or a description", o)
		case o.Run == nil:
			t.Errorf("%s has no Run", o.Name)
		case names[o.Name]:
			t.Errorf("%s is in Ops twice", o.Name)
		case paths[o.Path]:
			t.Errorf("%s routes %s, which another operation routes", o.Name, o.Path)
		}
		names[o.Name], paths[o.Path] = true, true
	}
}

// On a route with {id}, the path's id is the request's: Run refuses a
// body id that disagrees before it reaches the service (there is none
// here), for every such operation.
func TestEveryRouteWithAnIDBindsIt(t *testing.T) {
	for _, o := range Ops {
		if o.Run == nil || !strings.Contains(o.Path, "{id}") {
			continue
		}
		_, err := o.Run(context.Background(), nil, []byte(`{"id":["body"]}`), &REST{ID: api.ID{"path"}, Query: noQuery{}})
		if nserror.CodeOf(err) != nserror.InvalidInput || !strings.Contains(err.Error(), "disagrees") {
			t.Errorf("%s with a body id that is not the path's: %v, want InvalidInput", o.Name, err)
		}
	}
}

// noQuery is a query string without parameters.
type noQuery struct{}

func (noQuery) Text(string, *string)      {}
func (noQuery) Bool(string, **bool) error { return nil }
func (noQuery) Int(string, **int) error   { return nil }
