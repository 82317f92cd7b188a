package planner

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
)

// Property names of a partitioned table's namespace.
const (
	SchemaProperty = "schema"
	// LeafName is the table at the bottom of every partition path.
	LeafName = "dataset"
)

// Planner serves partitioned tables over a namespace service. It keeps no
// state of its own beyond a cache of parsed table definitions, keyed by
// their exact properties.
type Planner struct {
	svc    Namespaces // nil in a planner that only plans (NewScanner)
	access Access     // nil with svc
	cat    Catalog

	mu        sync.Mutex
	cache     map[string]*Table     // table id -> definition (checked against its metadata); guarded by mu
	trees     map[treeKey]*partTree // partition trees by spec root (tree.go); guarded by mu
	treeNodes int                   // nodes in trees; guarded by mu
}

// Catalog is what planning reads: the catalog's namespaces and tables as
// this process holds them (its index of __manifest) and how a table's
// location becomes a URI. The namespace service's Index is one; a SQL
// worker process, which follows the catalog without a namespace service,
// has its own over its __manifest table.
type Catalog interface {
	// Objects returns every namespace and table row, Object one of them.
	Objects() []manifesttable.Row
	Object(typ, id string) (manifesttable.Row, bool)
	// View calls fn with the index held still at one catalog sequence.
	View(fn func(manifesttable.Index))
	// Sync brings the index up to every change acknowledged anywhere
	// before the call.
	Sync(ctx context.Context) error
	// Head is the newest sequence of the commit log; WaitDurable returns
	// once a sequence is durable and in the index.
	Head(ctx context.Context) (uint64, error)
	WaitDurable(ctx context.Context, seq uint64) error
	// RegisterTableFunction makes a table function callable from the
	// catalog's SQL queries.
	RegisterTableFunction(ctx context.Context, f sqlengine.TableFunc) error
	// LocationURI is the URI of a table's location.
	LocationURI(location string) string
}

// Access is how a planner checks its caller's role, on the catalog and
// on a namespace's subtree. The namespace service's Access is one.
type Access interface {
	Permits(ctx context.Context, need auth.Role) error
	AuthorizeNamespace(ctx context.Context, need auth.Role, id api.ID) error
}

// Namespaces is what a planner changes partitioned tables through: the
// operations of the namespace service it calls (each checks the caller's
// grants itself), and the service's parts it checks callers by (Access)
// and reads the catalog through (Index). The namespace service is one.
type Namespaces interface {
	Access() namespace.Access
	Index() namespace.Index
	CreateNamespace(ctx context.Context, req api.CreateNamespaceRequest) (*api.CreateNamespaceResponse, error)
	// EvolveNamespace changes a partitioned table's properties and
	// creates its next spec's child namespace, both durable on return.
	EvolveNamespace(ctx context.Context, req namespace.EvolveNamespaceRequest) error
	// CreatePartitionNamespace and DeclarePartitionTable are
	// CreateNamespace and DeclareTable stamping the row as a partition's.
	CreatePartitionNamespace(ctx context.Context, req api.CreateNamespaceRequest, part *namespace.PartitionRow) (*api.CreateNamespaceResponse, error)
	DeclarePartitionTable(ctx context.Context, req api.DeclareTableRequest, part *namespace.PartitionRow) (*api.DeclareTableResponse, error)
	BatchCommitTables(ctx context.Context, req api.BatchCommitTablesRequest) (*api.BatchCommitTablesResponse, error)
}

// New returns a planner over svc.
func New(svc Namespaces) *Planner {
	return &Planner{svc: svc, access: svc.Access(), cat: svc.Index(), cache: map[string]*Table{}}
}

// NewScanner returns a planner that only plans (PlanScan, Describe, and
// plan_scan in SQL) over a catalog it reads; every change it is asked for
// fails with Unsupported.
func NewScanner(cat Catalog) *Planner {
	return &Planner{cat: cat, cache: map[string]*Table{}}
}

var errReadOnlyPlanner = nserror.New(nserror.Unsupported, "this planner only plans: partitioned tables change through the namespace service")

