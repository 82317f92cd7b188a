package redisclaim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/commitlog"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// Location is where a committed version's manifest is.
type Location struct {
	Table   string
	Version uint64
	// Path is the final manifest key, relative to the catalog root.
	Path   string
	Size   int64
	ETag   string
	Scheme lancemanifest.NamingScheme
	// TxnID names the multi-table transaction that committed the version.
	TxnID string
	// CommittedAt is the claim time; zero for versions found in storage.
	CommittedAt time.Time
	// Seq is the catalog sequence of the claim; 0 for versions found in
	// storage.
	Seq uint64
	// Manifest holds the final manifest's bytes when the writer that got
	// this Location made it from bytes it held (promoting meant reading
	// the staged manifest: not on file://): the catalog takes the
	// version's statistics from them instead of reading the manifest
	// again. Nil otherwise.
	Manifest []byte
	// StagingPath is the staging object the version was claimed with ("" for
	// versions found in storage).
	StagingPath string
}

// ConflictError is the cause carried by a ConcurrentModification error: the
// version is taken, and the table's head is Head.
type ConflictError struct {
	Table   string // the table's key
	Name    string // the table as errors name it (Catalog.Name, else Table)
	Version uint64
	Head    uint64

	// takenBy is the staging path the version's live record names, when
	// the claim script saw one ("" when the version was found in storage
	// or the record is a tombstone).
	takenBy string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("version %d of table %s is taken (head is %d)", e.Version, e.Name, e.Head)
}

func (s *Store) conflict(table string, version, head uint64) error {
	return nserror.New(nserror.ConcurrentModification, "%w", &ConflictError{Table: table, Name: s.name(table), Version: version, Head: head})
}

// name is a table as errors name it: the catalog's name for the chain
// (Catalog.Name: the table's id, and its branch), else the chain itself
// (a Store of its own, a directory no table has).
func (s *Store) name(chain string) string {
	if s.cat != nil {
		if n := s.cat.Name(chain); n != "" {
			return n
		}
	}
	return chain
}

// Step names a point of the commit protocol where tests cut in.
type Step string

// The protocol's seams, in order.
const (
	// StepClaimed: the claim script recorded the version(s) as staged.
	StepClaimed Step = "claimed"
	// StepTxnRecorded: a transaction's commit record is in object storage.
	StepTxnRecorded Step = "txn-recorded"
	// StepFinalized: a version's final manifest exists (the commit point of
	// a single-table commit).
	StepFinalized Step = "finalized"
	// StepConfirmed: after its final manifest exists, the writer of a
	// single-table commit read its claim back from Redis (it stands, or
	// the head was raised from storage); the reply follows.
	StepConfirmed Step = "confirmed"
	// StepFlipping: a committed version's record is about to be flipped
	// to final. A writer of a single-table commit is past its reply here.
	StepFlipping Step = "flipping"
	// StepFlipped: a version's record says final. A writer flips after
	// its reply, in the background; a reader that helps, before its own.
	StepFlipped Step = "flipped"
	// StepRetracting: an unproven claim whose staging object was not
	// found is marked as being taken back (retract.go), and the wait
	// before the final manifest is looked for begins. Not among Steps:
	// only a commit naming a staging object that does not exist gets
	// here.
	StepRetracting Step = "retracting"
)

// Steps lists the seams in protocol order.
func Steps() []Step {
	return []Step{StepClaimed, StepTxnRecorded, StepFinalized, StepConfirmed, StepFlipping, StepFlipped}
}

// StepFunc is called at every seam; an error aborts the operation right
// there, as a crash would, and is returned to the caller.
type StepFunc func(ctx context.Context, step Step, table string, version uint64) error

// Config configures a Store.
type Config struct {
	// Redis is a go-redis UniversalClient (github.com/redis/go-redis/v9):
	// a standalone, Sentinel or Cluster client.
	Redis redisstate.Client
	// Objects is the catalog root.
	Objects *objstore.Store
	// Catalog names the catalog; its Redis keys share the hash tag {Catalog}.
	Catalog string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Step is the fault-injection hook (default none).
	Step StepFunc
	// Observer receives the timings of claims, finalizations and
	// recoveries, for metrics (default none).
	Observer *Observer
	// LogMaxLen bounds the commit log approximately (default
	// commitlog.MaxLen).
	LogMaxLen int64
	// PromoteWindow bounds how long after its claim was read a final
	// manifest or a transaction record may be made visible on the
	// strength of that reading (later, the claim is read again right
	// before: objstore.WriteOptions.Gate), and a recovery that finds Redis's state
	// lost waits twice this long before it reads storage and opens a new
	// epoch: every such write of the lost epoch has landed or given up by
	// then, so no claim of the new epoch can take a version one of them
	// is about to promote. Default 1s.
	PromoteWindow time.Duration
	// ReplicaAcks is how many Redis replicas must have a claim before
	// its commit point, and a refusal or a catalog change before it is
	// answered (redisstate.Replicas): nil one whenever the primary has
	// replicas, 0 none, n n. ReplicaTimeout bounds each wait (default
	// redisstate.DefaultReplicaTimeout).
	ReplicaAcks    *int
	ReplicaTimeout time.Duration
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// State, when set, is the catalog's Redis state as the layers above
	// share it (one pipeliner for the catalog; its ConfirmOn waiter
	// confirms the claims, and ReplicaAcks and ReplicaTimeout are then
	// unused); its owner closes it. Nil: the Store keeps its own on
	// Redis.
	State *redisstate.Catalog
}

