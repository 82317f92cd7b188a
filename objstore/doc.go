// Package objstore is flightns's view of object storage: the system of
// record for every acknowledged byte (docs/architecture.md, "Rules that hold everywhere").
//
// A Store is opened from a root URI and addresses objects by keys relative
// to that root:
//
//   - file:///abs/dir  a local directory, through a gocloud.dev/blob driver
//     of our own (disk.go) whose create-only writes hold across processes:
//     the bytes go to a hidden temp file that is made durable and then
//     renamed to its final name with renameat2(RENAME_NOREPLACE), so exactly
//     one of several racing processes wins and no reader ever sees a partial
//     object; the directory is made durable before the write is reported.
//     Concurrent waits for durability are group-committed (disk_sync.go).
//     Every path is resolved beneath the root, in one openat2(2) with
//     RESOLVE_BENEATH where the kernel has it and through os.Root
//     elsewhere (disk_beneath.go), so neither ".." nor a symbolic link can
//     reach outside the root.
//   - s3://bucket/prefix?endpoint=…&region=…  S3 or any S3 protocol server,
//     through gocloud.dev/blob/s3blob; create-only is If-None-Match: *.
//     client_endpoint=… (ParamClientEndpoint), the endpoint engines reach
//     the same store at, is checked and taken out before gocloud reads
//     the URI: the store never uses it.
//   - mem://  a process-local store for tests (gocloud.dev/blob/memblob).
//
// Operations: Put, PutIfAbsent (create-only), Get, Head (size, ETag), List
// (by prefix, sorted by key), CopyIfAbsent and PromoteIfAbsent (materialize
// a staging object at a final key, create-only; Durable fsyncs a source
// ahead of its promotion), Delete, DeletePrefix and DeletePrefixExcept (a
// directory's objects, sparing the directories inside it that are named).
// A caller asks what a backend does (PromotesByRename, Remote), never
// which one it is: the package exports no backend kind.
// Errors match ErrNotFound,
// ErrAlreadyExists or ErrInvalidInput with errors.Is; anything else is an
// I/O error of the store.
//
// Invariants: a key is validated (no "..", no empty or "." segments, no
// segment over 255 bytes, no leading slash, no control characters) before
// any I/O, so a bad key never
// touches storage; a create-only write either creates the whole object or
// fails with ErrAlreadyExists and leaves the existing bytes as they were.
//
// VendCredentials (vend.go) asks STS for temporary credentials whose
// inline session policy reaches one key prefix alone (a table's
// directory), read-only or read-write; only an s3:// store vends.
//
// ProbeConditionalCopy (condcopy.go) asks an s3:// store whether it
// refuses a CopyObject with If-None-Match: * onto an existing key (AWS S3
// does, MinIO overwrites); SetConditionalCopy, only after it said yes,
// makes promotions of sources not read one server-side copy instead of a
// GET and a conditional PUT, with the same answers.
//
// Faults can be injected at every operation, before or after it runs,
// with Options.Faults; tests use this to cut the protocols at named seams.
package objstore
