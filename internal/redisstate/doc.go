// Package redisstate owns the catalog's state in Redis: every key (Keys,
// all under one hash tag so a catalog lives in one slot of a cluster),
// every Lua script (scripts/, each built with the shared prelude that
// checks the epoch and appends to the commit log), a typed call and reply
// per script (Catalog's methods), and the pipeliner that sends the
// scripts of concurrent callers together. The packages above it —
// redisclaim (version claims and recovery), namespace (the object index)
// and manifesttable (the log's appends and the materializer's lease) —
// decide what to do with a reply; none of them builds KEYS or ARGV or
// reads a reply by position.
//
// What the log's entries hold is commitlog's; what a version's record
// holds is Record.
//
// Replicas confirms that a Redis replica has what was read or written on
// the primary (a fence key and WAIT, pipelined after it on one
// connection), for the answers and segments a failover must not take
// back. The fence key is its one plain write: a counter of no meaning.
// A logout's end of a session (EndSession) is another: a key of its own,
// set once, that expires with the session. Session writes (revocations,
// ends) are confirmed on replicas too when ConfirmOn is given.
//
// Every write of versions, heads, the epoch, the sequence, the commit log
// and the object index goes through a script. Four writes are plain
// commands, each safe alone (five with the replicas' fence above):
//
//   - the recovery lock, SETNX with an expiry (redisclaim's recovery): it
//     guards nothing but who recovers, and open_epoch.lua checks the token
//     before it opens the epoch; released and renewed by
//     compare-and-delete (internal/redislock);
//   - DEL of a settled transaction's hash (redisclaim's finishTxn): only
//     after every member is final and its record deleted from storage, so
//     a reader that finds it gone finds no staged member either;
//   - the catalog's root binding, SETNX (namespace's bindRoot): written
//     once, never changed;
//   - the durable sequence, SET by the materializer's lease holder alone
//     (manifesttable's publishDurable), in order, or by `admin repair`,
//     which refuses while a server holds that lease; a follower only reads
//     it as a hint to load segments, which storage then proves.
package redisstate
