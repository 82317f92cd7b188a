package flightserver

import (
	"github.com/flightns/flightns/internal/grpcstatus"
	"github.com/flightns/flightns/nserror"
)

// limitError is a server limit reached (Throttling: ResourceExhausted,
// with the Lance code like every other error).
func limitError(format string, args ...any) error {
	return grpcstatus.FromError(nserror.New(nserror.Throttling, format, args...))
}
