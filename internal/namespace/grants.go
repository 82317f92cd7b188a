package namespace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// The grants of a catalog (auth.Grant: a role on a namespace's subtree)
// are catalog state: each change writes the whole list as the next
// generation, create-only, under grantsDir inside __manifest (where no
// table lives, so no vended credential reaches them). The newest
// generation is the grants; two servers changing them at once cannot both
// write one generation, and the loser reads the winner's and tries again.
// Every server reads a generation newer than its own at most
// GrantsRecheck after it was written.
const grantsDir = "__manifest/_auth/grants/"

// GrantsRecheck is how old the grants a server checks against may be.
const GrantsRecheck = 2 * time.Second

func grantsKey(gen uint64) string { return fmt.Sprintf("%s%020d.json", grantsDir, gen) }

// grantsDoc is one generation's object.
type grantsDoc struct {
	Grants auth.Grants `json:"grants"`
}

// grantBook is a server's copy of the grants.
type grantBook struct {
	mu      sync.Mutex
	loaded  bool
	gen     uint64 // the generation read (0: none written yet)
	grants  auth.Grants
	checked time.Time // when the store was last asked for a newer one
}

// Grants are the catalog's grants, as of at most GrantsRecheck ago. When
// the store cannot say, it fails: access is never decided on grants that
// may have been revoked.
func (ac Access) Grants(ctx context.Context) (auth.Grants, error) {
	gs, _, err := ac.s.grantsNow(ctx)
	return gs, err
}

// grantsNow is Access.Grants with the generation they are.
func (s *Service) grantsNow(ctx context.Context) (auth.Grants, uint64, error) {
	b := &s.grants
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.loaded && s.now().Sub(b.checked) < GrantsRecheck {
		return b.grants, b.gen, nil
	}
	if err := s.readGrants(ctx); err != nil {
		return nil, 0, err
	}
	return b.grants, b.gen, nil
}

// readGrants brings the book to the newest generation; the caller holds
// its lock.
func (s *Service) readGrants(ctx context.Context) error {
	b := &s.grants
	asked := s.now()
	gen := b.gen
	if !b.loaded {
		objs, err := s.objs.ListAll(ctx, grantsDir)
		if err != nil {
			return grantsUnavailable(err)
		}
		for _, o := range objs {
			n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(o.Key, grantsDir), ".json"), 10, 64)
			if err == nil && n > gen {
				gen = n
			}
		}
	} else {
		// A newer generation is gen+1, or one after it.
		for {
			if _, err := s.objs.Head(ctx, grantsKey(gen+1)); err != nil {
				if errors.Is(err, objstore.ErrNotFound) {
					break
				}
				return grantsUnavailable(err)
			}
			gen++
		}
	}
	if gen != b.gen || !b.loaded {
		var doc grantsDoc
		if gen > 0 {
			raw, err := s.objs.Get(ctx, grantsKey(gen))
			if err != nil {
				return grantsUnavailable(err)
			}
			if err := json.Unmarshal(raw, &doc); err != nil {
				return nserror.New(nserror.Internal, "the grants %s are not readable: %v", grantsKey(gen), err)
			}
			for _, g := range doc.Grants {
				if err := g.Check(); err != nil {
					return nserror.New(nserror.Internal, "the grants %s hold a bad grant: %v", grantsKey(gen), err)
				}
			}
		}
		b.gen, b.grants = gen, doc.Grants
	}
	b.loaded, b.checked = true, asked
	return nil
}

func grantsUnavailable(err error) error {
	return nserror.New(nserror.ServiceUnavailable, "reading the catalog's grants: %v", err)
}

// Grant gives g (auth.Grant.Check) in place of what the same grantee held
// on the same namespace; a Role of auth.None takes that away (Revoke).
// Every server of the catalog applies it within GrantsRecheck.
func (ac Access) Grant(ctx context.Context, g auth.Grant) error {
	s := ac.s
	check := g
	if check.Role == auth.None {
		check.Role = auth.Read // a revocation: the rest must hold
	}
	if err := check.Check(); err != nil {
		return nserror.New(nserror.InvalidInput, "%v", err)
	}
	if err := api.ID(g.Namespace).Validate("namespace"); err != nil {
		return err
	}
	ev := api.Event{Type: api.EventGrantCreated, ID: g.Namespace, Grantee: g.Principal, Group: g.Group, Role: g.Role.String()}
	if g.Role == auth.None {
		ev.Type, ev.Role = api.EventGrantDeleted, ""
	}
	p, err := s.writeGrant(ctx, g, ev)
	if err != nil || p == nil {
		return err
	}
	// Its event once the book's lock is given back: the followers of the
	// feed read the grants under it.
	return p.settle(ctx, nil, nil)
}

