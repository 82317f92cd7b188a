// Package client is a Go client of a flightns server's REST API: the
// Lance Namespace operations (and flightns's own: undrop, cleanup,
// grants, compaction jobs), one method per operation, taking and
// returning package api's models. The flightns CLI's ns, table and changes commands are built on it.
//
// New takes a Config (the server's URL, a bearer token or a user and
// password) and checks it; it does not connect. Every call is one POST
// of the request model as JSON to the operation's route below /v1/, the
// object's id in the path as the REST protocol has it (names joined by
// api.Delimiter; the root as the delimiter alone) and in the body. Call
// runs any operation by its api.Op… name, for a reply kept as sent.
// Changes reads the change feed (GET /v1/changes, Server-Sent Events) and
// says where to resume; it decodes events with go-json, held to
// encoding/json's results by FuzzChanges.
//
// Errors: a reply with a Lance Namespace code is an *nserror.Error with
// that code and the server's message (errors.Is matches nserror's
// sentinels, nserror.CodeOf reads the code) wrapping a *StatusError with
// the HTTP status; any other reply that is not a success is a
// *StatusError; transport errors are returned as they are.
//
// The client keeps no state between calls but its configuration, and
// retries nothing: a mutation whose reply was lost may have applied (it
// sends no Idempotency-Key; see docs/operations.md). It imports nothing
// of the server, only api and nserror.
package client
