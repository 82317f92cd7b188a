package redisstate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/commitlog"
)

// ClaimTable is one table's part of a claim.
type ClaimTable struct {
	Table          string
	Version        uint64
	Staging, Final string
	Size           int64
	ETag           string
	// Unproven claims before the staging object was seen, with Size the
	// writer's word (Record.Unproven).
	Unproven bool
}

// Guard is a check on state kept by a layer above (the namespace
// service's object index), made by claim.lua before it writes anything.
// Make one with GuardEq, GuardAbsent, GuardEmpty, GuardCard or
// GuardDisjoint.
type Guard struct {
	Op           string
	Key          Key
	Field, Value string
}

// GuardEq holds when hash key's field equals value.
func GuardEq(key Key, field, value string) Guard { return Guard{"eq", key, field, value} }

// GuardAbsent holds when hash key has no field.
func GuardAbsent(key Key, field string) Guard { return Guard{Op: "absent", Key: key, Field: field} }

// GuardEmpty holds when set key is empty.
func GuardEmpty(key Key) Guard { return Guard{Op: "empty", Key: key} }

// GuardCard holds when set key has n members.
func GuardCard(key Key, n int) Guard { return Guard{Op: "card", Key: key, Value: strconv.Itoa(n)} }

// GuardDisjoint holds when no member of sorted set key (directories, as
// Keys.Locs holds them) equals loc, contains it or lies inside it,
// compared by '/'-separated segment (t1 and t10 are apart); a member
// equal to except (a location the change itself holds, "" for none) is
// passed over.
func GuardDisjoint(key Key, loc, except string) Guard {
	return Guard{Op: "disjoint", Key: key, Field: loc, Value: except}
}

// HeadIs holds when chain's head (Keys.Heads) is version v.
func (k Keys) HeadIs(chain string, v uint64) Guard {
	return GuardEq(k.Heads(), chain, strconv.FormatUint(v, 10))
}

var guardOps = map[string]bool{"eq": true, "absent": true, "empty": true, "card": true, "disjoint": true}

// Write is a change to state kept by a layer above, made by claim.lua once
// every check passed. Make one with HSet, HDel, SAdd, SRem, ZAdd or ZRem.
type Write struct {
	Op           string
	Key          Key
	Field, Value string
}

// HSet sets hash key's field to value.
func HSet(key Key, field, value string) Write { return Write{"hset", key, field, value} }

// HDel deletes hash key's field.
func HDel(key Key, field string) Write { return Write{Op: "hdel", Key: key, Field: field} }

// SAdd adds member to set key.
func SAdd(key Key, member string) Write { return Write{Op: "sadd", Key: key, Value: member} }

// SRem removes member from set key.
func SRem(key Key, member string) Write { return Write{Op: "srem", Key: key, Value: member} }

// ZAdd adds member to sorted set key with score 0 (members then sort by
// their bytes).
func ZAdd(key Key, member string) Write { return Write{Op: "zadd", Key: key, Value: member} }

// ZRem removes member from sorted set key.
func ZRem(key Key, member string) Write { return Write{Op: "zrem", Key: key, Value: member} }

var writeOps = map[string]bool{"hset": true, "hdel": true, "sadd": true, "srem": true, "zadd": true, "zrem": true}

// Deletion forgets the records of a table's versions in ranges, as part
// of a claim.
type Deletion struct {
	Table  string
	Ranges []commitlog.Range
}

// LogEntry is a commit-log entry of a layer above: field/value pairs, the
// kind (commitlog.KindField) first.
type LogEntry []string

// ClaimArgs are claim.lua's arguments: the tables whose next versions are
// claimed (none for a claim of extras alone), and what a layer above
// commits with them.
type ClaimArgs struct {
	TxnID     string // "" for a single-table claim
	TxnRecord []byte // the transaction's commit record ("" without one)
	Now       int64  // commit time, µs since the epoch
	// Principal is who makes the claim ("" for no one named), kept on
	// its version entries of the commit log (field p), for the change
	// feed.
	Principal string
	Tables    []ClaimTable
	Guards    []Guard
	Writes    []Write
	Deletions []Deletion
	Log       []LogEntry
}

// ClaimReply is claim.lua's reply.
type ClaimReply struct {
	Status  Status   // OK, DUP, NOHEAD, CONFLICT, GAP, PENDING, GUARD or NOEPOCH
	Member  int      // NOHEAD, CONFLICT, GAP, PENDING: the index in Tables of the table concerned
	Head    uint64   // CONFLICT, GAP, PENDING: that table's head
	TakenBy string   // CONFLICT: the staging path of the live claim holding the version, if any
	Guard   int      // GUARD: the index in Guards of the guard that does not hold
	Epoch   string   // OK, DUP: the epoch the claim stands in
	Seq     uint64   // OK: the claim's catalog sequence
	Deleted []int    // OK: how many versions each Deletion forgot
	Records []Record // DUP: each table's record, already claimed with these staging paths
}

// Claim runs claim.lua: every table's next version is claimed, and the
// extras applied, all or none.
func (c *Catalog) Claim(ctx context.Context, a ClaimArgs) (ClaimReply, error) {
	keys, args, err := c.claimCall(a)
	if err != nil {
		return ClaimReply{}, err
	}
	r, err := c.run(ctx, claimS, keys, args...)
	if err != nil {
		return ClaimReply{}, err
	}
	return claimReply(r, a)
}

