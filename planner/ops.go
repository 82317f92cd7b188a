package planner

import (
	"context"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/nserror"
)

// Op is one operation of the planner as the surfaces expose it: Flight
// actions by Name and REST routes /v1/namespace/{id}/<Path>, both with the
// JSON body below and the JSON reply Run returns (PlanScan's reply is a
// *Plan, which the surfaces stream as Arrow). Defining them once here keeps
// the adapters thin.
type Op struct {
	Name  string
	Path  string
	Desc  string
	Write bool
	// Run decodes body, binds the path's id (REST; nil for Flight), and
	// calls the planner.
	Run func(ctx context.Context, p *Planner, body []byte, pathID api.ID) (any, error)
}

// DescribeRequest names a partitioned table.
type DescribeRequest struct {
	ID api.ID `json:"id"`
}

// EvolveRequest adds a spec version.
type EvolveRequest struct {
	ID   api.ID `json:"id"`
	Spec Spec   `json:"spec"`
}

// ResolveRequest finds or creates a leaf: from partition values by field
// id, or from a row by column name (exactly one).
type ResolveRequest struct {
	ID     api.ID         `json:"id"`
	Values map[string]any `json:"values,omitempty"`
	Row    map[string]any `json:"row,omitempty"`
}

// CommitPartitionsRequest is CommitRequest with the table's id.
type CommitPartitionsRequest struct {
	ID api.ID `json:"id"`
	CommitRequest
}

// PlanScanRequest asks for a plan.
type PlanScanRequest struct {
	ID     api.ID `json:"id"`
	Filter string `json:"filter"`
}

// Ops are the planner's operations.
var Ops = []Op{
	{Name: api.OpCreatePartitionedTable, Path: "partitioned/create", Desc: "Create a partitioned table: its schema and partition spec v1.", Write: true,
		Run: decodeRun(func(ctx context.Context, p *Planner, r *CreateTableRequest) (any, error) {
			return p.CreateTable(ctx, *r)
		},
			func(r *CreateTableRequest) *api.ID { return &r.ID })},
	{Name: api.OpDescribePartitionedTable, Path: "partitioned/describe", Desc: "Describe a partitioned table: schema, specs, current spec.",
		Run: decodeRun(func(ctx context.Context, p *Planner, r *DescribeRequest) (any, error) { return p.Describe(ctx, r.ID) },
			func(r *DescribeRequest) *api.ID { return &r.ID })},
	{Name: api.OpEvolvePartitionSpec, Path: "partitioned/evolve", Desc: "Add partition spec version N+1 and make it current.", Write: true,
		Run: decodeRun(func(ctx context.Context, p *Planner, r *EvolveRequest) (any, error) {
			return p.EvolveSpec(ctx, r.ID, r.Spec)
		},
			func(r *EvolveRequest) *api.ID { return &r.ID })},
	{Name: api.OpResolvePartition, Path: "partitioned/resolve", Desc: "Find or create the leaf table of partition values or of a row (idempotent under races).", Write: true,
		Run: decodeRun(func(ctx context.Context, p *Planner, r *ResolveRequest) (any, error) {
			switch {
			case (r.Values == nil) == (r.Row == nil):
				return nil, nserror.New(nserror.InvalidInput, "ResolvePartition takes values or a row, exactly one")
			case r.Row != nil:
				return p.ResolveRow(ctx, r.ID, r.Row)
			}
			return p.ResolveOrCreate(ctx, r.ID, r.Values)
		}, func(r *ResolveRequest) *api.ID { return &r.ID })},
	{Name: api.OpCommitPartitions, Path: "partitioned/commit", Desc: "Commit new versions of several partitions and their read_version atomically, with optional read assertions.", Write: true,
		Run: decodeRun(func(ctx context.Context, p *Planner, r *CommitPartitionsRequest) (any, error) {
			return p.Commit(ctx, r.ID, r.CommitRequest)
		}, func(r *CommitPartitionsRequest) *api.ID { return &r.ID })},
	{Name: api.OpPlanScan, Path: "partitioned/plan_scan", Desc: "Plan a scan: the leaf tables that may hold rows matching a SQL filter, as Arrow.",
		Run: decodeRun(func(ctx context.Context, p *Planner, r *PlanScanRequest) (any, error) {
			return p.PlanScan(ctx, r.ID, r.Filter)
		},
			func(r *PlanScanRequest) *api.ID { return &r.ID })},
}

// decodeRun adapts a typed operation: decode the body strictly, bind the
// path id (a body id that disagrees is InvalidInput), run.
func decodeRun[Req any](run func(context.Context, *Planner, *Req) (any, error), idOf func(*Req) *api.ID) func(context.Context, *Planner, []byte, api.ID) (any, error) {
	return func(ctx context.Context, p *Planner, body []byte, pathID api.ID) (any, error) {
		var req Req
		if len(body) > 0 {
			if err := api.DecodeRequest(body, &req); err != nil {
				return nil, err
			}
		}
		id := idOf(&req)
		if pathID != nil {
			if *id != nil && !id.Equal(pathID) {
				return nil, nserror.New(nserror.InvalidInput, "the id in the body %q disagrees with the id in the path %q", id.String(), pathID.String())
			}
			*id = pathID
		}
		if len(*id) == 0 {
			return nil, nserror.New(nserror.InvalidInput, "the request names no partitioned table (id)")
		}
		if namespace.AuthorizingOnly(ctx) {
			return authorizeOn(*id), nil // the wrapper below checks the role
		}
		return run(ctx, p, &req)
	}
}

// authorizeOn is decodeRun's reply under namespace.AuthorizeOnly: the
// partitioned table whose role the operation needs.
type authorizeOn api.ID

// Authorize checks that the caller of ctx may make the request (body,
// and on REST the path's id) of o, without running it
// (namespace.AuthorizeOnly): nil, or the error a first request would be
// refused with. Each operation's method checks exactly its role on the
// table it names before anything else (Planner.Authorize); this is that
// check.
func (o Op) Authorize(ctx context.Context, p *Planner, body []byte, pathID api.ID) error {
	out, err := o.Run(namespace.AuthorizeOnly(ctx), p, body, pathID)
	return namespace.OnlyAuthorized(o.Name, out, err)
}

// Every operation first asks whether its caller holds the role it needs
// anywhere (namespace.Access.Permits), so that a reader's change is
// refused before its body is read; the operation then checks the table
// it names (Planner.Authorize) — here, when it only authorizes
// (Op.Authorize).
func init() {
	for i := range Ops {
		run, need := Ops[i].Run, auth.Read
		if Ops[i].Write {
			need = auth.Write
		}
		Ops[i].Run = func(ctx context.Context, p *Planner, body []byte, pathID api.ID) (any, error) {
			if p.svc != nil {
				if err := p.access.Permits(ctx, need); err != nil {
					return nil, err
				}
			}
			out, err := run(ctx, p, body, pathID)
			if id, ok := out.(authorizeOn); ok && err == nil {
				if err := p.Authorize(ctx, need, api.ID(id)); err != nil {
					return nil, err
				}
				return namespace.Authorized{}, nil
			}
			return out, err
		}
	}
}

// OpByName finds an operation by its Flight action name.
func OpByName(name string) (Op, bool) {
	for _, o := range Ops {
		if o.Name == name {
			return o, true
		}
	}
	return Op{}, false
}
