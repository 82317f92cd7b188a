package redisstate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/redislock"
)

// The catalog's plain commands: the reads of its state that need no
// script, and the few writes that are safe alone (doc.go lists them),
// each named for what it means. None recovers a lost state by itself:
// a read that must tell "absent" from "Redis lost the catalog's state"
// replies NoEpoch (IndexField, Reservations), and its caller goes through
// redisclaim's WithEpoch.

// Missing is IndexField's status of a field the object index does not
// hold while Redis holds the catalog's epoch: no such object.
const Missing Status = "MISSING"

// HasEpoch reports whether Redis holds the catalog's epoch (its state).
func (c *Catalog) HasEpoch(ctx context.Context) (bool, error) {
	n, err := c.rdb.Exists(ctx, string(c.Epoch())).Result()
	return n == 1, err
}

// CurrentEpoch is the catalog's epoch ("" when Redis holds none).
func (c *Catalog) CurrentEpoch(ctx context.Context) (string, error) {
	return c.get(ctx, c.Epoch())
}

// LockRecovery takes the recovery lock for token for ttl unless another
// holds it (SET NX); it reports whether token holds it now.
func (c *Catalog) LockRecovery(ctx context.Context, token string, ttl time.Duration) (bool, error) {
	return c.rdb.SetNX(ctx, string(c.Recovering()), token, ttl).Result()
}

// UnlockRecovery releases the recovery lock if token still holds it
// (internal/redislock); it reports whether it did.
func (c *Catalog) UnlockRecovery(ctx context.Context, token string) (bool, error) {
	return redislock.Release(ctx, c.rdb, string(c.Recovering()), token)
}

// RenewRecovery extends the recovery lock to ttl if token still holds it
// (internal/redislock); it reports whether it did.
func (c *Catalog) RenewRecovery(ctx context.Context, token string, ttl time.Duration) (bool, error) {
	return redislock.Renew(ctx, c.rdb, string(c.Recovering()), token, ttl)
}

// ReleaseLeaseOf releases a lease taken with TakeLeaseOf (the
// materializer's, a cleanup's) if token still holds it; it reports
// whether it did.
func (c *Catalog) ReleaseLeaseOf(ctx context.Context, key Key, token string) (bool, error) {
	return redislock.Release(ctx, c.rdb, string(key), token)
}

// LeaseHolder is the token of the materializer lease's holder ("" when
// none holds it).
func (c *Catalog) LeaseHolder(ctx context.Context) (string, error) {
	return c.get(ctx, c.Lease())
}

// HeadChains lists every chain Redis holds a head for.
func (c *Catalog) HeadChains(ctx context.Context) ([]string, error) {
	chains, err := c.rdb.HKeys(ctx, string(c.Heads())).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return chains, err
}

// AllHeads maps every chain Redis holds a head for to its head (a field
// that is not a version, which flightns never writes, is passed over).
func (c *Catalog) AllHeads(ctx context.Context) (map[string]uint64, error) {
	all, err := c.rdb.HGetAll(ctx, string(c.Heads())).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make(map[string]uint64, len(all))
	for chain, h := range all {
		v, err := strconv.ParseUint(h, 10, 64)
		if err != nil {
			continue // not a head flightns wrote
		}
		out[chain] = v
	}
	return out, nil
}

// TxnRecord is the commit record a transaction's hash (Keys.Txn) holds;
// ok is false when Redis holds no hash for it (settled, or lost).
func (c *Catalog) TxnRecord(ctx context.Context, id string) (rec []byte, ok bool, err error) {
	rec, err = c.rdb.HGet(ctx, string(c.Txn(id)), "record").Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	return rec, err == nil, err
}

// HasTxn reports whether Redis holds transaction id's hash.
func (c *Catalog) HasTxn(ctx context.Context, id string) (bool, error) {
	n, err := c.rdb.Exists(ctx, string(c.Txn(id))).Result()
	return n == 1, err
}

// DeleteTxn deletes a settled transaction's hash: only once every member
// is final and the record deleted from storage (doc.go).
func (c *Catalog) DeleteTxn(ctx context.Context, id string) error {
	return c.rdb.Del(ctx, string(c.Txn(id))).Err()
}

