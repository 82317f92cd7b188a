package nserror

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
)

// Code is a Lance Namespace error code. The numbers are fixed by the Lance
// Namespace specification and shared by every implementation (Rust, Java,
// Python, REST).
type Code int

// The Lance Namespace error codes.
const (
	Unsupported                Code = 0
	NamespaceNotFound          Code = 1
	NamespaceAlreadyExists     Code = 2
	NamespaceNotEmpty          Code = 3
	TableNotFound              Code = 4
	TableAlreadyExists         Code = 5
	TableIndexNotFound         Code = 6
	TableIndexAlreadyExists    Code = 7
	TableTagNotFound           Code = 8
	TableTagAlreadyExists      Code = 9
	TransactionNotFound        Code = 10
	TableVersionNotFound       Code = 11
	TableColumnNotFound        Code = 12
	InvalidInput               Code = 13
	ConcurrentModification     Code = 14
	PermissionDenied           Code = 15
	Unauthenticated            Code = 16
	ServiceUnavailable         Code = 17
	Internal                   Code = 18
	InvalidTableState          Code = 19
	TableSchemaValidationError Code = 20
	Throttling                 Code = 21
	TableBranchNotFound        Code = 22
	TableBranchAlreadyExists   Code = 23
)

var codeNames = map[Code]string{
	Unsupported:                "Unsupported",
	NamespaceNotFound:          "NamespaceNotFound",
	NamespaceAlreadyExists:     "NamespaceAlreadyExists",
	NamespaceNotEmpty:          "NamespaceNotEmpty",
	TableNotFound:              "TableNotFound",
	TableAlreadyExists:         "TableAlreadyExists",
	TableIndexNotFound:         "TableIndexNotFound",
	TableIndexAlreadyExists:    "TableIndexAlreadyExists",
	TableTagNotFound:           "TableTagNotFound",
	TableTagAlreadyExists:      "TableTagAlreadyExists",
	TransactionNotFound:        "TransactionNotFound",
	TableVersionNotFound:       "TableVersionNotFound",
	TableColumnNotFound:        "TableColumnNotFound",
	InvalidInput:               "InvalidInput",
	ConcurrentModification:     "ConcurrentModification",
	PermissionDenied:           "PermissionDenied",
	Unauthenticated:            "Unauthenticated",
	ServiceUnavailable:         "ServiceUnavailable",
	Internal:                   "Internal",
	InvalidTableState:          "InvalidTableState",
	TableSchemaValidationError: "TableSchemaValidationError",
	Throttling:                 "Throttling",
	TableBranchNotFound:        "TableBranchNotFound",
	TableBranchAlreadyExists:   "TableBranchAlreadyExists",
}

// String returns the code's name as the specification spells it.
func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("Code(%d)", int(c))
}

// Sentinels to match with errors.Is. An *Error matches the sentinel of its
// code whatever its message.
var (
	ErrUnsupported            = &Error{Code: Unsupported}
	ErrNamespaceNotFound      = &Error{Code: NamespaceNotFound}
	ErrNamespaceAlreadyExists = &Error{Code: NamespaceAlreadyExists}
	ErrNamespaceNotEmpty      = &Error{Code: NamespaceNotEmpty}
	ErrTableNotFound          = &Error{Code: TableNotFound}
	ErrTableAlreadyExists     = &Error{Code: TableAlreadyExists}
	ErrTransactionNotFound    = &Error{Code: TransactionNotFound}
	ErrTableVersionNotFound   = &Error{Code: TableVersionNotFound}
	ErrInvalidInput           = &Error{Code: InvalidInput}
	ErrConcurrentModification = &Error{Code: ConcurrentModification}
	ErrPermissionDenied       = &Error{Code: PermissionDenied}
	ErrUnauthenticated        = &Error{Code: Unauthenticated}
	ErrServiceUnavailable     = &Error{Code: ServiceUnavailable}
	ErrInternal               = &Error{Code: Internal}
	ErrInvalidTableState      = &Error{Code: InvalidTableState}
	ErrThrottling             = &Error{Code: Throttling}
)

// Error is an error with a Lance Namespace code. Message names the object
// and the problem ("table a$b not found"); Err is the cause, if any.
type Error struct {
	Code    Code
	Message string
	Err     error
}

// New returns an *Error with code and a formatted message. A %w verb in
// format wraps its argument as the cause.
func New(code Code, format string, args ...any) error {
	wrapped := fmt.Errorf(format, args...)
	return &Error{Code: code, Message: wrapped.Error(), Err: errors.Unwrap(wrapped)}
}

// Error returns the message, or the code's name when there is none.
func (e *Error) Error() string {
	if e.Message == "" {
		if e.Err != nil {
			return e.Code.String() + ": " + e.Err.Error()
		}
		return e.Code.String()
	}
	return e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's code. Sentinels are the
// *Error values with neither message nor cause.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Err == nil && t.Code == e.Code
}

// CodeOf returns the code of the outermost *Error in err's chain; for an
// error without one, ServiceUnavailable when it means "not now" (see
// Unavailable), else Internal; -1 for a nil error.
func CodeOf(err error) Code {
	if err == nil {
		return -1
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if Unavailable(err) || errors.Is(err, context.DeadlineExceeded) {
		// The outcome is unknown: the client may retry (the same request
		// is idempotent).
		return ServiceUnavailable
	}
	return Internal
}

// redisNotNow are the Redis error replies that mean the server cannot
// answer now but will: loading its data, a replica that became read-only
// during a failover, a cluster without a slot's master, a resharding, a
// master down.
var redisNotNow = []string{"LOADING ", "READONLY ", "CLUSTERDOWN ", "TRYAGAIN ", "MASTERDOWN "}

// Unavailable reports whether err means a dependency cannot answer now
// but may soon, so that the outcome is unknown and the client may retry:
// a network failure (Redis or the object store out of reach, a connection
// refused or reset) or one of Redis's "not now" replies. It recognizes
// Redis replies by what every Redis client error has (a RedisError method)
// and the reply's first word, so that this package needs no Redis client.
func Unavailable(err error) bool {
	var oe *net.OpError
	if errors.As(err, &oe) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) {
		return true
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if _, ok := e.(interface{ RedisError() }); !ok {
			continue
		}
		msg := e.Error()
		for _, p := range redisNotNow {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
	}
	return false
}
