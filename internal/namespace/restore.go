package namespace

import (
	"context"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
)

// RestoreIndexedRows writes a __manifest row for every object that
// Redis's object index holds and __manifest lacks (the segment that held
// its row was lost): its id, type and location come back; its properties
// were only in the lost row and come back empty. It returns the restored
// ids, once they are durable.
func (ix Index) RestoreIndexedRows(ctx context.Context) ([]string, error) {
	s := ix.s
	objs, err := s.rs.IndexedObjects(ctx)
	if err != nil {
		return nil, err
	}
	var ids []string
	var changes []manifesttable.Change
	for _, o := range objs {
		if _, ok := s.table.Object(o.Type, o.ID); ok {
			continue
		}
		if o.Type != manifesttable.TypeNamespace && o.Type != manifesttable.TypeTable {
			return ids, nserror.New(nserror.Internal, "Redis's object index holds %q of unknown type %q", o.ID, o.Type)
		}
		ids = append(ids, o.ID)
		changes = append(changes, manifesttable.Change{Row: manifesttable.Row{ObjectID: o.ID, ObjectType: o.Type,
			Location: o.Location, Metadata: "{}", CommittedAt: s.now().UTC()}})
	}
	for len(changes) > 0 {
		n := min(len(changes), 500)
		seq, err := s.table.Append(ctx, changes[:n])
		if err != nil {
			return ids, err
		}
		if err := s.table.WaitDurable(ctx, seq); err != nil {
			return ids, err
		}
		changes = changes[n:]
	}
	return ids, nil
}

// defaultDir matches the directory a table gets without a location:
// <hash8>_<object_id> (defaultLocation).
var defaultDir = regexp.MustCompile(`^[0-9a-f]{8}_(.+)$`)

// AdoptedTable is a table rebuilt from its directory.
type AdoptedTable struct {
	ID, Location string
}

// AdoptTableDirectories registers, as tables, the directories at the top of
// the root that hold a Lance table (a final manifest in _versions) and are
// named as flightns names a table's directory (<hash8>_<object_id>), when
// no table owns them; their namespaces are created as needed. It is the
// last resort of a repair that found no readable __manifest: what storage
// alone proves. A name whose characters were replaced by '-' comes back
// as written; a table that was deregistered comes back too.
func (ix Index) AdoptTableDirectories(ctx context.Context) ([]AdoptedTable, []string, error) {
	s := ix.s
	dirs := map[string]bool{}
	for a, err := range s.objs.List(ctx, "") {
		if err != nil {
			return nil, nil, err
		}
		dir, m, err := lancemanifest.ParseManifestPath(a.Key)
		if err == nil && !m.Staging && !strings.Contains(string(dir), "/") && !strings.HasPrefix(a.Key, manifesttable.Prefix) {
			dirs[string(dir)] = true
		}
	}
	var adopted []AdoptedTable
	var skipped []string
	for _, dir := range slices.Sorted(maps.Keys(dirs)) {
		if _, owned := s.table.TableByLocation(dir); owned {
			continue
		}
		m := defaultDir.FindStringSubmatch(dir)
		if m == nil {
			skipped = append(skipped, dir+": not named <hash8>_<object_id>")
			continue
		}
		id, err := api.ParseID(m[1], api.Delimiter)
		if err != nil || len(id) < 2 {
			skipped = append(skipped, dir+": its name is not a table id")
			continue
		}
		for i := 1; i < len(id); i++ {
			if _, err := s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id[:i], Mode: api.ModeExistOk}); err != nil {
				return adopted, skipped, err
			}
		}
		_, err = s.RegisterTable(ctx, api.RegisterTableRequest{ID: id, Location: s.root.uri(dir)})
		if err != nil && nserror.CodeOf(err) == nserror.TableAlreadyExists {
			skipped = append(skipped, dir+": table "+id.String()+" exists elsewhere")
			continue
		}
		if err != nil {
			return adopted, skipped, err
		}
		adopted = append(adopted, AdoptedTable{ID: id.String(), Location: dir})
	}
	return adopted, skipped, nil
}