// IndexField reads one field of a hash of the object index: OK with its
// value; Missing when Redis holds the catalog's epoch but not the field
// (no such object); NoEpoch when Redis lost the catalog's state.
func (c *Catalog) IndexField(ctx context.Context, key Key, field string) (string, Status, error) {
	v, err := c.rdb.HGet(ctx, string(key), field).Result()
	if err == nil {
		return v, OK, nil
	}
	if !errors.Is(err, redis.Nil) {
		return "", "", err
	}
	ok, err := c.HasEpoch(ctx)
	switch {
	case err != nil:
		return "", "", err
	case !ok:
		return "", NoEpoch, nil
	}
	return "", Missing, nil
}

// Children reads the children of the object id parent from the object
// index, sorted by id: each child's type, and its location when it is a
// table ("" for either when the child was removed meanwhile).
func (c *Catalog) Children(ctx context.Context, parent string) ([]Indexed, error) {
	kids, err := c.rdb.SMembers(ctx, string(c.Kids(parent))).Result()
	if err != nil {
		return nil, err
	}
	slices.Sort(kids)
	pipe := c.rdb.Pipeline()
	types := make([]*redis.StringCmd, len(kids))
	locs := make([]*redis.StringCmd, len(kids))
	for i, kid := range kids {
		types[i] = pipe.HGet(ctx, string(c.Obj()), kid)
		locs[i] = pipe.HGet(ctx, string(c.Loc()), kid)
	}
	if len(kids) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
	}
	out := make([]Indexed, len(kids))
	for i, kid := range kids {
		out[i] = Indexed{ID: kid, Parent: parent, Type: types[i].Val(), Location: locs[i].Val()}
	}
	return out, nil
}

// IndexedObjects lists every object of the object index (none when Redis
// lost the catalog's state), sorted by id; Parent is not read.
func (c *Catalog) IndexedObjects(ctx context.Context) ([]Indexed, error) {
	types, err := c.rdb.HGetAll(ctx, string(c.Obj())).Result()
	if err != nil {
		return nil, err
	}
	locs, err := c.rdb.HGetAll(ctx, string(c.Loc())).Result()
	if err != nil {
		return nil, err
	}
	out := make([]Indexed, 0, len(types))
	for id, typ := range types {
		out = append(out, Indexed{ID: id, Type: typ, Location: locs[id]})
	}
	slices.SortFunc(out, func(a, b Indexed) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Hash reads every field of hash key (none when it does not exist).
func (c *Catalog) Hash(ctx context.Context, key Key) (map[string]string, error) {
	return c.rdb.HGetAll(ctx, string(key)).Result()
}

// KidsKeys lists every children set of the object index (Keys.Kids), on
// every master of a cluster.
func (c *Catalog) KidsKeys(ctx context.Context) ([]Key, error) {
	var mu sync.Mutex
	var out []Key
	scan := func(ctx context.Context, r redis.Cmdable) error {
		it := r.Scan(ctx, 0, c.KidsPattern(), 1000).Iterator()
		for it.Next(ctx) {
			mu.Lock()
			out = append(out, Key(it.Val()))
			mu.Unlock()
		}
		return it.Err()
	}
	var err error
	if cl, ok := c.rdb.(*redis.ClusterClient); ok {
		err = cl.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return scan(ctx, m) })
	} else {
		err = scan(ctx, c.rdb)
	}
	return out, err
}

// PartitionColumnType is the type partition column col of __manifest is
// reserved with (Keys.PCols); ok is false when it is not.
func (c *Catalog) PartitionColumnType(ctx context.Context, col string) (typ string, ok bool, err error) {
	typ, err = c.rdb.HGet(ctx, string(c.PCols()), col).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	return typ, err == nil, err
}

// LocationsReserved reports whether the catalog's table directories are
// reserved in Keys.Locs (ReserveLocations ran, or the state was made
// since reservations exist).
func (c *Catalog) LocationsReserved(ctx context.Context) (bool, error) {
	n, err := c.rdb.Exists(ctx, string(c.Locs())).Result()
	return n == 1, err
}

// Reservations is what the catalog's reservations hold about a location
// (Keys.Locs, Keys.ByLoc).
type Reservations struct {
	Live     bool     // a live table has the location
	Reserved bool     // the location is reserved itself
	Above    bool     // a reserved directory holds the location
	Below    []string // the reserved directories inside the location
}

