package namespace

import (
	"context"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// storageOptions are the storage options a table's description or
// declaration answers: the root's (endpoint, region), and, when the
// catalog vends credentials (Config.Vend) and the caller did not ask for
// none, temporary credentials that reach the table's directory alone —
// read-only for a caller without the write role on table id — with their expiry
// (expires_at_millis), after which Lance describes the table again. The
// server's own credentials are never answered.
func (s *Service) storageOptions(ctx context.Context, id api.ID, loc string, vend *bool) (map[string]string, error) {
	if s.cfg.Vend == nil || (vend != nil && !*vend) {
		return s.root.options, nil
	}
	write, err := s.mayWrite(ctx, id)
	if err != nil {
		return nil, err
	}
	c, err := s.vended.get(ctx, loc, write, s.cfg.Vend.RefreshOffset, func(ctx context.Context) (objstore.Credentials, error) {
		c, err := s.objs.VendCredentials(ctx, loc, write, *s.cfg.Vend)
		if renew := time.Now().Add(s.cfg.Vend.RenewAfter); err == nil && s.cfg.Vend.RenewAfter > 0 && renew.Before(c.Expires) {
			c.Expires = renew // the expiry answered: clients renew then
		}
		return c, err
	})
	if err != nil {
		return nil, err
	}
	out := maps.Clone(s.root.options)
	if out == nil {
		out = map[string]string{}
	}
	out["aws_access_key_id"], out["aws_secret_access_key"], out["aws_session_token"] = c.AccessKeyID, c.SecretAccessKey, c.SessionToken
	out["expires_at_millis"] = strconv.FormatInt(c.Expires.UnixMilli(), 10)
	if off := s.cfg.Vend.RefreshOffset; off > 0 {
		out["refresh_offset_millis"] = strconv.FormatInt(off.Milliseconds(), 10)
	}
	return out, nil
}

// checkVend refuses vending on a root that cannot vend.
func (s *Service) checkVend() error {
	if s.cfg.Vend != nil && s.root.scheme != "s3" {
		return nserror.New(nserror.InvalidInput, "credential vending needs an s3:// root, not %s://", s.root.scheme)
	}
	return nil
}

// vendCache keeps vended credentials while more than half their life is
// left, so that a table described again and again (Lance describes at
// every open) costs STS one call per half-life, not one per describe —
// and never once a client holding them would ask for new ones (within
// the refresh offset of their expiry, Lance's 60 s unless we answer
// another), else a client renewing would get them back and ask again at
// each request.
type vendCache struct {
	mu sync.Mutex
	m  map[vendKey]objstore.Credentials
}

// lanceRefreshOffset is how long before their expiry Lance asks for new
// credentials unless told (refresh_offset_millis); refreshSlack is what
// credentials answered must have left beyond the client's offset.
const (
	lanceRefreshOffset = 60 * time.Second
	refreshSlack       = 2 * time.Second
)

type vendKey struct {
	loc   string
	write bool
}

func (v *vendCache) get(ctx context.Context, loc string, write bool, refresh time.Duration, vend func(context.Context) (objstore.Credentials, error)) (objstore.Credentials, error) {
	k := vendKey{loc, write}
	now := time.Now()
	v.mu.Lock()
	c, ok := v.m[k]
	v.mu.Unlock()
	if refresh <= 0 {
		refresh = lanceRefreshOffset
	}
	if ok && c.Expires.Sub(now) > max(c.Expires.Sub(c.Issued)/2, refresh+refreshSlack) {
		return c, nil
	}
	c, err := vend(ctx)
	if err != nil {
		return c, err
	}
	c.Issued = now
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil || len(v.m) > 10000 {
		v.m = map[vendKey]objstore.Credentials{}
	}
	v.m[k] = c
	return c, nil
}
