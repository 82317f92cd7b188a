// Package api is the wire contract of flightns's Lance Namespace
// operations: the request and response models with the JSON field names
// of the REST protocol (the Flight actions carry the same bodies), the
// ids they name objects by, and the operations' names. The server, the
// Go client (package client), the CLI and the tests share it, so that no
// program needs the server's implementation to speak to it.
//
//   - Op… constants name the operations, as the specification spells
//     them (and flightns's own, partitioned tables' included); a name is
//     the operation's Flight action type and its key in the server's
//     registries, whose REST routes are docs/rest.md's.
//   - ID is an object's id: its names from the root. Its string form
//     joins them with Delimiter ("$"), the form of the REST path and of
//     __manifest's object_id; ParseID is the one parser of it and
//     Validate the one check (depth, name length, characters).
//   - DecodeRequest is how every surface reads a request body: empty or
//     null is the empty request, anything else must be one JSON object
//     (unknown fields ignored), numbers stay exact; a body that is not is
//     InvalidInput.
//   - Modes and behaviors (ModeCreate, BehaviorCascade, …) are spelled as
//     the protocol spells them.
//
// Fields the protocol has that flightns does not use (identity, context,
// vend_credentials, …) are accepted and ignored; a branch field selects
// the branch's own version chain. The extensions of flightns (undrop,
// cleanup, grants; assert_table_version and set_read_version in a batch)
// are not in the specification; docs/rest.md marks them.
//
// The package holds data and its parsing only: it performs no I/O, keeps
// no state, and imports nothing of flightns but nserror (its errors carry
// the Lance Namespace code InvalidInput).
package api
