package redisstate

// Key is a Redis key of a catalog, named by Keys: the one way a key is
// spelled. The packages above hand it back to redisstate (a guard's or a
// write's key, a lease); it becomes a string only where redisstate hands
// it to Redis (and in tests that read Redis directly).
type Key string

// names are keys as go-redis takes them.
func names(keys []Key) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = string(k)
	}
	return out
}

// Keys names the Redis keys of one catalog: the commit log and everything
// the scripts keep beside it. Every key starts with the hash tag
// {catalog}, so all of a catalog's keys live in one slot and every
// multi-key script runs unchanged on Redis Cluster.
type Keys struct {
	tag string // "{catalog}"
}

// KeysOf names the keys of catalog (a valid catalog name: see
// redisclaim.ValidateCatalog).
func KeysOf(catalog string) Keys { return Keys{tag: "{" + catalog + "}"} }

// Tag is the hash tag, "{catalog}".
func (k Keys) Tag() string { return k.tag }

// Epoch is present while Redis holds the catalog's state.
func (k Keys) Epoch() Key { return Key(k.tag + ":epoch") }

// Recovering is the lock of a running recovery.
func (k Keys) Recovering() Key { return Key(k.tag + ":recovering") }

// Seq is the catalog sequence counter.
func (k Keys) Seq() Key { return Key(k.tag + ":seq") }

// Log is the commit-log stream, entry ids <seq>-<i>.
func (k Keys) Log() Key { return Key(k.tag + ":log") }

// Heads maps a version chain to its head version.
func (k Keys) Heads() Key { return Key(k.tag + ":heads") }

// Versions maps version -> record of one version chain.
func (k Keys) Versions(chain string) Key { return Key(k.tag + ":v:" + chain) }

// Index is the sorted set of one chain's recorded versions.
func (k Keys) Index(chain string) Key { return Key(k.tag + ":z:" + chain) }

// Txn holds a transaction's record bytes and epoch until it settles.
func (k Keys) Txn(id string) Key { return Key(k.tag + ":txn:" + id) }

// Obj maps an object id to its row (namespaces and tables).
func (k Keys) Obj() Key { return Key(k.tag + ":obj") }

// Loc maps a table id to its location.
func (k Keys) Loc() Key { return Key(k.tag + ":loc") }

// ByLoc maps a table location to its id.
func (k Keys) ByLoc() Key { return Key(k.tag + ":byloc") }

// Locs is the sorted set (every score 0, so in byte order) of the table
// directories the catalog reserves: every live table's location and every
// location a drop keeps (for undrop) or is still deleting. A new location
// may neither equal, contain nor lie inside any of them (claim.lua's
// "disjoint" guard), compared by path segment.
func (k Keys) Locs() Key { return Key(k.tag + ":locs") }

// Kids is the set of the children of the object id parent.
func (k Keys) Kids(parent string) Key { return Key(k.tag + ":kids:" + parent) }

// KidsPattern matches every Kids key (SCAN).
func (k Keys) KidsPattern() string { return k.tag + ":kids:*" }

// PCols maps a partitioned table to its partition columns.
func (k Keys) PCols() Key { return Key(k.tag + ":pcols") }

// Root records the catalog root this catalog is bound to.
func (k Keys) Root() Key { return Key(k.tag + ":root") }

// Revoked maps a principal to when its sessions were last revoked (unix
// milliseconds).
func (k Keys) Revoked() Key { return Key(k.tag + ":revoked") }

// EndedSession is present while the session id (a session token's
// nonce) is ended by a logout; it expires with the session.
func (k Keys) EndedSession(id string) Key { return Key(k.tag + ":ended:" + id) }

// Lease is the materializer's lease.
func (k Keys) Lease() Key { return Key(k.tag + ":mlease") }

// MaintainLease is the maintainer's lease: one process at a time follows
// Lance's cleanup and applies retention (namespace's maintainer).
func (k Keys) MaintainLease() Key { return Key(k.tag + ":maintlease") }

// Purging marks the drops whose purge (admin gc) has begun: field drop
// id, value when it began. An undrop of a drop marked so is refused.
func (k Keys) Purging() Key { return Key(k.tag + ":purging") }

// Cleanup is the lock of one cleanup of the table at loc.
func (k Keys) Cleanup(loc string) Key { return Key(k.tag + ":cleanup:" + loc) }

// Durable is how far the commit log is durable in __manifest segments.
func (k Keys) Durable() Key { return Key(k.tag + ":mdurable") }

// Flush is a sorted set whose one member's score is the highest catalog
// sequence some process waits to see in __manifest (raised only, ZADD
// GT): the materializer does not let a backlog up to it linger.
func (k Keys) Flush() Key { return Key(k.tag + ":mflush") }

// Idempotency is the record of one idempotency key (package idempotency),
// by the hash of its principal and key.
func (k Keys) Idempotency(hash string) Key { return Key(k.tag + ":idem:" + hash) }

// Fence is the key a commit point writes before it waits for a replica
// (redisclaim's replicas): its value is a counter of no meaning.
func (k Keys) Fence() Key { return Key(k.tag + ":fence") }

// CompactionJobs maps a table's location to its compaction job in
// progress (JSON; namespace's compaction jobs).
func (k Keys) CompactionJobs() Key { return Key(k.tag + ":compaction") }

// CompactionSettled maps a table's location to its main head when its
// last compaction job ended.
func (k Keys) CompactionSettled() Key { return Key(k.tag + ":compaction:settled") }

// Intents maps an intent's id to the intent (JSON; namespace's events of
// changes committed in storage): a change about to be made, whose event
// the feed must get exactly when the change is made.
func (k Keys) Intents() Key { return Key(k.tag + ":intents") }