// Store is the Redis-backed claim store of one catalog.
type Store struct {
	objs      *objstore.Store
	catalog   string
	rs        *redisstate.Catalog // every key and script of the catalog
	ownState  bool                // rs is this Store's own (Config.State nil): Close closes it
	k         redisstate.Keys
	now       func() time.Time
	step      StepFunc
	window    time.Duration
	log       *slog.Logger
	obs       *Observer
	replicas  *redisstate.Replicas
	cat       Catalog    // the catalog the claims belong to (NewIn); nil for a Store of its own
	recoverMu sync.Mutex // held by a Recovery: one at a time in this process

	// after tracks the repairs writers leave running past their reply
	// (flip, staging cleanup); Close waits for them. afterSlots bounds
	// how many run at once: a writer that finds none free does its
	// repair before replying, as a reader does.
	after      sync.WaitGroup
	afterSlots chan struct{}
	afterMu    sync.Mutex // orders after.Go with Close's Wait
	closing    bool       // guarded by afterMu: no more repairs past replies

	// sweep deletes, in batches, the staging objects no commit needs
	// any more (sweep.go).
	sweep *sweeper
}

// EnsureDefaults fills what is unset.
func (c *Config) EnsureDefaults() {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.PromoteWindow <= 0 {
		c.PromoteWindow = time.Second
	}
	if c.LogMaxLen <= 0 {
		c.LogMaxLen = commitlog.MaxLen
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate refuses a configuration New cannot run.
func (c *Config) Validate() error {
	if c.Redis == nil || c.Objects == nil {
		return errors.New("redisclaim: Config.Redis and Config.Objects are required")
	}
	if err := ValidateCatalog(c.Catalog); err != nil {
		return err
	}
	if c.State != nil && c.State.Keys != redisstate.KeysOf(c.Catalog) {
		return fmt.Errorf("redisclaim: Config.State is the state of catalog %s, not of %q", c.State.Tag(), c.Catalog)
	}
	return nil
}

// New returns a Store of its own (an ExternalManifestStore: the claims
// and nothing on top of them) and loads its scripts.
func New(ctx context.Context, cfg Config) (*Store, error) { return NewIn(ctx, cfg, nil) }

// NewIn returns the Store of the claims of cat, a catalog built on them:
// cat recovers the catalog (the Store's Recover runs cat.Recover) and
// completes its transactions.
func NewIn(ctx context.Context, cfg Config, cat Catalog) (*Store, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Store{
		objs: cfg.Objects, catalog: cfg.Catalog, rs: cfg.State, ownState: cfg.State == nil, cat: cat,
		now: cfg.Now, step: cfg.Step, window: cfg.PromoteWindow, log: cfg.Logger, obs: cfg.Observer,
		afterSlots: make(chan struct{}, maxAfterReply),
	}
	if s.ownState {
		s.rs = redisstate.New(cfg.Redis, cfg.Catalog, cfg.LogMaxLen)
	}
	s.k = s.rs.Keys
	s.sweep = newSweeper(s.objs, s.log)
	if s.replicas = s.rs.Replicas(); s.replicas == nil {
		s.replicas = redisstate.NewReplicas(cfg.Redis, s.k, cfg.ReplicaAcks, cfg.ReplicaTimeout)
	}
	if err := redisstate.Load(ctx, cfg.Redis); err != nil {
		return nil, err
	}
	return s, nil
}

// Close waits for the repairs writers left running past their replies
// and deletes the staging objects they left queued, then stops the
// Store's background work. The Redis client and the object store are the
// caller's to close.
func (s *Store) Close() error {
	s.afterMu.Lock()
	s.closing = true
	s.afterMu.Unlock()
	s.after.Wait()
	s.sweep.close()
	if s.ownState {
		s.rs.Close()
	}
	return nil
}

// CloseEpoch closes the catalog's epoch (redisstate's close_epoch.lua):
// the next call of every process, this one's included, recovers the
// catalog's state from storage, as after a Redis that lost it.
func (s *Store) CloseEpoch(ctx context.Context) error { return s.rs.CloseEpoch(ctx) }

// Catalog returns the catalog name.
func (s *Store) Catalog() string { return s.catalog }

// Objects returns the object store of the catalog root.
func (s *Store) Objects() *objstore.Store { return s.objs }

func (s *Store) at(ctx context.Context, step Step, table string, version uint64) error {
	if s.step == nil {
		return nil
	}
	return s.step(ctx, step, table, version)
}

// record is a version's record as Redis holds it (redisstate.Record).
type record = redisstate.Record

// locationOf is the location of table's version with record r.
func locationOf(r record, table string, version uint64) Location {
	// A record's ETag (records made before flightns stopped keeping them
	// have one) is never reported: it may be the staging object's.
	loc := Location{Table: table, Version: version, Path: r.Final, Size: r.Size, TxnID: r.TxnID, StagingPath: r.Staging,
		CommittedAt: r.ClaimedAt, Seq: r.Seq}
	if _, m, err := lancemanifest.ParseManifestPath(r.Final); err == nil {
		loc.Scheme = m.Scheme
	}
	return loc
}

// checkETag refuses an e_tag a caller sends that no store would make
// (control characters, too long); a valid one is not kept.
func checkETag(etag string) error {
	if strings.ContainsFunc(etag, func(r rune) bool { return r < 0x20 || r == 0x7f }) || len(etag) > 256 {
		return nserror.New(nserror.InvalidInput, "e_tag %q is not a valid ETag", etag)
	}
	return nil
}

// entry is one table's part of a claim.
type entry struct {
	table, staging, final string
	version               uint64
	size                  int64
	data                  []byte // the staged bytes, when read before the claim (not on file://)
	// unproven: claimed before the staging object was seen, size the
	// writer's word (putEntry).
	unproven bool
}

const txnPrefix = "__manifest/_txns/"

// checkTable validates a table directory key.
func checkTable(table string) error {
	if err := objstore.ValidateKey(table); err != nil {
		return nserror.New(nserror.InvalidInput, "table location: %w", err)
	}
	if table == "__manifest" || strings.HasPrefix(table, "__manifest/") {
		return nserror.New(nserror.InvalidInput, "table location %q is inside the catalog's own __manifest", table)
	}
	if strings.Contains("/"+table+"/", "/"+lancemanifest.VersionsDir+"/") {
		return nserror.New(nserror.InvalidInput, "table location %q contains a %s directory", table, lancemanifest.VersionsDir)
	}
	return nil
}

func checkVersion(v uint64) error {
	if v == 0 || v > redisstate.MaxVersion {
		return nserror.New(nserror.InvalidInput, "version %d is out of range (1 to %d)", v, uint64(redisstate.MaxVersion))
	}
	return nil
}

// checkStaging validates a staging path for (table, version) and returns
// the final path it will be copied to.
func checkStaging(table string, version uint64, staging string) (string, error) {
	if err := checkTable(table); err != nil {
		return "", err
	}
	if err := checkVersion(version); err != nil {
		return "", err
	}
	if err := objstore.ValidateKey(staging); err != nil {
		return "", nserror.New(nserror.InvalidInput, "staging path: %w", err)
	}
	t, m, err := lancemanifest.ParseManifestPath(staging)
	if err != nil {
		return "", err
	}
	switch {
	case string(t) != table:
		return "", nserror.New(nserror.InvalidInput, "staging manifest %q is not inside table %q", staging, table)
	case !m.Staging || m.Detached:
		return "", nserror.New(nserror.InvalidInput, "%q is not a staging manifest name (<final name>-<suffix>)", staging)
	case m.Version != version:
		return "", nserror.New(nserror.InvalidInput, "staging manifest %q is for version %d, not %d", staging, m.Version, version)
	}
	return lancemanifest.Dir(table).Manifest(m.Scheme, version), nil
}

// stagedEntry checks a staging object in storage and builds its entry.
// found is false when the object does not exist. With read, the entry
// carries the staged bytes where promoting means reading them.
func (s *Store) stagedEntry(ctx context.Context, table string, version uint64, staging string, size int64, etag string, read bool) (e entry, found bool, err error) {
	final, err := checkStaging(table, version, staging)
	if err != nil {
		return e, false, err
	}
	if size < 0 {
		return e, false, nserror.New(nserror.InvalidInput, "manifest size %d is negative", size)
	}
	if err := checkETag(etag); err != nil {
		return e, false, err
	}
	// The ETag is checked and dropped: no object's ETag is recorded
	// (Lance's external manifest protocol, lance-format/lance#8499: a
	// staging object's ETag is not its final copy's, and a record must not
	// make a reader doubt the manifest storage holds).
	e = entry{table: table, version: version, staging: staging, final: final, size: size}
	a, data, err := s.readStaged(ctx, staging, read)
	if errors.Is(err, objstore.ErrNotFound) {
		return e, false, nil
	}
	if err != nil {
		return e, false, err
	}
	e.data = data
	if size > 0 && a.Size != size {
		return e, false, nserror.New(nserror.InvalidInput, "staging manifest %s has %d bytes, not the %d given", staging, a.Size, size)
	}
	e.size = a.Size
	return e, true, nil
}

// readStaged returns a staging object's attributes and, with read, where
// promoting it means reading it (not on file://), its bytes, read with
// the attributes in one request: a commit then waits for two sequential
// round trips to the store (this one and the conditional PUT of its
// promotion), not three. Staging objects are immutable: the bytes read
// before the claim are the bytes the claim names.
func (s *Store) readStaged(ctx context.Context, staging string, read bool) (objstore.Attrs, []byte, error) {
	if !read || s.objs.PromotesByRename() {
		a, err := s.objs.Head(ctx, staging)
		return a, nil, err
	}
	data, a, err := s.objs.GetWithAttrs(ctx, staging)
	return a, data, err
}

// Put runs the staging workflow for one version: claim (version == head+1),
// create-only copy of the staging object to the final path — the commit
// point, after which Put succeeds — then flip the record and delete the
// staging object. A loser gets ConcurrentModification (with a
// *ConflictError), deletes its staging object and never writes the final
// path. Repeating a Put with the same staging path returns the same
// location.
//
// The reply comes once the final manifest exists and the claim was read
// back from Redis (the flip is a write, and needs an fsync of Redis's
// append-only file: a read does not); the flip and the staging cleanup
// follow it.
func (s *Store) Put(ctx context.Context, table string, version uint64, staging string, size int64, etag string) (Location, error) {
	return s.PutGuarded(ctx, table, version, staging, size, etag, nil)
}

// PutGuarded is Put with guards, checked by the claim script with the
// claim: a layer above pins what it read before (such as the table's
// location) without reading it again. A guard that fails is a
// *GuardError, and nothing is claimed.
func (s *Store) PutGuarded(ctx context.Context, table string, version uint64, staging string, size int64, etag string, guards []redisstate.Guard) (Location, error) {
	e, found, err := s.putEntry(ctx, table, version, staging, size, etag)
	if err != nil {
		return Location{}, err
	}
	if !found {
		return s.retriedPut(ctx, e)
	}
	synced := s.syncStaged(e.staging)
	observed := time.Now() // the claim exists no earlier than this
	var x *Extras
	if len(guards) > 0 {
		x = &Extras{Guards: guards}
	}
	c, err := s.claim(ctx, "", nil, []entry{e}, x)
	if err != nil {
		var ce *ConflictError
		if errors.As(err, &ce) {
			if ce.takenBy == "" && s.ownsFinal(ctx, e) {
				// Redis forgot the claim but storage has our bytes at
				// this version: our own commit, retried.
				return s.resolveVersion(ctx, table, version)
			}
			s.discard(e.staging)
		}
		return Location{}, err
	}
	if err := s.at(ctx, StepClaimed, table, version); err != nil {
		return Location{}, err
	}
	rec := c.recs[0]
	if rec.TxnID != "" {
		// The staging path belongs to a transaction: finish that.
		if err := s.helpTxn(ctx, rec.TxnID, c.epoch, observed); err != nil && !errors.Is(err, errTxnGone) {
			return Location{}, err
		}
		return s.resolveVersion(ctx, table, version)
	}
	loc, err := s.finalize(ctx, table, version, rec, observed, &claimant{epoch: c.epoch, data: e.data, synced: synced})
	if errors.Is(err, errRetracted) {
		return Location{}, nserror.New(nserror.InvalidInput, "staging manifest %s does not exist", staging)
	}
	return loc, err
}

// putEntry is the entry of a single-table Put. Where the store refuses a
// conditional copy onto an existing key and the writer gave the staged
// manifest's size, the version is claimed first, unproven: nothing is
// read before the claim, the promotion is one server-side copy, and a
// copy that finds no staging object takes the claim back (retract).
// Elsewhere the staging object is read (or stat'ed) before the claim;
// found is false when it does not exist.
func (s *Store) putEntry(ctx context.Context, table string, version uint64, staging string, size int64, etag string) (e entry, found bool, err error) {
	if size <= 0 || !s.objs.ConditionalCopy() {
		return s.stagedEntry(ctx, table, version, staging, size, etag, true)
	}
	final, err := checkStaging(table, version, staging)
	if err != nil {
		return e, false, err
	}
	if err := checkETag(etag); err != nil {
		return e, false, err
	}
	return entry{table: table, version: version, staging: staging, final: final, size: size, unproven: true}, true, nil
}

// claimant is what a writer brings to the finalization of its own claim:
// the epoch it claimed in, the staged bytes when it read them before
// claiming, and the fsync of its staging object it started then. A reader
// that helps has none of them.
type claimant struct {
	epoch  string
	data   []byte
	synced func() *objstore.Synced
}

// syncStaged starts making a writer's staging object durable while its
// claim runs, and returns what waits for it (nil where objects are
// durable once written). On file:// the promotion needs the staged bytes
// fsynced before the final name may exist; begun here, that fsync runs
// alongside the claim's own (Redis's append-only file) instead of after
// it. A failure is not an answer: the promotion then fsyncs itself.
func (s *Store) syncStaged(staging string) func() *objstore.Synced {
	if !s.objs.PromotesByRename() {
		return nil
	}
	done := make(chan *objstore.Synced, 1)
	go func() {
		synced, err := s.objs.Durable(staging)
		if err != nil {
			synced = nil
		}
		done <- synced
	}()
	return func() *objstore.Synced { return <-done }
}

// retriedPut answers a Put whose staging object is gone: if the version was
// claimed with that staging path, the staging object was consumed by the
// commit, and the answer is the committed location.
func (s *Store) retriedPut(ctx context.Context, e entry) (Location, error) {
	loc, err := s.resolveVersion(ctx, e.table, e.version)
	if err == nil && loc.StagingPath == e.staging {
		return loc, nil
	}
	if err != nil && !errors.Is(err, nserror.ErrTableVersionNotFound) {
		return Location{}, err
	}
	if err == nil && loc.StagingPath == "" {
		// The version exists but Redis no longer knows who committed it.
		return Location{}, nserror.New(nserror.ServiceUnavailable,
			"version %d of table %s exists and staging manifest %s is gone; whether it was this commit is unknown", e.version, e.table, e.staging)
	}
	return Location{}, nserror.New(nserror.InvalidInput, "staging manifest %s does not exist", e.staging)
}

// ownsFinal reports whether the final object of e exists and holds exactly
// e's staged bytes. A caller asks only when Redis names no other staging
// object for the version: a live record of another claim means the final
// object, if any, is that claim's (only a record's own staging object is
// ever promoted), and asking would cost a loser a read or two.
func (s *Store) ownsFinal(ctx context.Context, e entry) bool {
	fin, err := s.objs.Get(ctx, e.final)
	if err != nil {
		return false
	}
	st := e.data
	if st == nil {
		if st, err = s.objs.Get(ctx, e.staging); err != nil {
			return false
		}
	}
	return string(st) == string(fin)
}

// discard queues a staging object that no commit needs any more for
// deletion (sweep.go); the caller does not wait for it.
func (s *Store) discard(key string) { s.sweep.add(key) }

// claimResult is what a successful claim script returned.
type claimResult struct {
	epoch   string
	seq     uint64
	recs    []record
	dup     bool
	deleted []int // per Extras.Deletions
}

// runClaim runs the claim script for entries, recovering, seeding heads and
// re-reading storage as the script asks. txnID and txnRecord are empty for
// a single-table claim.
func (s *Store) runClaim(ctx context.Context, txnID string, txnRecord []byte, entries []entry, x *Extras) (claimResult, error) {
	if err := s.settleDeletions(ctx, x); err != nil {
		return claimResult{}, err
	}
	now := s.now().UnixMicro()
	a := redisstate.ClaimArgs{TxnID: txnID, TxnRecord: txnRecord, Now: now}
	if p, ok := auth.PrincipalFrom(ctx); ok {
		a.Principal = p.Name
	}
	for _, e := range entries {
		a.Tables = append(a.Tables, redisstate.ClaimTable{Table: e.table, Version: e.version, Staging: e.staging, Final: e.final, Size: e.size, Unproven: e.unproven})
	}
	if x != nil { // (settleDeletions checked the deletions)
		a.Guards, a.Writes, a.Deletions, a.Log = x.Guards, x.Writes, x.Deletions, x.Log
	}
	reseeded := map[int]bool{}
	pending := map[int]int{}
	// Each NOHEAD or GAP answer seeds one member's head from storage, at
	// most once a member for each: a batch of many tables new to Redis
	// needs that many rounds.
	var r redisstate.ClaimReply
	var out claimResult
	err := s.WithEpoch(ctx, "redisclaim: claim", 2*len(entries), func() (redisstate.Status, error) {
		var err error
		if len(entries) == 0 {
			// A catalog change alone has no commit point of its own
			// (no manifest to promote): it is answered once a replica
			// has it.
			r, err = s.confirmedClaim(ctx, a, nil)
			return r.Status, err
		}
		if r, err = s.rs.Claim(ctx, a); err != nil {
			return "", fmt.Errorf("redisclaim: claim: %w", err)
		}
		if r.Status == redisstate.Conflict || r.Status == redisstate.GuardFailed {
			r, err = s.confirmedClaim(ctx, a, &r)
		}
		return r.Status, err
	}, func(redisstate.Status) (bool, error) {
		switch r.Status {
		case redisstate.NoHead:
			if _, err := s.seedFromStorage(ctx, entries[r.Member].table, true); err != nil {
				return false, err
			}
		case redisstate.Gap:
			e := entries[r.Member]
			if reseeded[r.Member] {
				return false, nserror.New(nserror.InvalidInput,
					"version %d of table %s skips versions: the table's latest version is %d", e.version, e.table, r.Head)
			}
			// Storage may know versions Redis lost: heads only move up.
			reseeded[r.Member] = true
			if _, err := s.seedFromStorage(ctx, e.table, true); err != nil {
				return false, err
			}
		case redisstate.Pending:
			// The version below is an unproven claim still staged: it is
			// finished (or taken back) first, as a reader would, so that
			// none is ever taken back from under another.
			e := entries[r.Member]
			if pending[r.Member]++; pending[r.Member] > 3 {
				return false, nserror.New(nserror.ServiceUnavailable, "version %d of table %s is still being committed: retry", r.Head, e.table)
			}
			if _, err := s.resolveVersion(ctx, e.table, r.Head); err != nil && !errors.Is(err, nserror.ErrTableVersionNotFound) {
				return false, err
			}
		case redisstate.Conflict:
			e := entries[r.Member]
			err := s.conflict(e.table, e.version, r.Head)
			if r.TakenBy != "" {
				var ce *ConflictError
				if errors.As(err, &ce) {
					ce.takenBy = r.TakenBy
				}
			}
			return false, err
		case redisstate.GuardFailed:
			return false, &GuardError{Index: r.Guard}
		case redisstate.Dup:
			out = claimResult{epoch: r.Epoch, dup: true, recs: r.Records}
			return true, nil
		case redisstate.OK:
			out = claimResult{epoch: r.Epoch, seq: r.Seq, deleted: r.Deleted}
			for _, e := range entries {
				out.recs = append(out.recs, record{State: redisstate.StateStaged, Staging: e.staging, Final: e.final, Size: e.size,
					TxnID: txnID, ClaimedAt: time.UnixMicro(now).UTC(), Seq: r.Seq, Unproven: e.unproven})
			}
			return true, nil
		}
		return false, nil // seeded: claim again
	})
	if err != nil {
		return claimResult{}, err
	}
	return out, nil
}

// confirmedClaim runs the claim a (again, with first its answer already
// given) followed by the replicas' fence and WAIT on one connection, so
// that its answer, whatever it is, rests on writes a replica has. Every
// answer a claim gives without a commit point of its own needs that
// before it is told: a refusal (a version taken, a guard that does not
// hold) tells of another writer's claim, which the primary may not have
// replicated yet, and a failover would then take back what the refused
// writer was told (the version found free again: the Sentinel run caught
// it); a catalog change alone would be lost with its acknowledgment.
// Without replicas to wait for, first stands (or the claim runs as
// usual).
func (s *Store) confirmedClaim(ctx context.Context, a redisstate.ClaimArgs, first *redisstate.ClaimReply) (redisstate.ClaimReply, error) {
	reply, sent, err := s.rs.ConfirmedClaim(ctx, s.replicas, a)
	var r redisstate.ClaimReply
	switch {
	case err != nil:
		return r, err
	case sent:
		r, err = reply()
	case first != nil:
		return *first, nil
	default:
		r, err = s.rs.Claim(ctx, a)
	}
	if err != nil {
		return r, fmt.Errorf("redisclaim: claim: %w", err)
	}
	return r, nil
}

// runFinalize materializes a claimed, staged version of a single-table claim:
// create-only copy (the commit point), flip, delete staging. It is what the
// writer does after its claim and what a reader does to help.
//
// observed is when the claim was read (before the script that returned
// it ran): the final object is made visible only within PromoteWindow of
// a reading (a later one is made right before, when the first is too old),
// which a recovery waits out before a new epoch may claim the version.
//
// w is the writer's; a helping reader passes nil. The writer replies once
// its claim has been read back (confirm) and leaves the flip and the
// cleanup to run after its reply; a reader flips before its own.
func (s *Store) runFinalize(ctx context.Context, table string, version uint64, rec record, observed time.Time, w *claimant) (Location, error) {
	loc := locationOf(rec, table, version)
	if !rec.Staged() {
		return loc, nil
	}
	if !rec.RetractFrom.IsZero() {
		return s.retract(ctx, table, version, rec) // being taken back: nothing promotes it now
	}
	var known []byte
	var synced *objstore.Synced
	if w != nil {
		known = w.data
		if w.synced != nil {
			synced = w.synced()
		}
	}
	_, err := s.objs.PromoteIfAbsent(ctx, rec.Staging, rec.Final, objstore.WriteOptions{Known: known, Synced: synced,
		Gate: s.fence(ctx, &observed, func(ctx context.Context) error { return s.reconfirm(ctx, table, version, rec) })})
	switch {
	case err == nil:
		loc.Manifest = known
	case errors.Is(err, objstore.ErrAlreadyExists):
		return Location{}, s.supersede(ctx, table, version, rec)
	case errors.Is(err, objstore.ErrNotFound):
		// The staging object is gone: a helper finished before us (it
		// deletes staging only after the final object exists) — or, for
		// an unproven claim, it never was: the claim is taken back.
		a, herr := s.objs.Head(ctx, rec.Final)
		switch {
		case herr == nil && (a.Size == rec.Size || rec.Unproven):
		case rec.Unproven && errors.Is(herr, objstore.ErrNotFound):
			return s.retract(ctx, table, version, rec)
		default:
			return Location{}, nserror.New(nserror.Internal,
				"version %d of table %s was claimed, but its staging manifest %s is gone and its final manifest is missing or of another size", version, table, rec.Staging)
		}
	case errors.Is(err, errRetracting):
		return s.retract(ctx, table, version, rec)
	default:
		return Location{}, err
	}
	if err := s.at(ctx, StepFinalized, table, version); err != nil {
		return Location{}, err
	}
	// Past the commit point: what follows is repair and garbage collection.
	// Failures are logged and left for the next reader, never reported,
	// and a caller that stopped waiting does not cut them short.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), afterCommitTimeout)
	if w == nil {
		defer cancel()
		if rec.Unproven {
			// A reader answers with the size storage holds.
			if proven, err := s.prove(ctx, rec); err == nil {
				rec, loc.Size = proven, proven.Size
			}
		}
		return loc, s.repair(ctx, table, version, rec)
	}
	if !s.stands(ctx, table, version, rec, w.epoch) {
		s.raiseHead(ctx, table, version)
	}
	if err := s.at(ctx, StepConfirmed, table, version); err != nil {
		cancel()
		return Location{}, err
	}
	if s.afterReply(func() { defer cancel(); _ = s.repair(ctx, table, version, rec) }) {
		return loc, nil
	}
	defer cancel()
	if err := s.repair(ctx, table, version, rec); err != nil {
		return Location{}, err
	}
	return loc, nil
}

// afterReply runs fn in the background, past the writer's reply, unless
// maxAfterReply run already or the Store is closing; false: the caller
// runs it itself.
func (s *Store) afterReply(fn func()) bool {
	s.afterMu.Lock()
	defer s.afterMu.Unlock()
	if s.closing {
		return false
	}
	select {
	case s.afterSlots <- struct{}{}:
	default:
		return false
	}
	s.after.Go(func() {
		defer func() { <-s.afterSlots }()
		fn()
	})
	return true
}

// maxAfterReply bounds the writers' repairs running past their replies.
const maxAfterReply = 256

// repair flips a committed version's record to final and deletes its
// staging object. A record that no longer carries the claim (Redis lost
// it) has its head raised from storage instead. The error is the step
// hook's: a fault injected at StepFlipping or StepFlipped.
func (s *Store) repair(ctx context.Context, table string, version uint64, rec record) error {
	if err := s.at(ctx, StepFlipping, table, version); err != nil {
		return err
	}
	if rec.Unproven {
		var err error
		if rec, err = s.prove(ctx, rec); err != nil {
			s.log.Warn("redisclaim: version is committed but its final manifest could not be read for its size; the next reader flips it", "table", table, "version", version, "err", err)
			return nil
		}
	}
	ok, err := s.flip(ctx, table, version, rec)
	if err != nil || !ok {
		s.log.Warn("redisclaim: version is committed but its record could not be flipped", "table", table, "version", version, "ok", ok, "err", err)
		if err == nil {
			s.raiseHead(ctx, table, version)
		}
		return nil
	}
	if err := s.at(ctx, StepFlipped, table, version); err != nil {
		return err
	}
	if !s.objs.PromotesByRename() { // else staging was renamed into place
		s.discard(rec.Staging)
	}
	return nil
}

// stands reports whether a writer's claim is still in Redis, under the
// epoch it was made in, after its final manifest was made (read-only: a
// record a helper flipped meanwhile stands too).
func (s *Store) stands(ctx context.Context, table string, version uint64, rec record, epoch string) bool {
	now, cur, err := s.claimNow(ctx, table, version)
	return err == nil && now == epoch && cur.SameClaim(rec)
}

// raiseHead re-reads a table's head from storage after Redis lost a claim
// (restart, flush, failover) whose final manifest exists now: Redis may
// have seeded the head from storage before that manifest was there, and
// the version must be visible once acknowledged (heads only move up).
func (s *Store) raiseHead(ctx context.Context, table string, version uint64) {
	if _, err := s.seedFromStorage(ctx, table, false); err != nil {
		s.log.Warn("redisclaim: raising the head from storage after a lost claim", "table", table, "version", version, "err", err)
	}
}

// fence is the gate (objstore.WriteOptions.Gate) of a write that a claim
// read at *observed entitles: right before the write can become visible,
// a reading older than PromoteWindow is made again (check), and the write
// gives up if the claim no longer stands.
//
// Then, past the check, a replica must have the claim (redisstate.Replicas).
func (s *Store) fence(ctx context.Context, observed *time.Time, check func(context.Context) error) func() error {
	return func() error {
		if time.Since(*observed) >= s.window {
			at := time.Now()
			if err := check(ctx); err != nil {
				return err
			}
			*observed = at
		}
		return s.replicas.Confirm(ctx)
	}
}

// reconfirm reads a claim again before a late promotion: it must still
// be staged, for the same staging object, in Redis's current state.
func (s *Store) reconfirm(ctx context.Context, table string, version uint64, rec record) error {
	epoch, cur, err := s.claimNow(ctx, table, version)
	if err != nil {
		return err
	}
	if epoch != "" && cur.Staged() && cur.SameClaim(rec) {
		if !cur.RetractFrom.IsZero() {
			return errRetracting
		}
		return nil
	}
	return nserror.New(nserror.ServiceUnavailable,
		"the claim of version %d of table %s is no longer in Redis as it was read (Redis lost its state meanwhile?): retry the same request to learn the outcome", version, s.name(table))
}

// claimNow reads a version's record as Redis holds it now, with the
// epoch; epoch "" when Redis has no epoch, no head or no such record.
func (s *Store) claimNow(ctx context.Context, table string, version uint64) (epoch string, rec record, err error) {
	r, err := s.rs.Get(ctx, table, version)
	if err != nil {
		return "", record{}, fmt.Errorf("redisclaim: get: %w", err)
	}
	if r.Status != redisstate.OK || !r.HasRecord {
		return "", record{}, nil
	}
	return r.Epoch, r.Record, nil
}

// afterCommitTimeout bounds the repair a commit does past its commit
// point (flip, staging cleanup), which its caller's cancel does not stop.
const afterCommitTimeout = 10 * time.Second

func (s *Store) flip(ctx context.Context, table string, version uint64, rec record) (bool, error) {
	return s.rs.Flip(ctx, table, version, rec)
}

// supersede handles a claim whose final path already holds other bytes:
// Redis had lost the commit that wrote them. The claim is replaced by what
// storage holds, the head re-read from storage, and the writer told that
// the version is taken (it is).
func (s *Store) supersede(ctx context.Context, table string, version uint64, rec record) error {
	a, err := s.objs.Head(ctx, rec.Final)
	if err != nil {
		return err
	}
	s.log.Error("redisclaim: a claimed version already exists in storage with other bytes; Redis had lost that commit",
		"table", table, "version", version, "final", rec.Final, "staging", rec.Staging)
	if _, err := s.rs.Supersede(ctx, table, version, rec.Staging, rec.Final, a.Size); err != nil {
		return err
	}
	head, err := s.seedFromStorage(ctx, table, true)
	if err != nil {
		return err
	}
	if rec.TxnID == "" {
		s.discard(rec.Staging)
		return s.conflict(table, version, head)
	}
	return nserror.New(nserror.Internal, "transaction %s: member version %d of table %s is occupied in storage by other bytes", rec.TxnID, version, s.name(table))
}

// resolveVersion returns a committed version's location, finishing a
// half-done commit first (helping). Version 0 means the head.
func (s *Store) resolveVersion(ctx context.Context, table string, version uint64) (Location, error) {
	if err := checkTable(table); err != nil {
		return Location{}, err
	}
	if version > redisstate.MaxVersion {
		return Location{}, nserror.New(nserror.TableVersionNotFound, "table %s has no version %d", s.name(table), version)
	}
	gone := map[string]bool{}
	var observed time.Time
	var out Location
	var r redisstate.GetReply
	err := s.WithEpoch(ctx, fmt.Sprintf("redisclaim: reading version %d of %s", version, table), 0, func() (redisstate.Status, error) {
		observed = time.Now()
		var err error
		if r, err = s.rs.Get(ctx, table, version); err != nil {
			return "", fmt.Errorf("redisclaim: get: %w", err)
		}
		return r.Status, nil
	}, func(redisstate.Status) (bool, error) {
		if r.Status == redisstate.NoHead {
			head, err := s.seedFromStorage(ctx, table, false)
			if err != nil {
				return false, err
			}
			if head == 0 {
				return false, s.notFound(table, version)
			}
			return false, nil
		}
		epoch, head := r.Epoch, r.Head
		v := version
		if v == 0 {
			v = head
		}
		if v == 0 || v > head {
			return false, s.notFound(table, version)
		}
		if !r.HasRecord {
			var err error
			out, err = s.fromStorage(ctx, table, v)
			return true, err
		}
		rec := r.Record
		if rec.Retracted() {
			return false, s.notFound(table, v)
		}
		if rec.Deleted() {
			return false, nserror.New(nserror.TableVersionNotFound, "version %d of table %s %w", v, s.name(table), errDeletedRecord)
		}
		if !rec.Staged() {
			out = locationOf(rec, table, v)
			return true, nil
		}
		if rec.TxnID == "" {
			var err error
			out, err = s.finalize(ctx, table, v, rec, observed, nil)
			if errors.Is(err, errRetracted) {
				if version == 0 {
					return false, nil // the head was lowered: read it again
				}
				return false, s.notFound(table, version)
			}
			return true, err
		}
		err := s.helpTxn(ctx, rec.TxnID, epoch, observed)
		if errors.Is(err, errEpochChanged) {
			return false, nil
		}
		if errors.Is(err, errTxnGone) {
			if gone[rec.TxnID] {
				return false, nserror.New(nserror.Internal, "transaction %s has staged members but no commit record anywhere", rec.TxnID)
			}
			gone[rec.TxnID] = true
			return false, nil
		}
		if err != nil {
			return false, err
		}
		// Re-read the version just helped, not the head again: the head
		// may have moved on meanwhile, and the answer must be one version.
		version = v
		return false, nil
	})
	if err != nil {
		return Location{}, err
	}
	return out, nil
}

func (s *Store) notFound(table string, version uint64) error {
	if version == 0 {
		return nserror.New(nserror.TableVersionNotFound, "table %s has no versions", s.name(table))
	}
	return nserror.New(nserror.TableVersionNotFound, "table %s has no version %d", s.name(table), version)
}

// fromStorage answers for a version up to the head that Redis has no
// record of (lost; a deleted one has a tombstone): storage is the truth; a
// final manifest found there is recorded.
func (s *Store) fromStorage(ctx context.Context, table string, version uint64) (Location, error) {
	for _, scheme := range []lancemanifest.NamingScheme{lancemanifest.V2, lancemanifest.V1} {
		p := lancemanifest.Dir(table).Manifest(scheme, version)
		a, err := s.objs.Head(ctx, p)
		if errors.Is(err, objstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return Location{}, err
		}
		if err := s.seedVersions(ctx, table, 0, "", []foundVersion{{version: version, path: p, size: a.Size}}); err != nil {
			return Location{}, err
		}
		return Location{Table: table, Version: version, Path: p, Size: a.Size, ETag: a.ETag, Scheme: scheme}, nil
	}
	return Location{}, s.notFound(table, version)
}

// Get is Lance's ExternalManifestStore Get.
func (s *Store) Get(ctx context.Context, table string, version uint64) (string, error) {
	loc, err := s.GetManifestLocation(ctx, table, version)
	return loc.Path, err
}

// GetManifestLocation is Lance's ExternalManifestStore GetManifestLocation.
func (s *Store) GetManifestLocation(ctx context.Context, table string, version uint64) (Location, error) {
	if err := checkVersion(version); err != nil {
		return Location{}, err
	}
	return s.resolveVersion(ctx, table, version)
}

// GetLatestVersion is Lance's ExternalManifestStore GetLatestVersion.
func (s *Store) GetLatestVersion(ctx context.Context, table string) (uint64, string, bool, error) {
	loc, ok, err := s.GetLatestManifestLocation(ctx, table)
	return loc.Version, loc.Path, ok, err
}

// errDeletedRecord is the cause of a version's TableVersionNotFound when
// its record was deleted (its message reads "... was deleted").
var errDeletedRecord = errors.New("was deleted")

// GetLatestManifestLocation is Lance's ExternalManifestStore
// GetLatestManifestLocation: the head's record, or, when the head's record
// was deleted (BatchDeleteTableVersions), the newest record left.
func (s *Store) GetLatestManifestLocation(ctx context.Context, table string) (Location, bool, error) {
	loc, err := s.resolveVersion(ctx, table, 0)
	if errors.Is(err, nserror.ErrTableVersionNotFound) && !errors.Is(err, errDeletedRecord) {
		return Location{}, false, nil
	}
	if !errors.Is(err, errDeletedRecord) {
		return loc, err == nil, err
	}
	newest, _, err := s.ListVersions(ctx, table, ListOptions{Descending: true, Limit: 1})
	if err != nil || len(newest) == 0 {
		return Location{}, false, err
	}
	return newest[0], true, nil
}

// PutIfNotExists is Lance's ExternalManifestStore PutIfNotExists: it records path (a staging or a
// final manifest key of the table) as the version, without copying.
func (s *Store) PutIfNotExists(ctx context.Context, table string, version uint64, path string, size int64, etag string) error {
	if err := checkTable(table); err != nil {
		return err
	}
	if err := checkVersion(version); err != nil {
		return err
	}
	t, m, err := lancemanifest.ParseManifestPath(path)
	if err != nil {
		return err
	}
	if string(t) != table || m.Version != version || m.Detached {
		return nserror.New(nserror.InvalidInput, "%q is not a manifest of version %d of table %s", path, version, table)
	}
	if err := checkETag(etag); err != nil {
		return err
	}
	e := entry{table: table, version: version, staging: path, final: lancemanifest.Dir(table).Manifest(m.Scheme, version), size: size}
	_, err = s.claim(ctx, "", nil, []entry{e}, nil)
	return err
}

// PutIfExists is Lance's ExternalManifestStore PutIfExists: the version's record moves from its
// staging path to path, which must be the final path it was claimed for.
func (s *Store) PutIfExists(ctx context.Context, table string, version uint64, path string, size int64, _ string) error {
	if err := checkTable(table); err != nil {
		return err
	}
	if err := checkVersion(version); err != nil {
		return err
	}
	r, err := s.rs.Get(ctx, table, version)
	if err != nil {
		return err
	}
	if r.Status != redisstate.OK || !r.HasRecord {
		return s.notFound(table, version)
	}
	rec := r.Record
	if rec.Final != path {
		return nserror.New(nserror.InvalidInput, "version %d of table %s is claimed for %s, not %s", version, s.name(table), rec.Final, path)
	}
	if size > 0 {
		rec.Size = size
	}
	ok, err := s.flip(ctx, table, version, rec)
	if err != nil {
		return err
	}
	if !ok {
		return nserror.New(nserror.ConcurrentModification, "version %d of table %s changed while it was being finalized", version, s.name(table))
	}
	return nil
}

// Delete is Lance's ExternalManifestStore Delete: Redis forgets the table (its head,
// records and index). Storage is not touched.
func (s *Store) Delete(ctx context.Context, table string) error {
	if err := checkTable(table); err != nil {
		return err
	}
	return s.withEpoch(ctx, func() (redisstate.Status, error) { return s.rs.Drop(ctx, table) })
}

// withEpoch runs a script whose every reply but NOEPOCH is final
// (WithEpoch).
func (s *Store) withEpoch(ctx context.Context, call func() (redisstate.Status, error)) error {
	return s.WithEpoch(ctx, "redisclaim", 0, call, Final)
}
