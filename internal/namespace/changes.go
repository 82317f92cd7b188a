package namespace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/nserror"
)

// FollowChanges calls fn with the change feed after req.After, as
// manifesttable.Table.Follow does, keeping only the events req's filters
// keep and the caller of ctx may read: an event of a namespace or table
// it reads (its role, or a grant on it or above; a grant's event only for
// an admin of its namespace), a rename's old name only
// when it reads that too, and an event that names no object (a version of
// a directory no table has) only for a reader of the whole catalog.
// Grants are read again for every call of fn, so a revoked grant stops
// what the feed shows next; the caller's credentials are authenticated
// again every feedRecheck (auth.Recheck), and a feed whose credentials no
// longer hold ends with the error. Through still moves on over what is hidden,
// so that resuming never reads it again. When req does not follow, it
// returns nil once it has delivered every change appended to the commit
// log before the call (each as it becomes durable).
//
// Followers at the same place that see the feed alike (the same filters,
// and the same viewer: any admin of the catalog, or one principal under
// one generation of the grants) are handed the same ChangeBatch, so that
// what a transport makes of it (EncodedBatch) is made once for all of
// them: a hundred subscribers cost one encoding of each batch and a
// hundred writes, not a hundred encodings.
func (s *Service) FollowChanges(ctx context.Context, req api.ChangesRequest, fn func(*ChangeBatch) error) error {
	if err := req.Validate(); err != nil {
		return err
	}
	ctx, release, err := s.HoldFeed(ctx)
	if err != nil {
		return err
	}
	defer release()
	p, ok := auth.PrincipalFrom(ctx)
	all := !ok || p.Role >= auth.Read // no principal: authentication is off
	admin := !ok || p.Role >= auth.Admin
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
	view, err := viewOf(req, p, admin)
	if err != nil {
		return err
	}
	filtered := !admin || len(req.Types) > 0 || len(req.Namespace) > 0 || len(req.Table) > 0
	after := req.After
	checked := time.Now()
	err = s.table.Follow(ctx, req.After, func(events []api.Event, through uint64) error {
		if time.Since(checked) >= feedRecheck {
			if err := auth.Recheck(ctx); err != nil {
				return fmt.Errorf("the change feed ends after sequence %d: %w", after, err)
			}
			checked = time.Now()
		}
		var gs auth.Grants
		var gen uint64
		if !admin { // what it reads, or administers, by its grants
			var err error
			if gs, gen, err = s.grantsNow(ctx); err != nil {
				return err
			}
		}
		b := s.batches.get(batchKey{after: after, through: through, view: view, grants: gen}, func() *ChangeBatch {
			out := events // an admin of everything, unfiltered, gets them as they are
			if filtered {
				reads := func(id api.ID) bool { return all || len(id) > 0 && gs.RoleOn(p, id) >= auth.Read }
				out = visible(events, req, reads, func(ns api.ID) bool { return admin || gs.RoleOn(p, ns) >= auth.Admin })
			}
			return &ChangeBatch{Events: out, Through: through}
		})
		if err := fn(b); err != nil {
			return err
		}
		after = through
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

// DefaultFeedsPerPrincipal is Config.FeedsPerPrincipal's default.
const DefaultFeedsPerPrincipal = 256

// feedCount counts the change feeds each principal reads now.
type feedCount struct {
	mu sync.Mutex
	n  map[string]int
}

// take counts one more feed of principal, unless it reads max already
// (Throttling); release uncounts it.
func (c *feedCount) take(principal string, max int) (release func(), err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[principal] >= max {
		return nil, nserror.New(nserror.Throttling, "%s reads %d change feeds already, the most one principal may at once: end one first", principal, max)
	}
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[principal]++
	return sync.OnceFunc(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.n[principal]--; c.n[principal] == 0 {
			delete(c.n, principal)
		}
	}), nil
}

type heldFeedKey struct{}

// HoldFeed counts a change feed of the caller of ctx against
// Config.FeedsPerPrincipal (Throttling past it) until release: a
// transport holds it before its stream begins, so that a refusal is its
// status, and FollowChanges under ctx counts nothing more. A call with no
// principal (the Go API) counts nothing.
func (s *Service) HoldFeed(ctx context.Context) (_ context.Context, release func(), _ error) {
	p, ok := auth.PrincipalFrom(ctx)
	if held, _ := ctx.Value(heldFeedKey{}).(bool); held || !ok {
		return ctx, func() {}, nil
	}
	release, err := s.feeds.take(p.Name, s.cfg.FeedsPerPrincipal)
	if err != nil {
		return ctx, nil, err
	}
	return context.WithValue(ctx, heldFeedKey{}, true), release, nil
}

// feedRecheck is how often a follower's credentials are authenticated
// again (auth.Recheck), before the next batch it is handed: a session
// revoked, ended or expired, or a principal removed or given another
// role, ends its feeds within that (and the seconds a revocation takes
// to reach every replica).
const feedRecheck = 2 * time.Second

// A ChangeBatch is one call's worth of FollowChanges: the events of whole
// sequences after the previous batch's Through, through Through (it may
// hold none while Through moves on over what the follower does not see).
// It may be shared by many followers: nothing in it may be changed.
type ChangeBatch struct {
	Events  []api.Event
	Through uint64

	mu      sync.Mutex
	encoded map[any]*batchEncoding
}

type batchEncoding struct {
	once sync.Once
	v    any
	err  error
}

// EncodedBatch is what encode makes of b, made once under key (a
// comparable value of a type of the caller's own) however many followers
// share b and ask for it; those that ask while it is made wait for it.
// What it returns is shared: nothing may change it.
func EncodedBatch[T any](b *ChangeBatch, key any, encode func(*ChangeBatch) (T, error)) (T, error) {
	b.mu.Lock()
	if b.encoded == nil {
		b.encoded = map[any]*batchEncoding{}
	}
	e := b.encoded[key]
	if e == nil {
		e = &batchEncoding{}
		b.encoded[key] = e
	}
	b.mu.Unlock()
	e.once.Do(func() { e.v, e.err = encode(b) })
	v, _ := e.v.(T)
	return v, e.err
}

// EventsJSON is the JSON of each event of b (as encoding/json marshals
// api.Event), made once however many followers and transports ask for
// it (the SSE projection's data, the Flight batch's whole-event column).
// What it returns is shared: nothing may change it.
func EventsJSON(b *ChangeBatch) ([][]byte, error) {
	return EncodedBatch(b, eventsJSON{}, func(b *ChangeBatch) ([][]byte, error) {
		out := make([][]byte, len(b.Events))
		for i, ev := range b.Events {
			j, err := json.Marshal(ev)
			if err != nil {
				return nil, err
			}
			out[i] = j
		}
		return out, nil
	})
}

// eventsJSON keys EventsJSON's encoding of a batch.
type eventsJSON struct{}

// viewOf names how a follower sees the feed: its filters, and who it is
// unless it administers the catalog (then the grants do not matter).
func viewOf(req api.ChangesRequest, p auth.Principal, admin bool) (string, error) {
	v := struct {
		Types     []string `json:"types,omitempty"`
		Namespace api.ID   `json:"namespace,omitempty"`
		Table     api.ID   `json:"table,omitempty"`
		Name      string   `json:"name,omitempty"`
		Role      string   `json:"role,omitempty"`
		Groups    []string `json:"groups,omitempty"`
	}{Types: req.Types, Namespace: req.Namespace, Table: req.Table}
	if !admin {
		v.Name, v.Role, v.Groups = p.Name, p.Role.String(), p.Groups
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// batchKey names a shared batch: the stretch of the feed (the same
// sequences, whichever of memory and storage it was read from) and how
// it is seen (viewOf, and the grants' generation when they matter).
type batchKey struct {
	after, through uint64
	view           string
	grants         uint64
}

// sharedBatches are the batches FollowChanges handed out lately, for the
// followers that come to the same place: at most sharedEvents events and
// sharedMax batches in all, the oldest dropped first.
type sharedBatches struct {
	mu     sync.Mutex
	m      map[batchKey]*ChangeBatch
	order  []batchKey // oldest first
	events int
}

// sharedEvents bounds the events the shared batches hold (with what the
// transports made of them, a few tens of megabytes at most), sharedMax
// the batches (many hold no event).
const (
	sharedEvents = 1 << 14
	sharedMax    = 1 << 10
)

// get is the batch of k, made by make if no follower made it lately.
func (c *sharedBatches) get(k batchKey, make func() *ChangeBatch) *ChangeBatch {
	c.mu.Lock()
	b := c.m[k]
	c.mu.Unlock()
	if b != nil {
		return b
	}
	b = make() // outside the lock: followers elsewhere in the feed go on
	if len(b.Events) > sharedEvents {
		return b
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[k]; old != nil {
		return old // made meanwhile by another follower: share that one
	}
	if c.m == nil {
		c.m = map[batchKey]*ChangeBatch{}
	}
	for len(c.order) > 0 && (c.events+len(b.Events) > sharedEvents || len(c.order) >= sharedMax) {
		c.events -= len(c.m[c.order[0]].Events)
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	c.m[k] = b
	c.order = append(c.order, k)
	c.events += len(b.Events)
	return b
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
