// Package namespace is the core of flightns: the Lance Namespace operations
// — namespaces, tables, table versions, multi-table commits — with their
// exact semantics and error codes, over the claim protocol (redisclaim) and
// the __manifest table (manifesttable). The Flight SQL and REST surfaces
// are thin adapters over a *Service. The operations' request and response
// models, ids and operation names are package api's: the wire contract,
// which the server, the client and the CLI share.
//
// Service is a facade over parts, one per seam (parts.go): it serves the
// namespace and table operations itself, and Access (roles and grants),
// Drops (undrop and the trash), Branches (branches, tags and restore),
// Versions (a table's versions, retention and statistics) and Index (the
// catalog's rows as this process holds them, reserved locations, and the
// repairs of the object index) serve the rest. Its consumers depend on
// the parts through interfaces of their own (planner.Catalog,
// planner.Access, repair.Index), never on the __manifest table or the
// claim store reached through the service; Claims and Table remain for
// the server's wiring, the web console and the benchmarks.
//
// Every index change writes its change feed event (api.Event: who, when,
// what) as a commit log entry of its own beside its other entries, in
// the same script (indexChange.event); a change made in object storage
// (a tag, a branch's ref, the grants, a restore, a cleanup) records an
// intent in Redis first and appends its event, deleting the intent, in
// one script once it is made, the maintainer resolving what a crash
// leaves from storage (intents.go). FollowChanges serves the feed of
// what a caller may read, sharing each batch among the followers that
// see it alike (changes.go); a follower's credentials are authenticated
// again every two seconds (auth.Recheck) and one principal holds at most
// Config.FeedsPerPrincipal feeds at once (HoldFeed).
//
// Where things are decided and kept:
//
//   - Catalog mutations (create, declare, register, rename, drop, evolve,
//     and every batch) are one kind of change of the object index in
//     Redis (indexChange): guards on what the change was read from
//     (parent exists, name free, namespace empty for Restrict, a location
//     that meets no reserved table directory) and the writes, applied with the commit-log
//     entries by the claim script, whole or not at all; they are
//     acknowledged only once the __manifest segment holding them is
//     durable.
//
//   - Table versions go through redisclaim: a version exists once its
//     final manifest exists in object storage; reads of versions (latest,
//     describe, list) come from the claim records, so they see every
//     acknowledged commit at once. CreateTableVersion takes the table's
//     location from a cache (locCache), pinned by a guard in the claim
//     script: a stale entry costs a retry, never a wrong commit (a
//     staging manifest outside the cached directory has the location read
//     again before it is refused).
//
//   - Object storage is the system of record: when Redis loses its state the
//     object index is rebuilt from __manifest (and the claims from the
//     tables' _versions directories) before anything is accepted again.
//
//   - Lance's own refs are its files: tags (_refs/tags/) are read and
//     written in Lance's format; branches (_refs/branches/) are listed.
//     Each branch's versions are a chain of their own under the table's
//     tree/<branch>/ (chainOf): a branch request never reads or changes
//     main's, and a branch whose manifests Lance removed is forgotten. A
//     branch exists while its ref file or versions of it do; a deleted
//     branch's versions go with it, and its name is free again.
//
//   - A table's life after its commits (docs/maintenance.md): versions
//     Lance's cleanup pruned leave the catalog when a request or the
//     maintainer meets them (prune.go, over redisclaim.FollowPrunes);
//     retention properties, inherited down the tree and set only by an
//     admin of the object (retention.go: mayRetain), are applied by
//     CleanupTable (cleanup.go, over internal/cleanup: records
//     first, then manifests, then files) and by the maintainer
//     (maintain.go: one process at a time, a lease in Redis); a cleanup
//     locks its table's directory before it plans, and no table is made
//     at a directory whose cleanup runs (claimLocation). Compaction
//     is handed to engines (compaction.go): a claim finds the tables with
//     more fragments than their bound and leases each as a job to one
//     worker at a time, every change of a job with its change feed event
//     in the same script; a job names its table as the table is named now
//     (tableIDAt) and is its claimant's to renew, complete or fail.
//
//   - Ops is the one registry of operations (name, REST path, role,
//     description, and Run: decode, bind what REST adds, call the
//     service) the REST routes and the Flight actions are both a loop
//     over, each row keyed by its api.Op name; api.ParseID is the one
//     parser of ids, the REST adapter's included.
//
//   - A BatchCommitTables becomes one redisclaim.Commit: each operation
//     kind has its method on batchBuilder, which adds typed guards and
//     writes (redisstate.GuardEq, HSet, …) and commit-log entries whose
//     kinds come from internal/commitlog; every Redis key and script is
//     internal/redisstate's.
//
//   - Access (access.go) is decided once, here, for every surface: the
//     registry's Run checks the caller (auth.PrincipalFrom) against each
//     object its request names, by its catalog-wide role or what the
//     catalog's grants give it there (grants.go: create-only generations
//     under __manifest/_auth/grants/, re-read every GrantsRecheck); what
//     it may not read is answered as missing, before anything is looked
//     at, and left out of lists; Access.Readable is the scope the SQL engine
//     filters a grant-limited caller's queries by.
//
//   - Statistics and detailed metadata are read from the version's Lance
//     manifest (lancemanifest), never from the commit path.
//
//   - For repair: Index.RestoreIndexedRows writes the rows of objects Redis's
//     object index holds and __manifest lost; AdoptTableDirectories
//     registers the table directories storage proves when nothing else is
//     left. A drop that deletes data leaves a tombstone of the location
//     (dropped.go) for gc; a deregistration clears the tombstones at and
//     above its directory, whose data stays.
//
//   - Undrop (trash.go): with a drop retention, DropTable and DropNamespace
//     write a create-only record of what they remove before they remove
//     it, and keep the tables' directories; UndropTable and
//     UndropNamespace put a drop back in one index change, all or nothing;
//     PurgeTrash deletes past the retention, never a location a live table
//     or a kept drop holds, and marks each drop first ({C}:purging), which
//     an undrop's index change is guarded on.
//
//   - Table directories are disjoint and owned (reserve.go): every live
//     table's directory and every one a drop keeps or is deleting is
//     reserved in Redis, and a location that equals, contains or lies
//     inside a reserved one is refused in the script that takes it, naming
//     no other table; data no table owns is taken into the catalog only by
//     a caller with the write role on the whole catalog; deleting a
//     table's data spares what another table holds (Index.Sparing).
//
// Invariants: ids and locations are validated before they reach Redis or
// storage; a table's location lies inside the catalog root, and no other
// table's directory equals, contains or holds it; errors carry Lance
// Namespace codes (nserror).
package namespace
