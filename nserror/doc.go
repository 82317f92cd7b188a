// Package nserror is the one error type of flightns: an error that carries a
// Lance Namespace error code.
//
// Every package that can fail in a way a client must tell apart returns, or
// wraps with %w, an *Error whose Code is one of the Lance Namespace codes
// (Unsupported=0, NamespaceNotFound=1 … TableBranchAlreadyExists=23). Callers match with errors.Is against
// the sentinels (ErrTableNotFound, ErrInvalidInput, …): an *Error matches a
// sentinel when their codes are equal, whatever its message. Adapters map a
// code to an HTTP status or gRPC code with one table each; this package does
// not know about transports.
//
// Invariants: the code of an error chain is the code of its outermost *Error
// (CodeOf); an error that carries no *Error is ServiceUnavailable when it
// says a dependency cannot answer now (Unavailable, or a deadline: the
// outcome is unknown and the request may be retried), else Internal.
package nserror
