package redisstate

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/commitlog"
)

// Catalog is one catalog's state in Redis: its keys and a typed call per
// script (claim.go, versions.go, objects.go, sessions.go), sent through
// one pipeliner. Make one with New; Close
// stops its pipeliner.
type Catalog struct {
	Keys
	rdb    redis.UniversalClient
	maxLen int64 // the commit log's approximate MAXLEN
	// replicas, when set (ConfirmOn), confirm the session writes.
	replicas *Replicas

	mu     sync.Mutex
	pipe   *pipeliner // started by the first call
	closed bool
}

// New returns catalog's state on rdb; the scripts that append to the
// commit log trim it to about logMaxLen entries (commitlog.MaxLen when
// 0). catalog must be a valid catalog name (redisclaim.ValidateCatalog).
func New(rdb redis.UniversalClient, catalog string, logMaxLen int64) *Catalog {
	if logMaxLen <= 0 {
		logMaxLen = commitlog.MaxLen
	}
	return &Catalog{Keys: KeysOf(catalog), rdb: rdb, maxLen: logMaxLen}
}

// Close stops the pipeliner; a call after it runs alone, unpipelined
// (a shutdown may still flush a last change).
func (c *Catalog) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pipe != nil && !c.closed {
		c.pipe.close()
	}
	c.closed = true
}

func (c *Catalog) pipeliner() *pipeliner {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	if c.pipe == nil {
		c.pipe = newPipeliner(c.rdb)
	}
	return c.pipe
}

// run runs s through the pipeliner and returns its reply as an array.
func (c *Catalog) run(ctx context.Context, s *redis.Script, keys []string, args ...any) (raw, error) {
	var v any
	var err error
	if p := c.pipeliner(); p != nil {
		v, err = p.run(ctx, s, keys, args...)
	} else {
		v, err = s.Run(ctx, c.rdb, keys, args...).Result()
	}
	if err != nil {
		return nil, err
	}
	if a, ok := v.([]any); ok {
		return a, nil
	}
	return raw{v}, nil
}

// runBool runs a script that replies 1 or 0.
func (c *Catalog) runBool(ctx context.Context, s *redis.Script, keys []string, args ...any) (bool, error) {
	r, err := c.run(ctx, s, keys, args...)
	if err != nil {
		return false, err
	}
	return r.str(0) == "1", nil
}

// Status is the first element of a script's reply (the scripts that
// answer only yes or no reply a bool instead).
type Status string

// The statuses, each named in the header of the scripts that reply it.
const (
	OK Status = "OK"
	// NoEpoch: Redis holds no epoch for the catalog: it lost its state (a
	// restart without persistence, a FLUSHALL, a failover to an empty
	// replica). The script wrote nothing; recover, then call again.
	NoEpoch     Status = "NOEPOCH"
	NoHead      Status = "NOHEAD"
	Conflict    Status = "CONFLICT"
	Gap         Status = "GAP"
	Dup         Status = "DUP"
	GuardFailed Status = "GUARD"
	Busy        Status = "BUSY"
	Lost        Status = "LOST"
	Staged      Status = "STAGED"
	NoLock      Status = "NOLOCK"
	Done        Status = "DONE"
	Taken       Status = "TAKEN"
)

// UnexpectedReply is the error of a reply no status of its script
// explains.
func UnexpectedReply(script string, r any) error {
	return fmt.Errorf("redisstate: %s replied %v", script, r)
}

// raw is a script's array reply, decoded by its typed call alone.
type raw []any

func (r raw) str(i int) string {
	if i >= len(r) {
		return ""
	}
	switch v := r[i].(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	}
	return ""
}

func (r raw) status() Status { return Status(r.str(0)) }

func (r raw) uint(i int) uint64 {
	n, _ := strconv.ParseUint(r.str(i), 10, 64)
	return n
}

// index reads a script's 1-based index as 0-based.
func (r raw) index(i int) int {
	n, err := strconv.Atoi(r.str(i))
	if err != nil || n < 1 {
		return 0
	}
	return n - 1
}

// MaxVersion is the largest version a script handles: Lua numbers are
// doubles, so versions above it are refused.
const MaxVersion = 1<<53 - 1

// Record is a version's record, the value of its field in Keys.Versions:
// staged while claimed, final once the final manifest exists, deleted (a
// tombstone) once forgotten.
type Record struct {
	St  string `json:"st"` // "staged", "final" or "deleted"
	SP  string `json:"sp"` // staging path claimed ("" when found in storage)
	FP  string `json:"fp"` // final path
	Sz  string `json:"sz"`
	Et  string `json:"et"`
	Tx  string `json:"tx"`
	Ts  string `json:"ts"` // claim time, µs
	Seq string `json:"seq"`
}

// ParseRecord decodes a record as the scripts store it.
func ParseRecord(s string) (Record, error) {
	var r Record
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return r, fmt.Errorf("redisstate: corrupt version record %q: %w", s, err)
	}
	return r, nil
}

// Staged is a claim whose final manifest may not exist yet.
func (r Record) Staged() bool { return r.St == "staged" }

// Deleted is a tombstone: the version's record was deleted
// (DeleteVersions); its manifest may still be in storage.
func (r Record) Deleted() bool { return r.St == "deleted" }

// Size is the final manifest's size in bytes.
func (r Record) Size() int64 {
	n, _ := strconv.ParseInt(r.Sz, 10, 64)
	return n
}

func records(r raw, from int) ([]Record, error) {
	var out []Record
	for i := from; i < len(r); i++ {
		rec, err := ParseRecord(r.str(i))
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}
