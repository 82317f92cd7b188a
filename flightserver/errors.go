package flightserver

import (
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/nserror/grpcstatus"
)

// toStatus turns err into a gRPC status error carrying its Lance code
// (grpcstatus.FromError).
func toStatus(err error) error { return grpcstatus.FromError(err) }

// limitError is a server limit reached (Throttling: ResourceExhausted,
// with the Lance code like every other error).
func limitError(format string, args ...any) error {
	return toStatus(nserror.New(nserror.Throttling, format, args...))
}