// ReservationsAround reads Reservations for loc in one MULTI with the
// epoch that vouches for them: OK, or NoEpoch when Redis lost the
// catalog's state (the reply then says nothing).
func (c *Catalog) ReservationsAround(ctx context.Context, loc string) (Reservations, Status, error) {
	var a Reservations
	var ancestors []string
	for i := range len(loc) {
		if loc[i] == '/' {
			ancestors = append(ancestors, loc[:i])
		}
	}
	var epoch *redis.IntCmd
	var live *redis.BoolCmd
	scores := make([]*redis.FloatCmd, len(ancestors)+1) // the ancestors', then loc's own
	var below *redis.StringSliceCmd
	_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		epoch = p.Exists(ctx, string(c.Epoch()))
		live = p.HExists(ctx, string(c.ByLoc()), loc)
		for i, d := range append(ancestors, loc) {
			scores[i] = p.ZScore(ctx, string(c.Locs()), d)
		}
		below = p.ZRangeByLex(ctx, string(c.Locs()), &redis.ZRangeBy{Min: "[" + loc + "/", Max: "(" + loc + "0"})
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return a, "", err
	}
	if epoch.Val() == 0 {
		return a, NoEpoch, nil
	}
	a.Live, a.Below = live.Val(), below.Val()
	for i, sc := range scores {
		switch {
		case sc.Err() == nil && i < len(ancestors):
			a.Above = true
		case sc.Err() == nil:
			a.Reserved = true
		case !errors.Is(sc.Err(), redis.Nil):
			return a, "", sc.Err()
		}
	}
	return a, OK, nil
}

// RootBinding is the record of the catalog root the catalog is bound to
// (Keys.Root); ok is false when it is bound to none.
func (c *Catalog) RootBinding(ctx context.Context) (rec []byte, ok bool, err error) {
	rec, err = c.rdb.Get(ctx, string(c.Root())).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	return rec, err == nil, err
}

// Held reports whether lease key (TakeLeaseOf) is held now.
func (c *Catalog) Held(ctx context.Context, key Key) (bool, error) {
	n, err := c.rdb.Exists(ctx, string(key)).Result()
	return n > 0, err
}

// MarkPurging marks drop dropID's purge as begun (Keys.Purging), at at.
func (c *Catalog) MarkPurging(ctx context.Context, dropID, at string) error {
	return c.rdb.HSet(ctx, string(c.Purging()), dropID, at).Err()
}

// UnmarkPurging removes the mark of drop dropID's purge, once it ended.
func (c *Catalog) UnmarkPurging(ctx context.Context, dropID string) error {
	return c.rdb.HDel(ctx, string(c.Purging()), dropID).Err()
}

// BindRoot records rec as the catalog's root unless one is recorded
// (SET NX: written once, never changed); it reports whether rec was.
func (c *Catalog) BindRoot(ctx context.Context, rec []byte) (bool, error) {
	return c.rdb.SetNX(ctx, string(c.Root()), rec, 0).Result()
}

// DurableSeq is how far the commit log is durable in __manifest segments
// (Keys.Durable; 0 before the first).
func (c *Catalog) DurableSeq(ctx context.Context) (uint64, error) {
	v, err := c.rdb.Get(ctx, string(c.Durable())).Uint64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return v, err
}

// PublishDurable sets the durable sequence: by the materializer's lease
// holder alone, in order, or by a storage repair while no one holds it
// (doc.go).
func (c *Catalog) PublishDurable(ctx context.Context, seq uint64) error {
	return c.rdb.Set(ctx, string(c.Durable()), seq, 0).Err()
}

// flushMember is the one member of the Flush sorted set.
const flushMember = "seq"

// RequestFlush asks the materializer not to let the log up to seq
// linger (Keys.Flush, raised only).
func (c *Catalog) RequestFlush(ctx context.Context, seq uint64) error {
	return c.rdb.ZAddGT(ctx, string(c.Flush()), redis.Z{Score: float64(seq), Member: flushMember}).Err()
}

// FlushRequested is the highest sequence a RequestFlush asked for (0:
// none).
func (c *Catalog) FlushRequested(ctx context.Context) (uint64, error) {
	score, err := c.rdb.ZScore(ctx, string(c.Flush()), flushMember).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return 0, nil
	case err != nil:
		return 0, err
	case score < 1:
		return 0, nil
	}
	return uint64(score), nil
}

// LogMessage is one entry of the commit log as Redis holds it: its id
// (<seq>-<i>) and its field/value pairs.
type LogMessage struct {
	ID     string
	Values map[string]any
}

// Seq is the catalog sequence of the entry's id.
func (m LogMessage) Seq() (uint64, error) {
	seq, _, _ := strings.Cut(m.ID, "-")
	return strconv.ParseUint(seq, 10, 64)
}