// Table is a partitioned table's definition: its schema and specs, oldest
// first; the last spec is the current one (new rows are written under it).
type Table struct {
	ID       api.ID
	Schema   *JSONSchema
	Specs    []*Spec
	metadata string
	columns  *Schema
	plans    []*specPlan
}

// Current is the spec new partitions are created under.
func (t *Table) Current() *Spec { return t.Specs[len(t.Specs)-1] }

// MarshalJSON describes the table the way the REST and Flight surfaces
// answer: id, schema, specs and the current spec id.
func (t *Table) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		ID          api.ID      `json:"id"`
		Schema      *JSONSchema `json:"schema"`
		Specs       []*Spec     `json:"specs"`
		CurrentSpec int32       `json:"current_spec_id"`
	}{t.ID, t.Schema, t.Specs, t.Current().ID})
}

// CreateTableRequest creates a partitioned table: a namespace holding the
// schema and spec v1, and its child namespace v1.
type CreateTableRequest struct {
	ID         api.ID          `json:"id"`
	Schema     json.RawMessage `json:"schema"`
	Spec       Spec            `json:"spec"`
	Properties api.Properties  `json:"properties,omitempty"`
}

// CreateTable creates a partitioned table. Its spec's id is 1 (whatever
// the request says); field ids left empty are assigned 1, 2, ….
func (p *Planner) CreateTable(ctx context.Context, req CreateTableRequest) (*Table, error) {
	if p.svc == nil {
		return nil, errReadOnlyPlanner
	}
	if err := p.Authorize(ctx, auth.Write, req.ID); err != nil {
		return nil, err
	}
	if err := req.ID.Validate("partitioned table"); err != nil {
		return nil, err
	}
	if req.ID.IsRoot() {
		return nil, nserror.New(nserror.InvalidInput, "a partitioned table needs an id")
	}
	js, schema, err := parseSchema(string(req.Schema))
	if err != nil {
		return nil, err
	}
	spec := req.Spec
	spec.ID = 1
	fields, err := evolve(&spec, schema, nil)
	if err != nil {
		return nil, err
	}
	cols, err := p.columnTypes(fields)
	if err != nil {
		return nil, err
	}
	rawSchema, _ := json.Marshal(js)
	props := api.Properties{}
	for k, v := range req.Properties {
		if k == SchemaProperty || strings.HasPrefix(k, "partition_spec_v") {
			return nil, nserror.New(nserror.InvalidInput, "property %q is the planner's", k)
		}
		props[k] = v
	}
	if _, err := p.svc.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: req.ID, Properties: props}); err != nil {
		return nil, err
	}
	props[SchemaProperty] = string(rawSchema)
	rawSpec, _ := json.Marshal(spec)
	props[SpecProperty(1)] = string(rawSpec)
	err = p.svc.EvolveNamespace(ctx, namespace.EvolveNamespaceRequest{ID: req.ID, Properties: props, Child: "v1",
		ChildPartition: &namespace.PartitionRow{SpecID: 1}, Columns: cols})
	if err != nil {
		return nil, err
	}
	return p.Describe(ctx, req.ID)
}

// EvolveSpec adds spec version N+1 and makes it current; earlier specs
// stay readable and planned. Field ids follow evolve's rules. Two
// concurrent evolutions cannot both win: the loser gets
// ConcurrentModification.
func (p *Planner) EvolveSpec(ctx context.Context, id api.ID, next Spec) (*Table, error) {
	if p.svc == nil {
		return nil, errReadOnlyPlanner
	}
	if err := p.Authorize(ctx, auth.Write, id); err != nil {
		return nil, err
	}
	t, err := p.Describe(ctx, id)
	if err != nil {
		return nil, err
	}
	next.ID = t.Current().ID + 1
	fields, err := evolve(&next, t.columns, t.Specs)
	if err != nil {
		return nil, err
	}
	cols, err := p.columnTypes(fields)
	if err != nil {
		return nil, err
	}
	props := api.Properties{}
	if err := json.Unmarshal([]byte(t.metadata), &props); err != nil {
		return nil, err
	}
	raw, _ := json.Marshal(next)
	props[SpecProperty(next.ID)] = string(raw)
	err = p.svc.EvolveNamespace(ctx, namespace.EvolveNamespaceRequest{ID: id, Properties: props, Child: "v" + strconv.Itoa(int(next.ID)),
		ChildPartition: &namespace.PartitionRow{SpecID: next.ID}, Columns: cols})
	if err != nil {
		return nil, err
	}
	return p.Describe(ctx, id)
}

