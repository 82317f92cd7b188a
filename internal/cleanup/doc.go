// Package cleanup deletes old versions of a Lance table, and the files
// only they used, in Go: what Lance's own cleanup
// (rust/lance/src/dataset/cleanup.rs, LanceDB's
// optimize({cleanupOlderThan})) deletes, decided the same way, but for
// every branch of the table at once and in an order that a catalog can
// follow. See docs/maintenance.md.
//
// NewPlan reads the table: every manifest of main's chain and of every
// branch's (tree/<branch>/, found from _refs/branches/, from the caller,
// and from the directories themselves), and the tags and branch records
// under _refs/. Per chain it keeps the latest version, the last KeepLast,
// those not older than the cutoff, every tagged version and every version
// a branch forks from, and prunes the rest. It then lists the files Lance
// would delete: in each managed chain's _transactions/, _deletions/,
// _indices/<uuid>/ and data/ (and _versions/.tmp*), every file that no
// kept manifest of any chain references and that is older than the grace
// period. References match by name, table-wide: a branch names its
// parent's files through a base path, and such a file is kept wherever it
// is. Execute then (1) hands each chain's pruned versions to the caller's
// forget, (2) deletes the pruned manifests, (3) deletes the files, each in
// batches; before (2) and (3) it looks again for manifests, tags and
// branches written since the plan and spares what they reference.
//
// Invariants:
//
//   - Nothing a kept version references is deleted, so every kept version
//     reads at every step; a crash leaves work that the next plan redoes.
//   - Nothing outside the table's directory is touched, and nothing of a
//     chain nested in another (a branch inside main's tree/) is deleted
//     as the outer chain's.
//   - When in doubt, keep: a manifest or ref file that cannot be read
//     fails the plan (it may reference anything); a file of a kind or
//     place Lance's cleanup does not delete, a file without a modification
//     time, a file younger than the grace period, the manifests of a
//     tree/ directory no branch records, and staging and detached
//     manifests (which also protect what they reference) are kept.
//
// It must not: write anything, resolve a base path to delete outside the
// table, or delete a version's manifest before the caller has forgotten
// it. It imports only objstore, lancemanifest and nserror.
package cleanup
