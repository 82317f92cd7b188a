// Package restserver is the Lance Namespace REST surface of flightns: the
// /v1/... routes that LanceDB's connectNamespace("rest", {uri}) and Lance's
// REST namespace client call, over net/http, as a thin adapter over
// namespace.Service.
//
// A request goes through five steps and nothing else: match the route
// (namespaces, tables, table versions — with their branch —, tags,
// branches (list, create, delete), restore, table statistics,
// BatchCreateTableVersions, BatchCommitTables), refuse a browser's
// cross-site request (CrossSite: Sec-Fetch-Site or an Origin not the
// server's own; the console calls the same check), authorize (Authorization: Bearer — a token, a
// session or an OIDC JWT — or Basic, or x-api-key, or else the client
// certificate of mutual TLS; reads need the read role, mutations the
// write role; the caller travels in the context, auth.WithPrincipal, and
// every mutation and refusal is an audit event, Options.Audit), read
// (the {id} path segment form-decoded here and split on the delimiter
// query parameter, default "$", the delimiter alone being the root; the
// body, bounded in size, and for a mutation application/json and not
// empty; the query parameters, parsed by type), and run
// the operation, whose reply is encoded as JSON. The routes, their roles
// and how each runs (decode the body into the request, bind the path id
// and the query parameters, call the service) come from the registries
// namespace.Ops and planner.Ops; nothing here is per operation.
//
// Invariants:
//
//   - Every error is {error, code, detail} with the exact Lance Namespace
//     code of the service's error; the HTTP status follows from the code
//     through one table (statusOf). The Lance client decides by the code,
//     so a code is never invented here: in particular CreateTableVersion
//     answers ConcurrentModification (14) only when the service does, that
//     is when the version exists.
//   - The path id is the request's id: a body id that disagrees is
//     InvalidInput (400); a missing one is taken from the path.
//   - Nothing reaches the service before the caller is authorized and the
//     id is valid; no input panics the handler (a panic is answered as
//     Internal).
//   - No web page of another origin can drive a route, authentication on
//     or off: a browser's cross-site request is refused (403) on every
//     route, and a mutation that is not application/json (415) — the only
//     kind a page can send to another origin without a CORS preflight,
//     which nothing here answers.
//   - An idempotent retry (Options.Idempotency) is answered only after
//     the route's operation authorized its caller again, without running
//     (namespace.Op.Authorize, planner.Op.Authorize).
//
// What it must not do: decide semantics (modes, preconditions, versions,
// branches, locations all belong to the service), touch Redis or object
// storage, or serve data-plane operations (insert, query, indices): those
// answer Unsupported (0, HTTP 406), since Lance runs them itself against
// the table's location. Restore and branch creation and deletion are
// served (namespace.Ops): the service writes the files Lance writes.
//
// GET /v1/changes (ChangesPath, changes.go) is the one route outside
// the registries: the change feed as Server-Sent Events of CloudEvents
// (namespace.Service.FollowChanges decides what the caller sees), each
// sequence's events followed by its id, resumed with Last-Event-ID. A
// batch's bytes are made once for every subscriber that shares it
// (namespace.EncodedBatch), gzipped once too for the clients that accept
// gzip (internal/gzipshare); a client that takes nothing for
// Options.StalledFeedTimeout is cut off, and the feed ends as the
// server drains (Options.Closing). OpName labels it "Changes".
//
// The conformance tests validate every served operation's requests and
// replies against the Lance Namespace spec, vendored with its commit in
// testdata/spec/.
package restserver