// columnTypes are the __manifest columns a spec's fields need, checked
// against every partitioned table of the catalog (a column has one type
// catalog-wide; the namespace service also reserves them in Redis).
func (p *Planner) columnTypes(fields []resolved) (map[string]string, error) {
	want := map[string]string{}
	for _, f := range fields {
		want[f.Column()] = string(f.col)
	}
	for _, r := range p.cat.Objects() {
		if r.ObjectType != manifesttable.TypeNamespace || !strings.Contains(r.Metadata, "partition_spec_v") {
			continue
		}
		t, err := parseTable(api.ID(strings.Split(r.ObjectID, api.Delimiter)), r.Metadata)
		if err != nil {
			continue
		}
		for _, pl := range t.plans {
			for _, f := range pl.fields {
				if w, ok := want[f.Column()]; ok && w != string(f.col) {
					return nil, nserror.New(nserror.InvalidInput, "partition field %s would make column %s %s, but table %q holds it as %s",
						f.FieldID, f.Column(), w, t.ID.String(), f.col)
				}
			}
		}
	}
	return want, nil
}

// Describe loads a partitioned table's definition, as acknowledged
// anywhere before the call.
func (p *Planner) Describe(ctx context.Context, id api.ID) (*Table, error) {
	if err := id.Validate("partitioned table"); err != nil {
		return nil, err
	}
	if err := p.Authorize(ctx, auth.Read, id); err != nil {
		return nil, err
	}
	if err := p.cat.Sync(ctx); err != nil {
		return nil, err
	}
	t, err := p.lookup(id)
	if nserror.CodeOf(err) == nserror.NamespaceNotFound {
		// Perhaps created a moment ago elsewhere: wait for the log.
		if err := p.catchUp(ctx); err != nil {
			return nil, err
		}
		t, err = p.lookup(id)
	}
	return t, err
}

// lookup reads a definition from this process's index, parsing it only
// when its properties changed.
func (p *Planner) lookup(id api.ID) (*Table, error) {
	row, ok := p.cat.Object(manifesttable.TypeNamespace, id.String())
	if !ok {
		return nil, noPartitionedTable(id)
	}
	p.mu.Lock()
	t, ok := p.cache[row.ObjectID]
	p.mu.Unlock()
	if ok && t.metadata == row.Metadata {
		return t, nil
	}
	t, err := parseTable(id, row.Metadata)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.cache[row.ObjectID] = t
	p.mu.Unlock()
	return t, nil
}

// catchUp waits until every change logged before the call is in the
// index.
func (p *Planner) catchUp(ctx context.Context) error {
	h, err := p.cat.Head(ctx)
	if err != nil || h == 0 {
		return err
	}
	return p.cat.WaitDurable(ctx, h)
}

// parseTable reads a definition from namespace properties.
func parseTable(id api.ID, metadata string) (*Table, error) {
	props := map[string]string{}
	if metadata != "" {
		if err := json.Unmarshal([]byte(metadata), &props); err != nil {
			return nil, nserror.New(nserror.Internal, "namespace %q: properties are not JSON: %v", id.String(), err)
		}
	}
	rawSchema, ok := props[SchemaProperty]
	if !ok {
		return nil, nserror.New(nserror.InvalidInput, "namespace %q is not a partitioned table (no schema property)", id.String())
	}
	js, schema, err := parseSchema(rawSchema)
	if err != nil {
		return nil, err
	}
	t := &Table{ID: id, Schema: js, metadata: metadata, columns: schema}
	var ids []int
	for k := range props {
		if n, ok := strings.CutPrefix(k, "partition_spec_v"); ok {
			if v, err := strconv.Atoi(n); err == nil && v > 0 && strconv.Itoa(v) == n {
				ids = append(ids, v)
			}
		}
	}
	if len(ids) == 0 {
		return nil, nserror.New(nserror.InvalidInput, "namespace %q is not a partitioned table (no partition spec)", id.String())
	}
	sort.Ints(ids)
	for _, n := range ids {
		sp, err := specFromProperty(int32(n), props[SpecProperty(int32(n))])
		if err != nil {
			return nil, nserror.New(nserror.Internal, "partitioned table %q: %s: %v", id.String(), SpecProperty(int32(n)), err)
		}
		fields := make([]resolved, len(sp.Fields))
		for i := range sp.Fields {
			if fields[i], err = checkField(&sp.Fields[i], schema); err != nil {
				return nil, nserror.New(nserror.Internal, "partitioned table %q: spec %d: %v", id.String(), n, err)
			}
		}
		t.Specs = append(t.Specs, sp)
		t.plans = append(t.plans, compileSpec(sp, fields))
	}
	return t, nil
}