// writeGrant writes the next generation of the grants with g in place of
// what its grantee held on its namespace, under the book's lock, with ev
// as its event: it returns the generation's intent, for the caller to
// settle, or nil when g changes nothing (no generation is written).
func (s *Service) writeGrant(ctx context.Context, g auth.Grant, ev api.Event) (*pending, error) {
	b := &s.grants
	b.mu.Lock()
	defer b.mu.Unlock()
	for range 16 {
		if err := s.readGrants(ctx); err != nil {
			return nil, err
		}
		next := make(auth.Grants, 0, len(b.grants)+1)
		held := auth.None // what the grantee holds there now
		for _, have := range b.grants {
			if !have.Same(g) {
				next = append(next, have)
			} else {
				held = have.Role
			}
		}
		if held == g.Role {
			return nil, nil // nothing changes: no new generation, no event
		}
		if g.Role != auth.None {
			next = append(next, g)
		}
		raw, err := json.Marshal(grantsDoc{Grants: next})
		if err != nil {
			return nil, err
		}
		key := grantsKey(b.gen + 1)
		p, err := s.intend(ctx, ev, key, raw, "", 0)
		if err != nil {
			return nil, err
		}
		err = s.objs.PutIfAbsent(ctx, key, raw)
		if errors.Is(err, objstore.ErrAlreadyExists) {
			_ = p.settle(ctx, err, isAlreadyExists)
			b.checked = time.Time{} // another server wrote it: read it, try again
			continue
		}
		if err != nil {
			return nil, grantsUnavailable(p.settle(ctx, err, nil))
		}
		b.gen, b.grants, b.checked = b.gen+1, next, s.now()
		return p, nil
	}
	return nil, nserror.New(nserror.ConcurrentModification, "the grants kept changing under this change; try again")
}

// Revoke takes away what g's grantee holds on g's namespace.
func (ac Access) Revoke(ctx context.Context, g auth.Grant) error {
	g.Role = auth.None
	return ac.Grant(ctx, g)
}

// CreateNamespaceGrant gives the request's role (Grant).
func (ac Access) CreateNamespaceGrant(ctx context.Context, req api.NamespaceGrantRequest) (api.Empty, error) {
	role, err := auth.ParseRole(req.Role)
	if err != nil || role == auth.None {
		return api.Empty{}, nserror.New(nserror.InvalidInput, "role %q: a grant gives read, write or admin", req.Role)
	}
	return api.Empty{}, ac.Grant(ctx, auth.Grant{Namespace: req.ID, Principal: req.Principal, Group: req.Group, Role: role})
}

// DeleteNamespaceGrant takes away what the grantee holds there (Revoke).
func (ac Access) DeleteNamespaceGrant(ctx context.Context, req api.NamespaceGrantRequest) (api.Empty, error) {
	if req.Role != "" {
		return api.Empty{}, nserror.New(nserror.InvalidInput, "DeleteNamespaceGrant takes no role: it takes away whatever the grantee holds there")
	}
	return api.Empty{}, ac.Revoke(ctx, auth.Grant{Namespace: req.ID, Principal: req.Principal, Group: req.Group})
}

// ListNamespaceGrants lists the grants on the namespace and inside it,
// ordered by namespace, then grantee.
func (ac Access) ListNamespaceGrants(ctx context.Context, req api.ListNamespaceGrantsRequest) (*api.ListNamespaceGrantsResponse, error) {
	if err := req.ID.Validate("namespace"); err != nil {
		return nil, err
	}
	gs, err := ac.Grants(ctx)
	if err != nil {
		return nil, err
	}
	out := []api.NamespaceGrant{}
	for _, g := range gs {
		if auth.Within(g.Namespace, req.ID) {
			out = append(out, api.NamespaceGrant{Namespace: append([]string{}, g.Namespace...), Principal: g.Principal, Group: g.Group, Role: g.Role.String()})
		}
	}
	slices.SortFunc(out, func(a, b api.NamespaceGrant) int {
		if c := slices.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Principal+"\x00"+a.Group, b.Principal+"\x00"+b.Group)
	})
	return &api.ListNamespaceGrantsResponse{Grants: out}, nil
}
