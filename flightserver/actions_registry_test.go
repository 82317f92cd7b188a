package flightserver

import (
	"maps"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/planner"
)

// The actions are the registries' and nothing else: DoAction runs exactly
// the operations namespace.Ops marks as actions, each with its Run, and
// ListActions lists those, planner.Ops's and the Flight SQL actions, each
// once.
func TestTheActionsAreTheRegistry(t *testing.T) {
	var want []string
	for _, o := range namespace.Ops {
		if o.Action {
			want = append(want, o.Name)
		}
	}
	if got := slices.Sorted(maps.Keys(actionsByName)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("DoAction runs %v, the registry's actions are %v", got, want)
	}
	for name, a := range actionsByName {
		if a.Run == nil {
			t.Errorf("the action %s runs nothing", name)
		}
	}

	for _, o := range planner.Ops {
		want = append(want, o.Name)
	}
	for _, a := range flightSQLActions {
		want = append(want, a.Type)
	}
	st := &listedActions{}
	if err := (&Server{}).ListActions(&flight.Empty{}, st); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.names, want) {
		t.Errorf("ListActions lists %v, want %v", st.names, want)
	}
}

// listedActions is a ListActions stream that keeps the names sent.
type listedActions struct {
	flight.FlightService_ListActionsServer
	names []string
}

func (l *listedActions) Send(a *flight.ActionType) error {
	l.names = append(l.names, a.GetType())
	return nil
}
