// Package manifesttable keeps the __manifest table — namespaces, tables,
// table versions and partitions as rows — as Parquet in object storage,
// group-committed from the Redis commit log and queryable with SQL
// (DESIGN §4.3).
//
// Not yet implemented; see issue "manifesttable".
package manifesttable
