package namespace

import (
	"context"
	"errors"

	"github.com/flightns/flightns/api"
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
