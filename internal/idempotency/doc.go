// Package idempotency makes a mutation safe to retry: a caller names it
// with an Idempotency-Key (REST's header, Flight's metadata), and within
// a window every request of that caller with that key gets the first
// request's answer without running again, even when the first answer was
// lost on its way. The records live in Redis, beside the catalog's state
// (its hash tag), so every server of the catalog, and this one after a
// restart, answers a retry the same way.
//
// A record is reserved before the mutation runs (SET NX, with a short
// lease, so a server that dies mid-request frees the key), then holds
// the answer for the window. What the answer is decides whether it is
// kept: a success or a refusal whose outcome is settled (a conflict, a
// missing table, bad input) is; a failure whose outcome is unknown (the
// service unavailable, an internal error, throttling) frees the key, so
// the retry runs. The same key with another operation or body is refused
// (409), as is a retry while the first still runs.
//
// An answer is only ever given to a caller who may make the request now:
// every request is authorized (the operation's own check, run without
// the operation: namespace.Op.Authorize, planner.Op.Authorize) before its
// key is looked at. A retry after the caller's grant was revoked is
// refused exactly as a first request would be (PermissionDenied, or the
// NotFound that hides what it may not read) and leaves the record as it
// was; it never gets the first answer (vended credentials included).
package idempotency
