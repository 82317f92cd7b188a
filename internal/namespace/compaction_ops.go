package namespace

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/nserror"
)

// runCompaction makes the RunFunc of a compaction operation. Its routes
// name no object: the tables it acts on are the job's (found by its id)
// or the ones a claim may hand out, so the method checks the caller
// itself (Compaction's access rules) once it has read the job. Under
// AuthorizeOnly a method stops there, answering errOnlyAuthorized: a
// claim once its request is valid (it hands out only what the caller
// may write), a heartbeat, completion or failure once the caller may
// write the job's table and names its worker.
func runCompaction[Req, Resp any](method func(Compaction, context.Context, Req) (Resp, error)) RunFunc {
	return func(ctx context.Context, s *Service, body []byte, _ *REST) (any, error) {
		var req Req
		if err := api.DecodeRequest(body, &req); err != nil {
			return nil, err
		}
		out, err := method(s.Compaction(), ctx, req)
		if errors.Is(err, errOnlyAuthorized) {
			return Authorized{}, nil
		}
		return out, err
	}
}

// errOnlyAuthorized is a compaction method's answer under AuthorizeOnly
// once its caller is authorized.
var errOnlyAuthorized = errors.New("namespace: authorized only")

// authorizedOnly is errOnlyAuthorized under AuthorizeOnly, else nil.
func authorizedOnly(ctx context.Context) error {
	if AuthorizingOnly(ctx) {
		return errOnlyAuthorized
	}
	return nil
}

// AuthorizeReplay checks that the caller of ctx may be given again first,
// the answer operation op gave its first request, when an idempotent
// retry replays it (after Op.Authorize passed the request itself). Only a
// claim's answer names an object its request did not: the job's table,
// which the caller must still be allowed to write, under the name the
// table has now. Other answers: nil.
func (s *Service) AuthorizeReplay(ctx context.Context, op string, first []byte) error {
	p, ok := auth.PrincipalFrom(ctx)
	if op != api.OpClaimCompaction || !ok || len(first) == 0 {
		return nil
	}
	var r api.ClaimCompactionResponse
	if err := json.Unmarshal(first, &r); err != nil {
		return nserror.New(nserror.Internal, "the recorded answer of a claim does not decode: %v", err)
	}
	if r.Job == nil {
		return nil
	}
	return s.authorize(ctx, p, auth.Write, target{id: s.tableIDAt(r.Job.Location, r.Job.ID), table: true})
}
