package flightserver

import (
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/nserror/grpcstatus"
)

// limitError is a server limit reached (Throttling: ResourceExhausted,
// with the Lance code like every other error).
func limitError(format string, args ...any) error {
	return grpcstatus.FromError(nserror.New(nserror.Throttling, format, args...))
}
