package auth

import (
	"context"
	"slices"

	"github.com/flightns/flightns/nserror"
)

// A request that lasts (a change feed that follows) was authenticated as
// it began. Its surface gives its context, with WithRecheck, how to
// authenticate the same credentials again, and what serves it calls
// Recheck as it goes: a credential that no longer holds (a session
// revoked, ended or expired, a token expired, a user removed) ends it, as
// it would refuse a new request, and so does one that names the caller
// otherwise now (another role, other groups): what the request was
// allowed was decided by the principal it began with.

type recheckKey struct{}

// WithRecheck is ctx carrying how to authenticate its caller's
// credentials again.
func WithRecheck(ctx context.Context, again func() (Principal, error)) context.Context {
	return context.WithValue(ctx, recheckKey{}, again)
}

// Recheck authenticates the caller of ctx again (WithRecheck; nil when
// its surface gave no way, or authenticated no one): an error when its
// credentials no longer hold or no longer name the principal of ctx.
func Recheck(ctx context.Context) error {
	again, ok := ctx.Value(recheckKey{}).(func() (Principal, error))
	was, known := PrincipalFrom(ctx)
	if !ok || !known {
		return nil
	}
	now, err := again()
	if err != nil {
		return err
	}
	if now.Name != was.Name || now.Role != was.Role || !slices.Equal(now.Groups, was.Groups) {
		return nserror.New(nserror.Unauthenticated, "the credentials this request began with now name %s with role %s: reconnect", now.Name, now.Role)
	}
	return nil
}
