package namespace

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
)

// FollowChanges calls fn with the change feed after req.After, as
// manifesttable.Table.Follow does, keeping only the events req's filters
// keep and the caller of ctx may read: an event of a namespace or table
// it reads (its role, or a grant on it or above; a grant's event only for
// an admin of its namespace), a rename's old name only
// when it reads that too, and an event that names no object (a version of
// a directory no table has) only for a reader of the whole catalog.
// Grants are read again for every call of fn, so a revoked grant stops
// what the feed shows next. through still moves on over what is hidden,
// so that resuming never reads it again. When req does not follow, it
// returns nil once it has delivered every change appended to the commit
// log before the call (each as it becomes durable).
func (s *Service) FollowChanges(ctx context.Context, req api.ChangesRequest, fn func(events []api.Event, through uint64) error) error {
	if err := req.Validate(); err != nil {
		return err
	}
	p, ok := auth.PrincipalFrom(ctx)
	all := !ok || p.Role >= auth.Read // no principal: authentication is off
	until := uint64(math.MaxUint64)
	if !req.Following() {
		var err error
		if until, err = s.table.Head(ctx); err != nil {
			return err
		}
		if until <= req.After {
			return nil
		}
		s.table.Flush(until)
	}
	err := s.table.Follow(ctx, req.After, func(events []api.Event, through uint64) error {
		var gs auth.Grants
		if ok && p.Role < auth.Admin { // what it reads, or administers, by its grants
			var err error
			if gs, err = s.Access().Grants(ctx); err != nil {
				return err
			}
		}
		reads := func(id api.ID) bool { return all || len(id) > 0 && gs.RoleOn(p, id) >= auth.Read }
		out := events // an admin of everything, unfiltered, gets them as they are
		if !all || ok && p.Role < auth.Admin || len(req.Types) > 0 || len(req.Namespace) > 0 || len(req.Table) > 0 {
			out = visible(events, req, reads, func(ns api.ID) bool { return !ok || p.Role >= auth.Admin || gs.RoleOn(p, ns) >= auth.Admin })
		}
		if err := fn(out, through); err != nil {
			return err
		}
		if through >= until {
			return errFollowed
		}
		return nil
	})
	if errors.Is(err, errFollowed) {
		return nil
	}
	return err
}

// visible is what of events req's filters keep and a caller reads:
// reads(id) says whether it reads an object, admin(ns) whether it
// administers a namespace (a grant's event is for them alone). A
// rename's old name is hidden from who does not read it, before the
// filters, so that a filter cannot find it.
func visible(events []api.Event, req api.ChangesRequest, reads, admin func(api.ID) bool) []api.Event {
	out := events[:0:0]
	for _, ev := range events {
		if !reads(ev.ID) {
			continue
		}
		if strings.HasPrefix(ev.Type, grantEvents) && !admin(ev.ID) {
			continue
		}
		if len(ev.From) > 0 && !reads(ev.From) {
			ev.From = nil
		}
		if keeps(req, ev) {
			out = append(out, ev)
		}
	}
	return out
}

// grantEvents begins the types of the events of grants.
const grantEvents = "grant."

// errFollowed ends a feed that does not follow once it is delivered.
var errFollowed = errors.New("namespace: the change feed asked for is delivered")

// record writes ev, made by the caller of ctx now, as an event of the
// change feed on its own, once its change has committed elsewhere: a
// file in storage (a tag, a branch's ref, the grants, a cleanup's
// deletions) or a version's claim (a restore's, a branch's first). A
// crash between the two loses the event, not the change; so does a
// failure to write it, which is logged, not answered: the change stands.
func (s *Service) record(ctx context.Context, ev api.Event) {
	c := s.newIndexChange(ctx)
	c.event(ev)
	if err := s.applyIndex(context.WithoutCancel(ctx), c); err != nil {
		s.log.Error("namespace: a committed change's event could not be recorded in the change feed", "type", ev.Type, "id", ev.ID.String(), "err", err)
	}
}

// keeps is whether the filters of r keep ev.
func keeps(r api.ChangesRequest, ev api.Event) bool {
	switch {
	case len(r.Types) > 0 && !slices.Contains(r.Types, ev.Type):
		return false
	case len(r.Table) > 0 && !ev.ID.Equal(r.Table) && !ev.From.Equal(r.Table):
		return false
	case len(r.Namespace) > 0 && (len(ev.ID) == 0 || !auth.Within(ev.ID, r.Namespace)):
		return false
	}
	return true
}
