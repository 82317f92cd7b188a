package namespace

import (
	"context"
	"sort"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
)

// PartitionRow is what makes a namespace or table row a partition row of a
// partitioned table (docs/planner.md): the spec it was written under and its
// partition values, inherited from its ancestors, by column
// (partition_field_<field_id>, Go values as manifesttable.ColumnType
// documents; nil is NULL).
type PartitionRow struct {
	SpecID int32
	Values map[string]any
}

// apply stamps the partition columns on a row.
func (p *PartitionRow) apply(r *manifesttable.Row) {
	if p == nil {
		return
	}
	r.HasSpecID, r.SpecID = true, p.SpecID
	if len(p.Values) > 0 {
		r.Extra = make(map[string]any, len(p.Values))
		for k, v := range p.Values {
			r.Extra[k] = v
		}
	}
}

// EvolveNamespaceRequest replaces a namespace's properties and creates a
// child namespace in one atomic step, which succeeds only if the namespace
// still exists and the child does not: two concurrent evolutions of a
// partitioned table's spec cannot both win (each claims the child v<N>).
// Go API only.
type EvolveNamespaceRequest struct {
	ID         api.ID
	Properties api.Properties
	// Child is a name inside ID; ChildPartition stamps its row.
	Child          string
	ChildPartition *PartitionRow
	// Columns reserves partition columns of __manifest with their types
	// (manifesttable.ColumnType), catalog-wide: a column keeps one type
	// forever, so a definition that would give it another fails with
	// InvalidInput, atomically with the rest.
	Columns map[string]string
}

// EvolveNamespace applies an EvolveNamespaceRequest and returns once both
// rows are durable. A child that exists already is ConcurrentModification.
func (s *Service) EvolveNamespace(ctx context.Context, req EvolveNamespaceRequest) error {
	if err := req.ID.Validate("namespace"); err != nil {
		return err
	}
	if req.ID.IsRoot() {
		return nserror.New(nserror.InvalidInput, "the root namespace cannot evolve")
	}
	child := req.ID.Child(req.Child)
	if err := child.Validate("namespace"); err != nil {
		return err
	}
	props := req.Properties
	if props == nil {
		props = api.Properties{}
	}
	now := s.now().UTC()
	meta, err := propsJSON(props)
	if err != nil {
		return err
	}
	parentRow := manifesttable.Row{ObjectType: manifesttable.TypeNamespace, ObjectID: req.ID.String(), Metadata: meta, CommittedAt: now}
	childRow := manifesttable.Row{ObjectType: manifesttable.TypeNamespace, ObjectID: child.String(), Metadata: "{}", CommittedAt: now}
	req.ChildPartition.apply(&childRow)
	parentRaw, err := manifesttable.MarshalRow(parentRow)
	if err != nil {
		return err
	}
	childRaw, err := manifesttable.MarshalRow(childRow)
	if err != nil {
		return err
	}
	id, k := req.ID.String(), s.k
	c := &indexChange{k: k}
	c.guard(nserror.New(nserror.NamespaceNotFound, "namespace %q does not exist", id), redisstate.GuardEq(k.Obj(), id, manifesttable.TypeNamespace))
	c.put(parentRaw)
	c.addNamespace(child, childRaw, nserror.New(nserror.ConcurrentModification, "namespace %q already exists: a concurrent change won", child.String()))
	reserved := nserror.New(nserror.ConcurrentModification, "a concurrent definition reserved a partition column; retry")
	for _, col := range sortedKeys(req.Columns) {
		typ := req.Columns[col]
		have, found, err := s.rs.PartitionColumnType(ctx, col)
		switch {
		case err == nil && !found:
			c.guard(reserved, redisstate.GuardAbsent(k.PCols(), col))
			c.writes = append(c.writes, redisstate.HSet(k.PCols(), col, typ))
		case err != nil:
			return err
		case have != typ:
			return nserror.New(nserror.InvalidInput, "column %s of __manifest is %s; it cannot also be %s", col, have, typ)
		default:
			c.guard(reserved, redisstate.GuardEq(k.PCols(), col, typ))
		}
	}
	return s.applyIndex(ctx, c)
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// LocationURI is the URI of a table location (a key under the root), as
// DescribeTable reports it.
func (ix Index) LocationURI(key string) string { return ix.s.root.uri(key) }
