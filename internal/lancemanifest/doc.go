// Package lancemanifest is Lance's on-disk layout, in one place: how a
// table names its manifests (naming.go: the V1 and V2 schemes, staging
// and detached names, _versions/), where a branch keeps its chain and how
// Lance records branches and tags (layout.go: tree/<branch>,
// _refs/branches/, _refs/tags/). A dataset's directory is a Dir, whose
// methods give every key inside it, and a version chain a Chain (a table's
// Dir and a branch); the claim protocol, whose public API names chains by
// string as Lance's ExternalManifestStore does, converts at its edge. And
// what a manifest file holds
// (manifest.go: the table's schema, its fragments with their rows,
// deletions and data files, its indices, and the version's time, branch
// and writer, so that the catalog can describe a table's shape and growth
// without opening its data), and every file a manifest references
// (references.go: data files, deletion files by Lance's
// {fragment}-{read_version}-{id}.{arrow|bin} naming, index directories by
// UUID, external row-id files, the transaction file, and the base each
// lives in), which is what a cleanup must keep. The claim protocol, the
// catalog, repair and cleanup all name Lance's files through it.
//
// A manifest file (a table's _versions/<n>.manifest) ends with a 16-byte
// footer: the little-endian int64 position of the manifest message, two
// little-endian uint16 format versions, and the magic "LANC". At that
// position a little-endian uint32 length precedes the protobuf-encoded
// lance.table.Manifest message (protos/table.proto of lance-format/lance);
// an index section, when present, is a lance.table.IndexSection message
// at the position the manifest names, framed the same way.
//
// The messages are read with protowire, field by field, keeping only the
// fields flightns uses and skipping every other (Lance adds fields often);
// the reader never trusts a length or a position it has not checked
// against the bytes it holds, and a malformed file is an error, never a
// panic. ReadReferences is stricter than Read: a field that names files
// in a form it cannot read (an unknown deletion file type, an index
// without a 16-byte UUID, a wrong wire type) is an error rather than a
// skipped field, because a reference left out would let a cleanup delete
// a file that is still in use.
//
// It also writes what Lance writes for a restore and a new branch
// (write.go): the manifest of the version made, edited at the wire level
// from the one it comes from (every field kept byte for byte but those
// Lance changes), its transaction, and the branch's ref file.
package lancemanifest
