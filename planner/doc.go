// Package planner answers plan_scan for partitioned tables as Arrow record
// batches, pruning partitions through their transforms, and commits writes
// that span partitions atomically (DESIGN §4.5).
//
// Not yet implemented; see issue "planner".
package planner
