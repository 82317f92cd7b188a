package auth

import (
	"context"
	"errors"
	"testing"

	"github.com/flightns/flightns/nserror"
)

// Recheck ends what began as a principal whose credentials now fail, or
// now name it otherwise (a lowered role, other groups); it passes the same
// principal, and a context its surface gave no way to check again.
func TestRecheckEndsWhatItsCredentialsNoLongerGive(t *testing.T) {
	ana := Principal{Name: "ana", Role: Admin, Groups: []string{"g"}}
	ctx := WithPrincipal(context.Background(), ana)
	if err := Recheck(ctx); err != nil {
		t.Fatalf("no way to check again: %v", err)
	}
	now := ana
	again := WithRecheck(ctx, func() (Principal, error) { return now, nil })
	if err := Recheck(again); err != nil {
		t.Fatalf("the same principal: %v", err)
	}
	for _, p := range []Principal{{Name: "ana", Role: Read, Groups: []string{"g"}}, {Name: "ana", Role: Admin}, {Name: "bo", Role: Admin, Groups: []string{"g"}}} {
		now = p
		if err := Recheck(again); !errors.Is(err, nserror.ErrUnauthenticated) {
			t.Fatalf("now %+v: %v, want Unauthenticated", p, err)
		}
	}
	refused := nserror.New(nserror.Unauthenticated, "the session was revoked")
	failing := WithRecheck(ctx, func() (Principal, error) { return Principal{}, refused })
	if err := Recheck(failing); !errors.Is(err, refused) {
		t.Fatalf("credentials that fail now: %v", err)
	}
}
