package namespace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/objstore"
)

// A catalog is bound to one root. Its Redis state names manifests by keys
// relative to the root, so a second root opened on the same Redis catalog
// would serve heads whose manifests live under the other root, and commit
// versions the first root never gets. The root holds a marker naming its
// catalog and an id of its own; the catalog's Redis state records the id
// of its root. A process whose root belongs to another catalog, or whose
// catalog is bound to another root, refuses to open.

// bindingKey is the root's marker, beside __manifest's own files.
const bindingKey = manifesttable.Prefix + "_catalog.json"

// binding is the marker's content, and the Redis record of a catalog's
// root.
type binding struct {
	Catalog string `json:"catalog"`
	RootID  string `json:"root_id"`
	Root    string `json:"root"` // the root's URI when it was bound, to name it
}

// bindRoot checks and records that the catalog and the root belong to
// each other; the first process of a catalog on a root binds them. A
// refused process writes nothing.
func (s *Service) bindRoot(ctx context.Context) error {
	for range 3 {
		marker, found, err := s.readMarker(ctx)
		if err != nil {
			return err
		}
		have, bound, err := s.rs.RootBinding(ctx)
		if err != nil {
			return err
		}
		if bound {
			var bound binding
			if err := json.Unmarshal(have, &bound); err != nil {
				return fmt.Errorf("namespace: catalog %q: the Redis record of its root is not one flightns wrote: %w", s.cfg.Catalog, err)
			}
			if !found && bound.Root == s.objs.URI() {
				return fmt.Errorf("namespace: catalog %q is bound to the root %s (id %s), but the root's marker %s is gone: restore it, or, once sure the root is the catalog's, delete the Redis key %s so that the next start binds them again",
					s.cfg.Catalog, bound.Root, bound.RootID, bindingKey, s.k.Root())
			}
			if !found || bound.RootID != marker.RootID {
				return fmt.Errorf("namespace: catalog %q in this Redis belongs to the root %s (id %s); this root, %s, is another: refusing to serve it (give each root its own --catalog or Redis)",
					s.cfg.Catalog, bound.Root, bound.RootID, s.objs.URI())
			}
			return nil
		}
		if !found {
			marker = binding{Catalog: s.cfg.Catalog, RootID: uuid.NewString(), Root: s.objs.URI()}
			raw, err := json.Marshal(marker)
			if err != nil {
				return err
			}
			if err := s.objs.PutIfAbsent(ctx, bindingKey, raw); errors.Is(err, objstore.ErrAlreadyExists) {
				continue // another process marked it first: read theirs
			} else if err != nil {
				return err
			}
		}
		raw, err := json.Marshal(binding{Catalog: s.cfg.Catalog, RootID: marker.RootID, Root: s.objs.URI()})
		if err != nil {
			return err
		}
		if set, err := s.rs.BindRoot(ctx, raw); err != nil || set {
			return err
		}
		// Another process bound the catalog meanwhile: check against it.
	}
	return fmt.Errorf("namespace: catalog %q and the root %s: their binding keeps changing", s.cfg.Catalog, s.objs.URI())
}

// readMarker reads the root's marker; a root that belongs to another
// catalog is refused.
func (s *Service) readMarker(ctx context.Context) (binding, bool, error) {
	b, err := s.objs.Get(ctx, bindingKey)
	if errors.Is(err, objstore.ErrNotFound) {
		return binding{}, false, nil
	}
	if err != nil {
		return binding{}, false, err
	}
	var m binding
	if err := json.Unmarshal(b, &m); err != nil || m.RootID == "" {
		return binding{}, false, fmt.Errorf("namespace: the root %s has a marker %s that flightns did not write", s.objs.URI(), bindingKey)
	}
	if m.Catalog != s.cfg.Catalog {
		return binding{}, false, fmt.Errorf("namespace: the root %s belongs to catalog %q, not %q: refusing to serve it (give --catalog %s, or another root)",
			s.objs.URI(), m.Catalog, s.cfg.Catalog, m.Catalog)
	}
	return m, true, nil
}
