// Package repair holds the operator's tools for a catalog that went wrong:
// recover (rebuild Redis state from object storage), compact (write a
// __manifest snapshot now), verify (compare every table's version records
// with its manifests in storage — main's and each Lance branch's, under
// tree/<branch>/ — and the __manifest table's segments and snapshots with
// both; versions Lance's cleanup pruned are reported as pruned, not drift,
// and leave the catalog as every request makes them; optionally repair
// the drift: a branch whose manifests Lance removed is forgotten whole),
// repair (Repair: a catalog whose __manifest
// files are damaged keeps its longest readable chain, the other files go
// to quarantine, and what is past the chain is re-derived from Redis's
// commit log and object index and from storage, with a report of what is
// lost), and gc (delete orphaned staging manifests, and what a stale
// writer left in a dropped table's location). The `flightns admin`
// commands are thin wrappers around it; a running server may serve the
// same catalog meanwhile, except under Repair's quarantine, which refuses
// while a server holds the materializer lease.
//
// It works on a Catalog: the claim store and the __manifest table as
// such (what it repairs), and the object index's reservations (Index,
// which namespace.Index satisfies); CatalogOf hands over a namespace
// service's. It never calls the service's operations.
//
// Invariants:
//
//   - Object storage is the truth: verify repairs Redis and __manifest to
//     agree with storage, never the other way round; it never writes or
//     deletes a final manifest.
//   - Verify reads __manifest from its files in storage alone
//     (manifesttable.LoadState), never from the SQL engine or a running
//     index, so a poisoned engine is never trusted; segments and snapshots
//     are create-only history that it reports on and never rewrites (a
//     missing version row is re-derived through the commit log).
//   - gc deletes only staging objects (names "<final>-<suffix>") older than
//     the safety window, and never one a version record still points at
//     (a commit in flight); and, under a location a drop marked (its
//     tombstone in __manifest/_dropped/), files older than the window,
//     never one another table holds (a live table's directory, one a drop
//     keeps, or one inside it: the object index's Sparing).
//   - Verify reports table directories that meet (overlapping-location)
//     and repairs no record of a table whose directory meets another's.
//   - Repair never deletes a file of __manifest's history: it moves it
//     (a create-only copy, then the delete) under __manifest/_quarantine/;
//     an interrupted move is finished by the next run.
//   - Every long operation reports progress through a callback and stops
//     at the first error of storage or Redis, leaving what it did so far
//     consistent (each repair is one protocol operation).
//
// What it must not do: rewrite history (heads only move up), delete
// anything but staging objects and a dropped table's leftovers, or run a recovery behind a lock other than
// the protocol's own (redisclaim serializes recoveries).
package repair
