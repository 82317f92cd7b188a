// Package redisclaim decides which staged manifest becomes version N of a
// table: Lance's ExternalManifestStore protocol with Redis in DynamoDB's
// place, plus atomic claims across many tables (docs/protocol.md).
//
// A writer stages a manifest; a Lua script claims version N for it (only
// head + 1, never twice); the staged object is promoted create-only to its
// final path (the commit point); the writer reads its claim back (a
// claim Redis lost meanwhile has the head raised from storage) and
// replies; then the record is flipped to final and the staging object
// removed, after the reply. Any reader that finds a claimed, staged
// version finishes it. On object stores reached over a network the
// staging object is read before the claim, so a commit waits for two
// round trips to the store (the read, the conditional PUT) — except
// where the store refuses a conditional copy onto an existing key and
// the writer gave the manifest's size: there the version is claimed
// first, unproven, promoted by one server-side copy, proven after the
// reply (the final manifest read for its size) or taken back when its
// staging object does not exist (retract.go). Multi-table claims carry a commit record that is their
// commit point, rolled forward by the caller, a reader or recovery.
// Deleted versions leave a tombstone, so they are not read back from
// storage. Versions whose manifests Lance's cleanup deleted are told from
// drift by the shape of what a cleanup deletes (prune.go: ClassifyPrunes,
// FollowPrunes). When Redis loses its state, Recover rebuilds heads and records
// from the tables' _versions directories under a new epoch.
//
// A Store is either of its own (New: an ExternalManifestStore, claims and
// nothing on top) or the claims of a catalog (NewIn with a Catalog, as
// the namespace service opens it). Recovering and finishing a committed
// transaction are then the catalog's: Catalog.Recover drives a Recovery
// through its steps (BeginRecovery, WaitOut, RebuildClaims, the
// catalog's own rebuild under the lock's Token, Finish, End), and
// Catalog.CompleteTxn applies a transaction's catalog part before it is
// cleaned up. Config holds settings only, no functions into the layers
// above. Errors name a table as the catalog does (Catalog.Name: its id),
// else by its directory; a writer's
// Location carries the manifest bytes it promoted (Location.Manifest),
// for the catalog's statistics.
//
// A claim entitles a write only for a while: a final manifest or a
// transaction's commit record becomes visible only within PromoteWindow
// of reading the claim that entitles it (checked right before the
// create-only rename or PUT through objstore.WriteOptions.Gate; an older reading is
// made again in Redis), and a recovery waits twice that long before it
// reads storage, so no claim of a lost epoch lands in a version a new
// epoch has given away. The recovery lock is released and renewed by
// compare-and-delete (internal/redislock).
//
// Redis is reached through internal/redisstate alone: its keys, its
// scripts (claim.lua and the rest) with their typed replies, and its
// plain commands (the recovery lock, heads, a transaction's hash); this
// package decides what each reply means. Every call that may find Redis
// without the catalog's state goes through WithEpoch, the one "recover,
// then retry" policy (one budget, Attempts), which the namespace service
// uses too, also for a change whose guard found what it was built from
// changed meanwhile (Again). Commit with Extras (redisstate guards, writes, deletions, log
// entries) is how a layer above changes its own Redis state atomically
// with versions, or alone: every change of the namespace service's object
// index is one.
//
// With Redis replicas, nothing is answered on a write no replica has
// (redisstate.Replicas: a fence write and WAIT on one connection;
// Config.ReplicaAcks): the gate of every commit point waits until a
// replica has the claim, and a refusal (a version taken, a guard) or a
// catalog change alone runs its claim in the same pipeline as the WAIT,
// so that nothing anyone is told is taken back by a failover. No object's ETag is kept or reported (Lance's
// external-manifest protocol: storage is authoritative).
//
// Step hooks (Config.Step) name every protocol seam for fault injection.
package redisclaim
