// Package redisclaim decides which staged manifest becomes version N of a
// table: Lance's ExternalManifestStore protocol with Redis in DynamoDB's
// place, plus atomic claims across many tables (DESIGN §4.1, §4.2).
//
// A writer stages a manifest; a Lua script claims version N for it (only
// head + 1, never twice); the staged object is promoted create-only to its
// final path (the commit point); the record is flipped to final and the
// staging object removed. Any reader that finds a claimed, staged version
// finishes it. Multi-table claims carry a commit record that is their
// commit point, rolled forward by the caller, a reader or recovery.
// Deleted versions leave a tombstone, so they are not read back from
// storage. When Redis loses its state, Recover rebuilds heads and records
// from the tables' _versions directories under a new epoch.
//
// Step hooks (Config.Step) name every protocol seam for fault injection.
package redisclaim