// Leaf is a partition's leaf table.
type Leaf struct {
	ID       api.ID         `json:"id"`
	Location string         `json:"location"`
	SpecID   int32          `json:"spec_id"`
	Values   map[string]any `json:"partition_values"` // by field id; JSON-friendly
	Created  bool           `json:"created"`
}

// ResolveRow computes a row's partition values with the current spec and
// finds or creates its leaf. row maps column names to JSON values
// (numbers, strings — dates as YYYY-MM-DD, timestamps as RFC 3339 or
// "YYYY-MM-DD HH:MM:SS" — booleans, null); absent columns are NULL.
func (p *Planner) ResolveRow(ctx context.Context, id api.ID, row map[string]any) (*Leaf, error) {
	if err := p.Authorize(ctx, auth.Write, id); err != nil {
		return nil, err
	}
	t, err := p.Describe(ctx, id)
	if err != nil {
		return nil, err
	}
	plan := t.plans[len(t.plans)-1]
	vals := make([]Value, len(plan.fields))
	for i := range plan.fields {
		f := &plan.fields[i]
		src := make([]Value, len(f.sources))
		for s, c := range f.sources {
			raw, ok := lookupRow(row, c.Name)
			if !ok {
				src[s] = Null(c.Kind)
				continue
			}
			if src[s], err = jsonValue(raw, c.Kind, c.Name); err != nil {
				return nil, err
			}
			if err := checkFits(src[s], c.Type, c.Name); err != nil {
				return nil, err
			}
		}
		if vals[i], err = f.apply(src); err != nil {
			return nil, err
		}
	}
	return p.resolve(ctx, t, plan, vals)
}

// ResolveOrCreate finds or creates the leaf for partition values of the
// current spec, given by field id (JSON values as for ResolveRow, in the
// field's result type; absent is NULL).
func (p *Planner) ResolveOrCreate(ctx context.Context, id api.ID, values map[string]any) (*Leaf, error) {
	if p.svc == nil {
		return nil, errReadOnlyPlanner
	}
	if err := p.Authorize(ctx, auth.Write, id); err != nil {
		return nil, err
	}
	t, err := p.Describe(ctx, id)
	if err != nil {
		return nil, err
	}
	plan := t.plans[len(t.plans)-1]
	for k := range values {
		found := false
		for _, f := range plan.fields {
			found = found || f.FieldID == k
		}
		if !found {
			return nil, nserror.New(nserror.InvalidInput, "spec %d has no partition field %q", plan.spec.ID, k)
		}
	}
	vals := make([]Value, len(plan.fields))
	for i, f := range plan.fields {
		raw, ok := values[f.FieldID]
		if !ok || raw == nil {
			vals[i] = Null(f.kind)
			continue
		}
		if vals[i], err = jsonValue(raw, f.kind, "partition field "+f.FieldID); err != nil {
			return nil, err
		}
		if f.Transform != nil && f.Transform.Type == TransformIdentity {
			if err := checkFits(vals[i], f.sources[0].Type, "partition field "+f.FieldID); err != nil {
				return nil, err
			}
		}
		if f.Transform != nil && (f.Transform.Type == TransformBucket || f.Transform.Type == TransformMultiBucket) &&
			(vals[i].I < 0 || vals[i].I >= int64(f.Transform.NumBuckets)) {
			return nil, nserror.New(nserror.InvalidInput, "partition field %s: bucket %d is not in 0..%d", f.FieldID, vals[i].I, f.Transform.NumBuckets-1)
		}
	}
	return p.resolve(ctx, t, plan, vals)
}

