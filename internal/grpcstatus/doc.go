// Package grpcstatus is the one codec between flightns errors and gRPC
// statuses: FromError gives an error the gRPC code of its Lance Namespace
// code and an ErrorInfo detail (domain "flightns", reason the code's name,
// metadata "code" its number); Code reads the Lance code back. Flight SQL
// (flightserver), the SQL worker's private service (sqlworker) and the
// metrics interceptors (obs) all use it, so a code survives every hop.
//
// It must not know about any service: it maps errors, nothing else.
package grpcstatus
