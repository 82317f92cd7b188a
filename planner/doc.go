// Package planner serves partitioned tables (docs/planner.md): a partitioned
// table is a namespace whose properties hold its schema ("schema", a
// JsonArrowSchema with lance:field_id on every field) and its partition
// specs (partition_spec_v<N>); under it, per spec version, a namespace
// v<N>, one namespace level per partition field, and a leaf table
// "dataset" holding the partition's rows. Partition values are the
// partition_field_<field_id> columns of those rows in __manifest.
//
// What it does:
//
//   - Specs and their evolution: transforms identity, year, month, day,
//     hour (Iceberg's results: years, months and hours since 1970, days as
//     a date), bucket and multi_bucket (Murmur3 x86 32-bit, seed 0, over
//     Iceberg's bytes for each type), truncate (integers toward zero,
//     strings by characters); expression fields are stored and carried but
//     never used to prune. Field ids are reused only with the same
//     signature; concurrent evolutions cannot both win.
//   - ResolveRow / ResolveOrCreate: partition namespaces are named by 16
//     base36 characters of SHA-256(field id, value), so racing creators
//     agree on every name and end at one leaf.
//   - PlanScan: parses a SQL filter (errors carry the position), walks each
//     spec's tree in the catalog index at one catalog sequence, judges the
//     filter at every level through the transforms' preimages (inclusive
//     projection; the fields of one column nest, so a day range over a
//     year+month table keeps exactly those months) and keeps every leaf
//     that may hold a matching row, with the residual filter. Answers are
//     Arrow record batches; plan_scan is also a SQL table function.
//   - Commit: a write across partitions is one BatchCommitTables
//     transaction — a create_table_version and a set_read_version per
//     written leaf, an assert_table_version per leaf read — so plans see
//     all of it or none of it.
//
// Filters follow SQL's three-valued logic: NULL operands make UNKNOWN
// (Unknown), which NOT keeps UNKNOWN; NOT is pushed to the atoms by
// identities of that logic before the judgement, so a subexpression never
// TRUE can be judged FALSE. Integers are exact over int64, and preimages
// saturate at the ends of their ranges.
//
// Invariants: a plan never drops a leaf that may hold a matching row, and
// a leaf's residual selects exactly the rows of the leaf the filter
// selects (the differential oracle, oracle_test.go, checks both against
// DuckDB over random catalogs, and that every surface answers the same);
// all a plan reads belongs to one catalog sequence. The package keeps no state but a cache of parsed
// definitions; it never writes Redis or object storage itself — every
// change goes through the namespace service, which it knows only through
// the Namespaces interface (the operations it calls, and the service's
// parts it checks callers by, Access, and reads the catalog through,
// Catalog: the rows of its index of __manifest, never the table itself);
// a planner that only plans, NewScanner, needs just a Catalog.
// Its operations (Ops) are registry rows named by api.Op constants, as
// the namespace service's are.
package planner
