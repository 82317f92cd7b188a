// Package redisstate owns the catalog's state in Redis: every key (a Key
// that Keys names, all under one hash tag so a catalog lives in one slot
// of a cluster),
// every Lua script (scripts/, each built with the shared prelude that
// checks the epoch and appends to the commit log), a typed call and reply
// per script (Catalog's methods), the catalog's plain commands, each a
// method named for what it means (plain.go: IndexField, Children,
// DurableSeq, RequestFlush, ReadLog, …), and the pipeliner that sends the
// scripts of concurrent callers together. The packages above it —
// redisclaim (version claims and recovery), namespace (the object index),
// manifesttable (the log's appends and reads, the materializer's lease,
// and the current records of the unproven claims it holds the log at:
// Records) and idempotency (its records) — decide what to do with a reply; none
// of them builds KEYS or ARGV, reads a reply by position or sends a
// command of its own. They name the go-redis client they are given
// Client; only this package, internal/redislock, internal/redisurl and
// internal/redisproc import go-redis (.golangci.yml's depguard).
//
// What the log's entries hold is commitlog's; what a version's record
// holds is Record, decoded from the scripts' JSON (every value a string)
// into typed fields at this boundary. A record is staged (claimed), final,
// deleted (a tombstone), or retracted (the tombstone of a claim taken
// back, which a new claim of the version replaces); a staged record may
// be unproven (claimed before its staging object was seen: claim.lua's
// seventh argument per table, and no claim is made above it while it is
// staged: PENDING) and marked as being taken back (retract.lua's two
// steps, mark then remove).
//
// Replicas confirms that a Redis replica has what was read or written on
// the primary (a fence key and WAIT, pipelined after it on one
// connection), for the answers and segments a failover must not take
// back. The fence key is its one plain write: a counter of no meaning.
// A logout's end of a session (EndSession) is another: a key of its own,
// set once, that expires with the session. Session writes (revocations,
// ends) are confirmed on replicas too when ConfirmOn is given.
//
// Every write of versions, heads, the epoch (opened by open_epoch.lua,
// closed by close_epoch.lua), the sequence, the commit log and the object
// index goes through a script. Seven writes are plain commands, each safe
// alone (eight with the replicas' fence above):
//
//   - the recovery lock, SETNX with an expiry (LockRecovery, for
//     redisclaim's recovery): it guards nothing but who recovers, and
//     open_epoch.lua checks the token before it opens the epoch; released
//     and renewed by compare-and-delete (internal/redislock);
//   - DEL of a settled transaction's hash (DeleteTxn, for redisclaim's
//     finishTxn): only after every member is final and its record deleted
//     from storage, so a reader that finds it gone finds no staged member
//     either;
//   - the catalog's root binding, SETNX (BindRoot, for namespace's
//     bindRoot): written once, never changed;
//   - the durable sequence, SET (PublishDurable) by the materializer's
//     lease holder alone (manifesttable's publishDurable), in order, or by
//     `admin repair`, which refuses while a server holds that lease; a
//     follower only reads it as a hint to load segments, which storage
//     then proves;
//   - an idempotency key's reservation, SET NX GET with a lease
//     (ReserveIdempotency): the record of one request's key, apart from
//     the catalog's state; its answer and its release are scripts
//     (idem_finish.lua, idem_release.lua) that touch only the owner's own
//     reservation;
//   - an intent of a change made in object storage, HSET of a fresh id
//     (BeginIntent, confirmed on replicas): nothing reads it but the
//     script that appends its event and deletes it (a guard on it), the
//     guarded drop (intent_drop.lua) and the maintainer that settles it;
//   - HDEL of the settled compaction versions of tables that are gone
//     (ForgetSettled): a version forgotten only makes its table judged on
//     its fragments again.
package redisstate
