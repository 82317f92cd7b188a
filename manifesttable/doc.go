// Package manifesttable keeps the __manifest table — namespaces, tables,
// table versions and partitions as rows — as Parquet in object storage,
// group-committed from the Redis commit log and queryable with SQL
// (docs/manifest.md).
//
// The data flows one way: the commit log → one Parquet segment per group
// commit (the lease holder writes it, create-only, of entries a Redis
// replica has: Config.ReplicaAcks) → the Go index of every
// current row (every process, from the segments in storage) → the SQL
// engine (DuckDB, a read replica of the index, in processes that serve
// SQL). Snapshots are written from the index.
//
// A table_version row is keyed (table, Lance branch, version): main's
// branch is "" (NULL in storage); a version log entry names its chain by
// directory, and a branch's chain is the table's tree/<branch>
// (lancemanifest.Chain). After a version row is durable, a background
// reader in the materializing process reads the version's Lance manifest
// and appends a "stats" entry (rows, fragments, data bytes, schema, small
// fragments, deleted rows, and the operation of the version's Lance
// transaction, transaction.go), at most one a second; it applies only to
// the row it was read for, and nothing on the commit path waits for it
// (stats.go). Segments also keep the change feed's events (events.go:
// written by each change as a commit log entry of its own, or derived
// from version entries; Events reads the history back, kept for
// Config.EventHistory). A version entry of an unproven claim (redisclaim
// claims first where the store copies) holds the log until Redis says
// how it ended: final, its row comes from the record as it is then;
// taken back, it makes nothing; left staged past settleAfter, the
// materializer finishes it as a reader would (SettleWith;
// unproven.go). A change that removes version records stamps its table's
// row with the time (last_cleanup_at); with the statistics it makes the
// maintenance signals of the view table_maintenance and of
// Table.MaintenanceTotals (maintenance.go). Stalled reports a
// materializer whose rounds keep failing (a full disk), for readiness and
// for mutations waiting on durability. PlanStorageRepair and Quarantine
// (repair.go) take the files a loader cannot use, and the segments past
// the longest readable chain, out of the history into _quarantine/, for
// `admin repair`.
//
// The commit log's entry kinds and encodings are internal/commitlog's, its
// keys and scripts internal/redisstate's; Table.translate turns each kind into row changes with a method of its
// own (translators). Table's state is grouped by owner, each group with the
// lock that guards it: idx (the rows), applied (segments applied in
// order), waiters (WaitDurable), stall (failing rounds) and lease (the
// materializer's lease). The SQL engine itself (DuckDB, the gate, query
// streaming, table functions) is package sqlengine; engine.go creates the
// __manifest tables and views in it and loads the index's rows, segments
// in transactions published at their last sequence: those that arrive
// within Config.EnginePace of the last transaction go in together,
// unless a query waits to see one (Table.applier, pace).
//
// Invariants: durable state — segments, snapshots, the translation of the
// commit log (renames, drops, deleted ranges), reconciliation after Redis
// lost state — is derived only from the index and the objects in storage,
// never from the SQL engine. A query is exactly one statement that only
// reads, decided by DuckDB's parser before anything of it runs (gate.go);
// each query runs on a new connection in a read-only transaction and
// streams its result.
//
// It must not: let SQL reach files, the network or settings, or let
// anything a query does reach another request or the index.
package manifesttable
