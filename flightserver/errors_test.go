package flightserver

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightns/flightns/internal/grpcstatus"
	"github.com/flightns/flightns/nserror"
)

// Errors are decided once, by nserror, for both surfaces: a deadline
// inside the server is an unknown outcome (ServiceUnavailable, like REST's
// 503), a server limit is Throttling, and each carries its Lance code.
func TestStatusesCarryTheLanceCodeNserrorDecided(t *testing.T) {
	cases := []struct {
		name string
		err  error
		grpc codes.Code
		code nserror.Code
	}{
		{"deadline", fmt.Errorf("redis: %w", context.DeadlineExceeded), codes.Unavailable, nserror.ServiceUnavailable},
		{"limit", limitError("too many (limit %d)", 3), codes.ResourceExhausted, nserror.Throttling},
		{"conflict", nserror.New(nserror.ConcurrentModification, "taken"), codes.Aborted, nserror.ConcurrentModification},
	}
	for _, c := range cases {
		err := grpcstatus.FromError(c.err)
		if got := status.Code(err); got != c.grpc {
			t.Errorf("%s: gRPC code %v, want %v", c.name, got, c.grpc)
		}
		if code, ok := grpcstatus.Code(err); !ok || code != c.code {
			t.Errorf("%s: Lance code %v (%v), want %v", c.name, code, ok, c.code)
		}
	}
	if got := status.Code(grpcstatus.FromError(context.Canceled)); got != codes.Canceled {
		t.Errorf("a canceled call: %v, want Canceled", got)
	}
}
