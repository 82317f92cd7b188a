// Package commitlog is the one definition of the entries of the catalog's
// commit log: the kinds of its entries, the field that names the kind,
// how long the stream is kept, and the encoding of version ranges. The
// Lua scripts (internal/redisstate) write entries, the namespace
// service's batches build them in Go, and manifesttable's materializer
// reads them (Table.translate); all of them take the names from here, and
// a test holds every script's literal kinds to Kinds (Lua cannot import
// Go). Where the log lives, and every other key, is redisstate's.
//
// An entry is a stream entry whose fields alternate name and value; the
// field KindField names its kind, the others depend on it:
//
//	put                    row: a __manifest row (JSON) to insert or replace
//	delete                 key: the key (JSON) of a row to delete
//	version                t, v, r: a table version's chain, number and record (claim.lua)
//	read_version           t, v: a partition's read_version raised (batches)
//	delete_versions        t, vs: versions forgotten (comma-separated)
//	delete_version_ranges  t, ranges[, txn]: versions forgotten (EncodeRanges),
//	                       in the multi-table transaction txn
//	drop_table             t: a table's chain dropped, with its versions
//	rename_table           from, to: a table's id renamed
//	stats                  row: a version's statistics (manifesttable/stats.go)
//	event                  e: a catalog change as the change feed shows it
//	                       (api.Event as JSON, its sequence the entry's),
//	                       beside the entries that make the change
package commitlog
