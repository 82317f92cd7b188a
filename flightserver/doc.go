// Package flightserver is the Arrow Flight surface of flightns (docs/flight.md):
// Flight SQL over __manifest for DBeaver (the Flight SQL JDBC driver),
// ADBC and Go's database/sql; catalog browsing; and the Lance Namespace
// operations as Flight actions. It is a thin adapter: queries go to the
// manifest table's sandboxed SQL engine, actions to the namespace service.
//
// A call travels: the recovery (outermost: a panic anywhere below is
// Internal, logged with its stack and counted through Config.Panicked;
// the goroutines a call starts recover for themselves) → the embedder's
// interceptors (Config.UnaryInterceptors and StreamInterceptors:
// metrics, request ids, logs) → gRPC interceptor
// (the gRPC health service, Config.Health, passes without credentials;
// everything else: authenticate from the authorization, x-api-key or
// auth-token-bin header, or else the client certificate (mutual TLS,
// Config.TLSClientCAFile); require the read role; audit a refusal
// (Config.Audit); turn any error into a gRPC status with the Lance code
// in an ErrorInfo detail) →
// Server (Handshake, DoAction and ListActions are its own; so are DoGet
// and GetFlightInfo of plans and of the change feed (changes.go: a
// stream of Arrow batches that follows the catalog's changes, cut off
// when its client stops reading; a batch's messages are marshalled once,
// LZ4- or ZSTD-compressed when the ticket asks, for every subscriber
// that shares it and passed through the server's
// codec as they are: codec.go), and DoPut's check that its first message
// carries a descriptor; everything else goes to arrow-go's Flight SQL
// router) → sqlServer (one short method per Flight SQL command).
//
// Queries: GetFlightInfo passes the SQL through the gate (exactly one
// read-only statement, classified by DuckDB's parser before anything
// runs), puts the SQL and the catalog sequence to wait for in the ticket
// and, when the SQL engine has a slot free (its semaphore is the one
// bound on queries: sqlengine.Config.MaxQueries), starts the query there:
// its schema is the
// running query's, and the query waits (at most StalledResultTimeout, at
// most MaxStartedQueries of them) for the DoGet of its ticket, so a
// statement is planned once. Without a slot it only plans (the schema
// comes from the prepared statement), and DoGet runs it. DoGet streams the
// result batch by batch, so every row of a result reflects one catalog
// sequence, named in the x-flightns-catalog-seq header. The queries run wherever Config.SQL says: the SQL engine of this
// process, or a SQL worker process (package sqlworker). A query waits
// until every change acknowledged anywhere before it was planned is
// visible (x-flightns-consistency: latest, the default; "visible" skips
// the wait). Prepared statements return their dataset and parameter
// schemas with IsUpdate=false (JDBC treats a statement without a schema as
// an update), live until closed or idle for a TTL, and bind one row of
// parameters by DoPut. Updates, ingestion and transactions are refused.
//
// Invariants: nothing here writes the catalog except an action, and an
// action runs only for a caller whose role reaches the action's (read for
// Describe/List/Exists, write for the rest); every mutation and every
// refusal is an audit event. What a call leaves for a later one (a
// started query, a parked plan, a prepared statement) is bound to the
// principal that made it (auth.go): to another its ticket or handle is
// as one whose query, plan or statement is gone, redeemed in the
// redeemer's own grants; and one principal holds at most its share
// (Limits.*PerPrincipal) of each of those pools. No message, however
// malformed or incomplete, panics: a missing part is InvalidArgument
// where it arrives. A Basic handshake answers a session bearer
// (auth: signed, good on every server of the catalog), and a handshake
// with a live one renews it. Every limit (message size,
// metadata size, result rows and bytes, query time, concurrent queries,
// open prepared statements, unfetched plans) fails with a status that
// names it; none truncates silently.
//
// Server.Query runs a statement through the same gate for another
// surface (the web console); a mutating action with idempotency-key
// metadata is answered once per key (package idempotency).
//
// It must not: interpret Lance semantics (the namespace service does), or
// let SQL reach files, the network or settings (the engine is locked).
package flightserver