func lookupRow(row map[string]any, name string) (any, bool) {
	if v, ok := row[name]; ok {
		return v, true
	}
	for k, v := range row {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}

// partitionName is the namespace name of a partition value: 16 base36
// characters of SHA-256 over the field id and the value, so every creator
// of one partition picks the same name without coordinating.
func partitionName(fieldID string, v Value) string {
	h := sha256.New()
	h.Write([]byte(fieldID))
	h.Write([]byte{0})
	if v.Null {
		h.Write([]byte("null"))
	} else {
		h.Write([]byte{byte(v.Kind)})
		h.Write(hashBytes(v, nil))
	}
	n := new(big.Int).SetBytes(h.Sum(nil)[:12])
	s := n.Text(36)
	for len(s) < 16 {
		s = "0" + s
	}
	return s[len(s)-16:]
}

// resolve finds the leaf of a path of values, creating what is missing:
// each partition namespace (exist-ok) and the leaf table. Racing callers
// agree on the names, so all of them end up at one leaf.
func (p *Planner) resolve(ctx context.Context, t *Table, plan *specPlan, vals []Value) (*Leaf, error) {
	if p.svc == nil {
		return nil, errReadOnlyPlanner
	}
	id := t.ID.Child("v" + strconv.Itoa(int(plan.spec.ID)))
	part := &namespace.PartitionRow{SpecID: plan.spec.ID, Values: map[string]any{}}
	leaf := &Leaf{SpecID: plan.spec.ID, Values: map[string]any{}}
	var path []api.ID
	for i, f := range plan.fields {
		id = id.Child(partitionName(f.FieldID, vals[i]))
		path = append(path, id)
		leaf.Values[f.FieldID] = jsonOf(vals[i])
	}
	leafID := id.Child(LeafName)
	leaf.ID = leafID
	if r, ok := p.cat.Object(manifesttable.TypeTable, leafID.String()); ok {
		leaf.Location = p.cat.LocationURI(r.Location)
		return leaf, nil
	}
	for i, nsID := range path {
		f := plan.fields[i]
		part.Values[f.Column()] = goValue(vals[i], f.col)
		_, err := p.svc.CreatePartitionNamespace(ctx, api.CreateNamespaceRequest{ID: nsID, Mode: api.ModeExistOk}, clonePart(part))
		if err != nil {
			return nil, err
		}
	}
	noCredentials := false // the planner needs the leaf's location alone
	resp, err := p.svc.DeclarePartitionTable(ctx, api.DeclareTableRequest{ID: leafID, VendCredentials: &noCredentials}, clonePart(part))
	switch {
	case err == nil:
		leaf.Location, leaf.Created = resp.Location, true
		return leaf, nil
	case nserror.CodeOf(err) != nserror.TableAlreadyExists:
		return nil, err
	}
	// Another caller created it: wait until its row is ours to read.
	if err := p.catchUp(ctx); err != nil {
		return nil, err
	}
	r, ok := p.cat.Object(manifesttable.TypeTable, leafID.String())
	if !ok {
		return nil, nserror.New(nserror.ServiceUnavailable, "partition table %q exists but its row is not visible yet; retry", leafID.String())
	}
	leaf.Location = p.cat.LocationURI(r.Location)
	return leaf, nil
}

func clonePart(p *namespace.PartitionRow) *namespace.PartitionRow {
	c := &namespace.PartitionRow{SpecID: p.SpecID, Values: make(map[string]any, len(p.Values))}
	for k, v := range p.Values {
		c.Values[k] = v
	}
	return c
}

// CommitRequest is a write to a partitioned table that touched several
// partitions: a new version of each leaf written (its read_version moves
// to it in the same step) and, optionally, the versions of leaves the
// writer read, which must be unchanged (serializable writes).
type CommitRequest struct {
	Writes []LeafWrite `json:"writes"`
	Reads  []LeafRead  `json:"reads,omitempty"`
}

// LeafWrite is one leaf's new version, staged by the writer.
type LeafWrite struct {
	ID           api.ID `json:"id"`
	Version      int64  `json:"version"`
	ManifestPath string `json:"manifest_path"`
	ManifestSize *int64 `json:"manifest_size,omitempty"`
}

// LeafRead is a version a writer read: the commit fails with
// ConcurrentModification unless it is still the leaf's latest.
type LeafRead struct {
	ID      api.ID `json:"id"`
	Version int64  `json:"version"`
}

// CommitResponse holds the transaction and the versions committed, in
// write order.
type CommitResponse struct {
	TransactionID string             `json:"transaction_id"`
	Versions      []api.TableVersion `json:"versions"`
}

// Commit commits a cross-partition write atomically: one BatchCommitTables
// transaction with a create_table_version and a set_read_version per
// written leaf and an assert_table_version per read leaf. A plan_scan sees
// all of it or none of it.
func (p *Planner) Commit(ctx context.Context, id api.ID, req CommitRequest) (*CommitResponse, error) {
	if p.svc == nil {
		return nil, errReadOnlyPlanner
	}
	if err := p.Authorize(ctx, auth.Write, id); err != nil {
		return nil, err
	}
	if _, err := p.Describe(ctx, id); err != nil {
		return nil, err
	}
	if len(req.Writes) == 0 {
		return nil, nserror.New(nserror.InvalidInput, "a commit writes at least one partition")
	}
	prefix := id.String() + api.Delimiter
	var ops []api.CommitTableOperation
	check := func(leaf api.ID) error {
		if !strings.HasPrefix(leaf.String(), prefix) || leaf.Name() != LeafName {
			return nserror.New(nserror.InvalidInput, "%q is not a partition of %q", leaf.String(), id.String())
		}
		return nil
	}
	for _, w := range req.Writes {
		if err := check(w.ID); err != nil {
			return nil, err
		}
		ops = append(ops,
			api.CommitTableOperation{CreateTableVersion: &api.CreateTableVersionRequest{ID: w.ID, Version: w.Version,
				ManifestPath: w.ManifestPath, ManifestSize: w.ManifestSize}},
			api.CommitTableOperation{SetReadVersion: &api.SetReadVersionRequest{ID: w.ID}})
	}
	for _, r := range req.Reads {
		if err := check(r.ID); err != nil {
			return nil, err
		}
		ops = append(ops, api.CommitTableOperation{AssertTableVersion: &api.AssertTableVersionRequest{ID: r.ID, Version: r.Version}})
	}
	resp, err := p.svc.BatchCommitTables(ctx, api.BatchCommitTablesRequest{Operations: ops})
	if err != nil {
		return nil, err
	}
	out := &CommitResponse{TransactionID: resp.TransactionID}
	for _, r := range resp.Results {
		if r.CreateTableVersion != nil && r.CreateTableVersion.Version != nil {
			out.Versions = append(out.Versions, *r.CreateTableVersion.Version)
		}
	}
	return out, nil
}

// Authorize checks that the caller of ctx may act on partitioned table
// id with role need: within the scope of its SQL query, if it comes from
// one (sqlengine.ScopeFrom: also in the SQL worker, whose planner reads a
// replica), and by the service's grants (namespace.Access.
// AuthorizeNamespace) where the planner has the service. A caller that
// may not read the table is told it does not exist.
func (p *Planner) Authorize(ctx context.Context, need auth.Role, id api.ID) error {
	if sc := sqlengine.ScopeFrom(ctx); sc != nil && !sc.Covers(id.String()) {
		return noPartitionedTable(id)
	}
	if p.svc == nil {
		return nil
	}
	err := p.access.AuthorizeNamespace(ctx, need, id)
	if nserror.CodeOf(err) == nserror.NamespaceNotFound {
		return noPartitionedTable(id) // as a missing one is answered
	}
	return err
}

func noPartitionedTable(id api.ID) error {
	return nserror.New(nserror.NamespaceNotFound, "partitioned table %q does not exist", id.String())
}
