package redisstate

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/commitlog"
)

// Client is a go-redis UniversalClient (github.com/redis/go-redis/v9): a
// standalone, Sentinel or Cluster client. It is the one name of go-redis
// the packages above use (their Configs take one): only the
// internal/redis* packages import go-redis (.golangci.yml's depguard).
type Client = redis.UniversalClient

// Catalog is one catalog's state in Redis: its keys and a typed call per
// script (claim.go, versions.go, objects.go, sessions.go), sent through
// one pipeliner. Make one with New; Close
// stops its pipeliner.
type Catalog struct {
	Keys
	rdb    Client
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
func New(rdb Client, catalog string, logMaxLen int64) *Catalog {
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
func (c *Catalog) run(ctx context.Context, s *redis.Script, keys []Key, args ...any) (raw, error) {
	var v any
	var err error
	if p := c.pipeliner(); p != nil {
		v, err = p.run(ctx, s, names(keys), args...)
	} else {
		v, err = s.Run(ctx, c.rdb, names(keys), args...).Result()
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
func (c *Catalog) runBool(ctx context.Context, s *redis.Script, keys []Key, args ...any) (bool, error) {
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
	// Pending: a claim's version would sit on an unproven claim still
	// staged (claim.lua): that one is finished or taken back first.
	Pending Status = "PENDING"
	// Final and Gone answer Retract's mark: the version is final (it
	// committed), or no record holds the claim any more.
	Final Status = "FINAL"
	Gone  Status = "GONE"
	// Proven answers Retract's mark of a claim that is not unproven.
	Proven Status = "PROVEN"
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

// RecordState is where a version's record stands.
type RecordState string

// The states of a record, as the scripts store them.
const (
	// StateStaged is a claim whose final manifest may not exist yet.
	StateStaged RecordState = "staged"
	// StateFinal is a version whose final manifest exists.
	StateFinal RecordState = "final"
	// StateDeleted is a tombstone: the version's record was deleted
	// (DeleteVersions); its manifest may still be in storage.
	StateDeleted RecordState = "deleted"
	// StateRetracted is the tombstone of an unproven claim taken back
	// (retract.lua): no version was ever there, and a claim of the
	// version treats it as absent.
	StateRetracted RecordState = "retracted"
)

// Record is a version's record, the value of its field in Keys.Versions:
// staged while claimed, final once the final manifest exists, deleted (a
// tombstone) once forgotten. The scripts store it as JSON whose every
// value is a string (wireRecord), so that no number passes through Lua's
// doubles; ParseRecord decodes it.
type Record struct {
	State   RecordState
	Staging string // the staging path claimed ("" when found in storage)
	Final   string // the final path
	Size    int64  // the final manifest's size in bytes
	// ETag is what records made before flightns stopped keeping ETags
	// hold ("" since): never reported.
	ETag      string
	TxnID     string    // the transaction that claimed it ("" for a single-table claim)
	ClaimedAt time.Time // when it was claimed (zero when found in storage)
	Seq       uint64    // the claim's catalog sequence (0 when found in storage)
	// Unproven is a staged claim made before its staging object was seen
	// (ClaimTable.Unproven): it commits when its promotion finds the
	// object, and is taken back (Retract) when that finds none. Size is
	// the writer's word until the flip.
	Unproven bool
	// RetractFrom, when not zero, is when taking the unproven claim back
	// began (Retract's mark): nothing may promote it since.
	RetractFrom time.Time
}

// wireRecord is a Record as the scripts store it.
type wireRecord struct {
	St  string `json:"st"`
	SP  string `json:"sp"`
	FP  string `json:"fp"`
	Sz  string `json:"sz"`
	Et  string `json:"et"`
	Tx  string `json:"tx"`
	Ts  string `json:"ts"` // µs since the Unix epoch
	Seq string `json:"seq"`
	Pf  string `json:"pf"` // "1": unproven
	Rt  string `json:"rt"` // µs: taking back began
}

// ParseRecord decodes a record as the scripts store it.
func ParseRecord(s string) (Record, error) {
	var w wireRecord
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		return Record{}, fmt.Errorf("redisstate: corrupt version record %q: %w", s, err)
	}
	r := Record{State: RecordState(w.St), Staging: w.SP, Final: w.FP, ETag: w.Et, TxnID: w.Tx}
	r.Size, _ = strconv.ParseInt(w.Sz, 10, 64)
	r.Seq, _ = strconv.ParseUint(w.Seq, 10, 64)
	if us, err := strconv.ParseInt(w.Ts, 10, 64); err == nil {
		r.ClaimedAt = time.UnixMicro(us).UTC()
	}
	r.Unproven = w.Pf == "1"
	if us, err := strconv.ParseInt(w.Rt, 10, 64); err == nil {
		r.RetractFrom = time.UnixMicro(us).UTC()
	}
	return r, nil
}

// Staged is a claim whose final manifest may not exist yet.
func (r Record) Staged() bool { return r.State == StateStaged }

// Deleted is a tombstone: the version's record was deleted
// (DeleteVersions); its manifest may still be in storage.
func (r Record) Deleted() bool { return r.State == StateDeleted }

// Retracted is the tombstone of an unproven claim taken back.
func (r Record) Retracted() bool { return r.State == StateRetracted }

// SameClaim reports whether o was claimed for the same staging and final
// paths as r.
func (r Record) SameClaim(o Record) bool { return r.Staging == o.Staging && r.Final == o.Final }

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
