package namespace

import (
	"context"
	"maps"
	"strconv"

	"github.com/flightns/flightns/auth"
	"github.com/flightns/flightns/nserror"
)

// storageOptions are the storage options a table's description or
// declaration answers: the root's (endpoint, region), and, when the
// catalog vends credentials (Config.Vend) and the caller did not ask for
// none, temporary credentials that reach the table's directory alone —
// read-only for a caller without the write role — with their expiry
// (expires_at_millis), after which Lance describes the table again. The
// server's own credentials are never answered.
func (s *Service) storageOptions(ctx context.Context, loc string, vend *bool) (map[string]string, error) {
	if s.cfg.Vend == nil || (vend != nil && !*vend) {
		return s.root.options, nil
	}
	write := true // the Go API: its caller holds the catalog
	if p, ok := auth.PrincipalFrom(ctx); ok {
		write = p.Role >= auth.Write
	}
	c, err := s.objs.VendCredentials(ctx, loc, write, *s.cfg.Vend)
	if err != nil {
		return nil, err
	}
	out := maps.Clone(s.root.options)
	if out == nil {
		out = map[string]string{}
	}
	out["aws_access_key_id"], out["aws_secret_access_key"], out["aws_session_token"] = c.AccessKeyID, c.SecretAccessKey, c.SessionToken
	out["expires_at_millis"] = strconv.FormatInt(c.Expires.UnixMilli(), 10)
	return out, nil
}

// checkVend refuses vending on a root that cannot vend.
func (s *Service) checkVend() error {
	if s.cfg.Vend != nil && s.root.scheme != "s3" {
		return nserror.New(nserror.InvalidInput, "credential vending needs an s3:// root, not %s://", s.root.scheme)
	}
	return nil
}
