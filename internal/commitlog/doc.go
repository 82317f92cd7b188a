// Package commitlog is the one definition of the catalog's commit log in
// Redis: the kinds of its entries, the field that names the kind, how
// long the stream is kept, and the encoding of version ranges. The Lua
// scripts of redisclaim, namespace and manifesttable write entries, the
// namespace service's batches build them in Go, and manifesttable's
// materializer reads them (Table.translate); all of them take the names
// from here, and a test holds every script's literal kinds to Kinds (Lua
// cannot import Go). Every catalog script is built with Script, which puts
// the prelude (prelude.lua) before it: catalog_epoch (the epoch check that
// answers NOEPOCH when Redis lost the catalog's state), next_seq (the
// catalog sequence) and append_log (XADD with the trim to the configured
// length), so that the state machine's shared steps are written once.
// Its keys (Keys) are the catalog's every Redis key.
//
// An entry is a stream entry whose fields alternate name and value; the
// field KindField names its kind, the others depend on it:
//
//	put                    row: a __manifest row (JSON) to insert or replace
//	delete                 key: the key (JSON) of a row to delete
//	version                t, v, r: a table version's chain, number and record (claim.lua)
//	read_version           t, v: a partition's read_version raised (batches)
//	delete_versions        t, vs: versions forgotten (comma-separated)
//	delete_version_ranges  t, ranges: versions forgotten (EncodeRanges)
//	drop_table             t: a table's chain dropped, with its versions
//	rename_table           from, to: a table's id renamed
//	stats                  row: a version's statistics (manifesttable/stats.go)
package commitlog
