// Package sqlengine is flightns's SQL engine: an in-process DuckDB, locked
// down (no files, no network, no extensions, configuration locked,
// bounded threads, memory and spill), that one writer fills and queries
// read. It knows nothing of __manifest: package manifesttable creates its
// tables and views and loads them (a read replica of the table's Go
// index); the SQL worker process and, with --sql-isolation none, the
// server query it through manifesttable.Table.
//
// The writer (DB.Write) changes the tables in transactions and publishes
// each at a catalog sequence (Writer.Publish); a query reports the
// sequence whose state it read. Rows go in through DuckDB's appender
// from Arrow data chunks (Writer.InsertArrow), and statements the writer
// repeats are prepared once and kept (Writer.ExecPrepared). A query runs on a new connection in a
// read-only transaction, and passes the gate (gate.go) before anything of
// its text runs: exactly one statement that only reads, decided by
// DuckDB's parser. Results stream chunk by chunk; a request's context
// interrupts DuckDB. At most Config.MaxQueries queries run at once (one
// more fails at once: this semaphore is the server's one bound on
// queries, whichever surface asks), and as many statements are planned
// at once (more wait). A request whose context carries a Scope
// (scope.go) sees only the rows of some namespaces: it resolves names in
// the scoped schema, whose views filter by the scope it sets on its own
// connection, and its text is screened first (screen.go). Table
// functions implemented in Go (the planner's plan_scan) are registered
// with DB.RegisterTableFunction. It talks to DuckDB through duckdb-go's
// C-API mapping, not its database/sql driver (duck.go says why).
//
// A build without the duckdb_arrow tag stops here with one error naming
// the tag (stub.go).
//
// It must not: let SQL reach files, the network or settings, let anything
// a query does reach another request, or be the source of anything
// durable (callers derive durable state from their own index and
// storage, never from the engine).
package sqlengine