func logMessages(msgs []redis.XMessage) []LogMessage {
	if len(msgs) == 0 {
		return nil
	}
	out := make([]LogMessage, len(msgs))
	for i, m := range msgs {
		out[i] = LogMessage{ID: m.ID, Values: m.Values}
	}
	return out
}

// afterSeq is the stream id of the last entry any sequence up to seq
// may have.
func afterSeq(seq uint64) string { return fmt.Sprintf("%d-%d", seq, uint64(math.MaxUint64)) }

// ReadLog reads up to count entries of the commit log past every entry
// of sequence after, waiting up to block for one when there is none.
func (c *Catalog) ReadLog(ctx context.Context, after uint64, count int, block time.Duration) ([]LogMessage, error) {
	res, err := c.rdb.XRead(ctx, &redis.XReadArgs{
		Streams: []string{string(c.Log()), afterSeq(after)},
		Count:   int64(count),
		Block:   block,
	}).Result()
	if errors.Is(err, redis.Nil) || (err == nil && len(res) == 0) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return logMessages(res[0].Messages), nil
}

// LogRange reads up to count entries of the commit log from start to end
// (stream ids, XRANGE's bounds: "(" excludes, "-" and "+" are the ends).
func (c *Catalog) LogRange(ctx context.Context, start, end string, count int) ([]LogMessage, error) {
	msgs, err := c.rdb.XRangeN(ctx, string(c.Log()), start, end, int64(count)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return logMessages(msgs), err
}

// ConfirmedLogRange is LogRange of the entries past every entry of
// sequence after, up to the id end, followed by r's fence and WAIT on
// one connection: once it returns them, a replica has them as they were
// read. sent is false when no replica is needed (nothing was read).
func (c *Catalog) ConfirmedLogRange(ctx context.Context, r *Replicas, after uint64, end string, count int) (msgs []LogMessage, sent bool, err error) {
	var again *redis.XMessageSliceCmd
	sent, err = r.ConfirmWith(ctx, func(p redis.Pipeliner) error {
		again = p.XRangeN(ctx, string(c.Log()), "("+afterSeq(after), end, int64(count))
		return nil
	})
	if err != nil || !sent {
		return nil, sent, err
	}
	return logMessages(again.Val()), true, nil
}

// LastLogSeq is the sequence of the commit log's newest entry (0 when
// the log holds none).
func (c *Catalog) LastLogSeq(ctx context.Context) (uint64, error) {
	msgs, err := c.rdb.XRevRangeN(ctx, string(c.Log()), "+", "-", 1).Result()
	if err != nil || len(msgs) == 0 {
		return 0, err
	}
	return LogMessage{ID: msgs[0].ID}.Seq()
}

// FirstLogSeqFrom is the sequence of the commit log's oldest entry of
// sequence from or later (0 when it holds none).
func (c *Catalog) FirstLogSeqFrom(ctx context.Context, from uint64) (uint64, error) {
	msgs, err := c.LogRange(ctx, strconv.FormatUint(from, 10)+"-0", "+", 1)
	if err != nil || len(msgs) == 0 {
		return 0, err
	}
	seq, _ := msgs[0].Seq()
	return seq, nil
}

// get reads a string key ("" when absent).
func (c *Catalog) get(ctx context.Context, key Key) (string, error) {
	v, err := c.rdb.Get(ctx, string(key)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return v, err
}

// ForgetSettled forgets the settled compaction versions of the tables at
// locs (Keys.CompactionSettled), tables that are gone.
func (c *Catalog) ForgetSettled(ctx context.Context, locs []string) error {
	if len(locs) == 0 {
		return nil
	}
	return c.sessionWrite(ctx, func(p redis.Pipeliner) { p.HDel(ctx, string(c.CompactionSettled()), locs...) })
}

// VersionRef names a version of a chain.
type VersionRef struct {
	Table   string
	Version uint64
}

// Records reads the current records of versions in one round trip (a
// read: the materializer asks how an unproven claim it read in the log
// ended). An element is nil where Redis holds no record.
func (c *Catalog) Records(ctx context.Context, refs []VersionRef) ([]*Record, error) {
	cmds := make([]*redis.StringCmd, len(refs))
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range refs {
			cmds[i] = p.HGet(ctx, string(c.Versions(r.Table)), strconv.FormatUint(r.Version, 10))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([]*Record, len(refs))
	for i, cmd := range cmds {
		raw, err := cmd.Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, err
		}
		rec, err := ParseRecord(raw)
		if err != nil {
			return nil, err
		}
		out[i] = &rec
	}
	return out, nil
}