// QueueClaim queues claim.lua on p, a pipeline the caller sends (on one
// connection: see redisclaim's replicas, which follows it with a WAIT);
// reply reads its answer once p was sent. The script goes by its body
// (EVAL), since a primary that has just taken over may not know its SHA.
func (c *Catalog) QueueClaim(ctx context.Context, p redis.Pipeliner, a ClaimArgs) (reply func() (ClaimReply, error), err error) {
	keys, args, err := c.claimCall(a)
	if err != nil {
		return nil, err
	}
	cmd := claimS.Eval(ctx, p, names(keys), args...)
	return func() (ClaimReply, error) {
		v, err := cmd.Result()
		if err != nil {
			return ClaimReply{}, err
		}
		r, ok := v.([]any)
		if !ok {
			return ClaimReply{}, UnexpectedReply("claim.lua", raw{v})
		}
		return claimReply(r, a)
	}, nil
}

// ConfirmedClaim runs claim.lua followed by r's fence and WAIT on one
// connection (QueueClaim), so that its reply, whatever it is, rests on
// writes a replica has; reply reads it once sent. sent is false when no
// replica is needed (the claim did not run).
func (c *Catalog) ConfirmedClaim(ctx context.Context, r *Replicas, a ClaimArgs) (reply func() (ClaimReply, error), sent bool, err error) {
	sent, err = r.ConfirmWith(ctx, func(p redis.Pipeliner) (err error) {
		reply, err = c.QueueClaim(ctx, p, a)
		return err
	})
	return reply, sent, err
}

// claimCall is claim.lua's keys and arguments for a.
func (c *Catalog) claimCall(a ClaimArgs) (keys []Key, args []any, err error) {
	keys = []Key{c.Epoch(), c.Heads(), c.Seq(), c.Log(), c.Txn(a.TxnID)}
	args = []any{a.TxnID, strconv.FormatInt(a.Now, 10), len(a.Tables), string(a.TxnRecord), c.maxLen, a.Principal}
	for _, t := range a.Tables {
		keys = append(keys, c.Versions(t.Table), c.Index(t.Table))
		args = append(args, t.Table, strconv.FormatUint(t.Version, 10), t.Staging, t.Final, strconv.FormatInt(t.Size, 10), t.ETag, flag(t.Unproven))
	}
	return c.appendExtras(keys, args, a)
}

// claimReply reads claim.lua's answer r to a.
func claimReply(r raw, a ClaimArgs) (ClaimReply, error) {
	var err error
	out := ClaimReply{Status: r.status()}
	switch out.Status {
	case NoHead:
		out.Member = r.index(1)
	case Gap, Conflict, Pending:
		out.Member, out.Head, out.TakenBy = r.index(1), r.uint(2), r.str(3)
	case GuardFailed:
		out.Guard = r.index(1)
	case Dup:
		out.Epoch = r.str(1)
		if out.Records, err = records(r, 2); err != nil {
			return ClaimReply{}, err
		}
		if len(out.Records) != len(a.Tables) {
			return ClaimReply{}, UnexpectedReply("claim.lua", r)
		}
	case OK:
		out.Epoch, out.Seq = r.str(1), r.uint(2)
		for i := 3; i < len(r); i++ {
			n, _ := strconv.Atoi(r.str(i))
			out.Deleted = append(out.Deleted, n)
		}
	case NoEpoch:
	default:
		return ClaimReply{}, UnexpectedReply("claim.lua", r)
	}
	return out, nil
}

// appendExtras appends a claim's guards, writes, deletions and log
// entries to its keys and arguments, each key once (claim.lua's header).
func (c *Catalog) appendExtras(keys []Key, args []any, a ClaimArgs) ([]Key, []any, error) {
	keyIdx := map[Key]int{}
	key := func(k Key) (int, error) {
		if !strings.HasPrefix(string(k), c.Tag()+":") {
			return 0, fmt.Errorf("redisstate: key %q is not a key of catalog %s", k, c.Tag())
		}
		if i, ok := keyIdx[k]; ok {
			return i, nil
		}
		keys = append(keys, k)
		keyIdx[k] = len(keys)
		return len(keys), nil
	}
	args = append(args, len(a.Guards))
	for _, g := range a.Guards {
		if !guardOps[g.Op] {
			return nil, nil, fmt.Errorf("redisstate: unknown guard %q", g.Op)
		}
		i, err := key(g.Key)
		if err != nil {
			return nil, nil, err
		}
		args = append(args, i, g.Field, g.Op, g.Value)
	}
	args = append(args, len(a.Writes))
	for _, w := range a.Writes {
		if !writeOps[w.Op] {
			return nil, nil, fmt.Errorf("redisstate: unknown write %q", w.Op)
		}
		i, err := key(w.Key)
		if err != nil {
			return nil, nil, err
		}
		args = append(args, w.Op, i, w.Field, w.Value)
	}
	args = append(args, len(a.Deletions))
	for _, d := range a.Deletions {
		vi, _ := key(c.Versions(d.Table))
		zi, _ := key(c.Index(d.Table))
		args = append(args, vi, zi, commitlog.EncodeRanges(d.Ranges))
	}
	args = append(args, len(a.Log))
	for _, e := range a.Log {
		if len(e)%2 != 0 || len(e) == 0 {
			return nil, nil, errors.New("redisstate: a log entry is field/value pairs")
		}
		args = append(args, len(e)/2)
		for _, f := range e {
			args = append(args, f)
		}
	}
	return keys, args, nil
}
