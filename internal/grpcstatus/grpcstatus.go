package grpcstatus

import (
	"context"
	"errors"
	"strconv"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightns/flightns/nserror"
)

// grpcCodes maps each Lance Namespace code to its gRPC code; the table is
// the only place the two meet.
var grpcCodes = map[nserror.Code]codes.Code{
	nserror.Unsupported:                codes.Unimplemented,
	nserror.NamespaceNotFound:          codes.NotFound,
	nserror.NamespaceAlreadyExists:     codes.AlreadyExists,
	nserror.NamespaceNotEmpty:          codes.FailedPrecondition,
	nserror.TableNotFound:              codes.NotFound,
	nserror.TableAlreadyExists:         codes.AlreadyExists,
	nserror.TableIndexNotFound:         codes.NotFound,
	nserror.TableIndexAlreadyExists:    codes.AlreadyExists,
	nserror.TableTagNotFound:           codes.NotFound,
	nserror.TableTagAlreadyExists:      codes.AlreadyExists,
	nserror.TransactionNotFound:        codes.NotFound,
	nserror.TableVersionNotFound:       codes.NotFound,
	nserror.TableColumnNotFound:        codes.NotFound,
	nserror.InvalidInput:               codes.InvalidArgument,
	nserror.ConcurrentModification:     codes.Aborted,
	nserror.PermissionDenied:           codes.PermissionDenied,
	nserror.Unauthenticated:            codes.Unauthenticated,
	nserror.ServiceUnavailable:         codes.Unavailable,
	nserror.Internal:                   codes.Internal,
	nserror.InvalidTableState:          codes.FailedPrecondition,
	nserror.TableSchemaValidationError: codes.InvalidArgument,
	nserror.Throttling:                 codes.ResourceExhausted,
	nserror.TableBranchNotFound:        codes.NotFound,
	nserror.TableBranchAlreadyExists:   codes.AlreadyExists,
}

// Domain is the domain of the google.rpc.ErrorInfo detail that carries
// the Lance Namespace code of a failed call.
const Domain = "flightns"

// FromError turns err into a gRPC status error. Errors that already are
// statuses pass unchanged; every other error gets the gRPC code of its
// Lance Namespace code and an ErrorInfo detail (reason = the code's name,
// metadata "code" = its number) so clients can tell the Lance errors apart.
func FromError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return status.Error(codes.Canceled, err.Error())
	}
	// A deadline inside the server is an unknown outcome like any other:
	// ServiceUnavailable, decided once by nserror for both surfaces.
	code := nserror.CodeOf(err)
	gc, ok := grpcCodes[code]
	if !ok {
		gc = codes.Unknown
	}
	st := status.New(gc, err.Error())
	withInfo, derr := st.WithDetails(&errdetails.ErrorInfo{
		Reason:   code.String(),
		Domain:   Domain,
		Metadata: map[string]string{"code": strconv.Itoa(int(code))},
	})
	if derr != nil {
		return st.Err()
	}
	return withInfo.Err()
}

// Code returns the Lance Namespace code a flightns status error carries,
// and false when it carries none. It is what a Go client calls on the
// error of a Flight action or query.
func Code(err error) (nserror.Code, bool) {
	st, ok := status.FromError(err)
	if !ok {
		return 0, false
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == Domain {
			n, err := strconv.Atoi(info.GetMetadata()["code"])
			if err == nil {
				return nserror.Code(n), true
			}
		}
	}
	return 0, false
}
