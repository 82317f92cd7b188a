package manifesttable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/google/uuid"

	"github.com/flightns/flightns/internal/commitlog"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// Config configures a Table.
type Config struct {
	// Objects is the catalog root; __manifest lives under it.
	Objects *objstore.Store
	// Redis holds the catalog's commit log: a go-redis UniversalClient
	// (github.com/redis/go-redis/v9). Catalog names the catalog (its keys
	// share the hash tag {Catalog}, as redisclaim's do).
	Redis   redisstate.Client
	Catalog string
	// Engine bounds the SQL engine.
	Engine sqlengine.Config
	// NoSQL opens the table without a SQL engine: Query and QuerySchema
	// fail, and nothing of the engine is kept in memory (a SQL worker
	// process serves the queries).
	NoSQL bool
	// ReadOnly keeps this process out of the race for the materializer
	// lease: it reads __manifest and never writes it (default false: the
	// process competes for the lease and materializes while it holds it).
	ReadOnly bool
	// MaxSegmentEntries bounds one group commit (default 4096).
	MaxSegmentEntries int
	// LogMaxLen bounds the commit log approximately (default
	// commitlog.MaxLen): the trim of every entry this table appends.
	LogMaxLen int64
	// CompactAfter is the number of segments after which the materializer
	// writes a snapshot (default 1000; negative: never on its own).
	CompactAfter int
	// KeepSnapshots is how many snapshots compaction keeps (default 2).
	KeepSnapshots int
	// EventHistory is how long the change feed's history is kept:
	// compaction removes a segment that the kept snapshots cover only
	// once it is older than this (default DefaultEventHistory).
	EventHistory time.Duration
	// NoVersionStats leaves version rows without the statistics read from
	// their manifests (see stats.go).
	NoVersionStats bool
	// VersionLinger is how long the materializer lets a backlog of table
	// version rows alone (nobody waits for them to be durable: the
	// version's manifest already is) gather more before it writes them
	// (default 100ms, 1s on s3://, where every segment costs a PUT and a
	// GET by each follower; negative: never). Catalog mutations, which wait, and a
	// query waiting to see the newest change, in this process or another
	// (through the Redis key redisstate.Keys.Flush), end the linger.
	VersionLinger time.Duration
	// EnginePace is the shortest time between two applications of
	// segments to the SQL engine while no query waits to see one: the
	// segments that arrive meanwhile go in as one transaction (default
	// 250ms; negative: none). On this engine a transaction's statements,
	// not its rows, are most of its cost. A query that must see a newer
	// change (Query, QueryAfter, WaitVisible) ends the wait.
	EnginePace time.Duration
	// ReplicaAcks and ReplicaTimeout are redisclaim.Config's: the
	// materializer writes a segment only of log entries that many Redis
	// replicas have (redisstate.Replicas), so that a failover cannot
	// take back what is durable in __manifest (and hand its sequences
	// to other changes).
	ReplicaAcks    *int
	ReplicaTimeout time.Duration
	// State, when set, is the catalog's Redis state as the layers above
	// share it (one pipeliner for the catalog; its ConfirmOn waiter
	// confirms what the table reads of the log, and ReplicaAcks and
	// ReplicaTimeout are then unused); its owner closes it. Nil: the
	// table keeps its own on Redis.
	State *redisstate.Catalog
	// Observer receives the materializer's group commits and the opened
	// table (metrics; default none).
	Observer *Observer
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time

	ignoreLease bool // tests: materialize without the lease, to race
	// lingering (tests) is called by the materializer each time it starts
	// to hold back a backlog of version rows, sequences first through
	// last: a test learns that the materializer has seen the rows and
	// chose to wait, instead of sleeping and hoping it had its chance.
	lingering func(first, last uint64)
	// engineApplied (tests) is called by the applier after each
	// transaction that applied segments, sequences first through last.
	engineApplied func(first, last uint64)
	// gapListed (tests) is called by the materializer once it has listed
	// storage for a gap in the log, before it reads the log again.
	gapListed func()
}

// Change is one row change: a put (insert or replace by key) or a delete.
type Change struct {
	Delete bool
	Row    Row
}

// Table is the __manifest table of one catalog, as this process sees it:
// the state loaded from object storage, kept current from new segments,
// queryable with SQL, with an index of namespaces and tables for the point
// look-ups the API needs.
//
// Data flow: producers append changes to the Redis commit log (Append, or
// the claim and catalog scripts of other packages); one materializer per
// catalog (the lease holder) turns everything new in the log into one
// Parquet segment — a group commit — writes it create-only, applies it
// locally and publishes its sequence; other processes read the new
// segments from storage. WaitDurable(seq) returns once seq is in a
// durable segment and visible here.
type Table struct {
	cfg Config
	st  storage
	eng *engine
	log *slog.Logger
	rs  *redisstate.Catalog // the log's appends and the lease
	// ownState: rs is the table's own (Config.State nil): Close closes it.
	ownState bool
	keys     redisstate.Keys
	// replicas confirm the log entries of a segment before it is written.
	replicas *redisstate.Replicas

	// idx is every current row (rows, at rows.seq), guarded by its lock.
	idx struct {
		sync.RWMutex
		rows index
	}
	// feed is the change feed's recent events, for Follow.
	feed feed
	// applied is where the segments applied in order stand, guarded by its
	// lock (held while a segment is applied).
	applied struct {
		sync.Mutex
		durable   uint64 // last sequence applied from a segment
		snapshot  uint64 // sequence of the snapshot the state started from
		sinceSnap int    // segments applied since the last snapshot
	}
	// waiters is what WaitDurable waits on, guarded by its lock (cond
	// signals each advance).
	waiters struct {
		sync.Mutex
		cond *sync.Cond
		seq  uint64      // durable and visible here
		lost [][2]uint64 // sequence ranges whose log entries were lost
	}
	// stall is the materializer's failing rounds (for readiness and for
	// mutations waiting on durability), guarded by its lock.
	stall struct {
		sync.Mutex
		err   error     // the last round's error, nil once a round succeeds
		since time.Time // when its rounds began to fail
	}
	// lease is the materializer's lease in Redis, guarded by its lock
	// (token is set once at Open).
	lease struct {
		sync.Mutex
		token   string
		leading bool
		renewed time.Time // when the lease was last renewed
	}

	// The materializer goroutine's own.
	published   uint64        // the durable sequence last published
	lingerSince time.Time     // when it began lingering
	held        heldClaim     // the unproven claim the log is held at (unproven.go)
	flushNow    chan struct{} // wakes a lingering materializer, or a follower (any goroutine sends)
	droppedNow  chan struct{} // wakes the dropped view's refresher (the applier sends)
	flushTo     atomic.Uint64 // someone waits for the sequences up to this (any goroutine)
	askedFlush  uint64        // the highest flushTo a follower asked the leader for (run's goroutine)
	followWait  time.Duration // a follower's next poll of the leader's progress (run's goroutine)

	// settle finishes an unproven claim left staged (SettleWith).
	settle   atomic.Pointer[func(ctx context.Context, chain string, version uint64) error]
	settling atomic.Bool // a settle runs

	applyQ chan *segment // accepted segments, for the SQL engine
	// A query waits to see the sequences up to engineWant (any
	// goroutine); engineHurry wakes a pacing applier.
	engineWant  atomic.Uint64
	engineHurry chan struct{}
	statsQ      chan versionStats // version rows waiting for their statistics (nil: none read)
	recent      manifestCache     // final manifests' bytes this process's writers noted (stats.go)

	// Life cycle.
	stop       chan struct{}
	done       sync.WaitGroup
	runDone    sync.WaitGroup
	closeOnce  sync.Once
	compacting sync.Mutex // one compaction at a time
}

// Validate refuses a configuration Open cannot run.
func (c *Config) Validate() error {
	if c.Objects == nil || c.Redis == nil || c.Catalog == "" {
		return errors.New("manifesttable: Config.Objects, Redis and Catalog are required")
	}
	if c.State != nil && c.State.Keys != redisstate.KeysOf(c.Catalog) {
		return fmt.Errorf("manifesttable: Config.State is the state of catalog %s, not of %q", c.State.Tag(), c.Catalog)
	}
	return nil
}

// EnsureDefaults fills what is unset (call Validate first: the linger's
// default depends on the store).
func (c *Config) EnsureDefaults() {
	if c.MaxSegmentEntries <= 0 {
		c.MaxSegmentEntries = 4096
	}
	if c.LogMaxLen <= 0 {
		c.LogMaxLen = commitlog.MaxLen
	}
	if c.VersionLinger == 0 {
		c.VersionLinger = 100 * time.Millisecond
		if c.Objects.Remote() {
			c.VersionLinger = time.Second
		}
	}
	if c.EnginePace == 0 {
		c.EnginePace = 250 * time.Millisecond
	}
	if c.CompactAfter == 0 {
		c.CompactAfter = 1000
	}
	if c.KeepSnapshots <= 0 {
		c.KeepSnapshots = 2
	}
	if c.EventHistory <= 0 {
		c.EventHistory = DefaultEventHistory
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Open loads the table from storage (newest snapshot, then every later
// segment) and starts following the commit log.
func Open(ctx context.Context, cfg Config) (*Table, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.EnsureDefaults()
	rs, own := cfg.State, cfg.State == nil
	if own {
		rs = redisstate.New(cfg.Redis, cfg.Catalog, cfg.LogMaxLen)
	}
	t := &Table{ownState: own, cfg: cfg, st: storage{objs: cfg.Objects, catalog: cfg.Catalog}, log: cfg.Logger, rs: rs, keys: rs.Keys,
		stop: make(chan struct{}), applyQ: make(chan *segment, 256), flushNow: make(chan struct{}, 1),
		droppedNow: make(chan struct{}, 1), engineHurry: make(chan struct{}, 1)}
	if t.replicas = rs.Replicas(); t.replicas == nil {
		t.replicas = redisstate.NewReplicas(cfg.Redis, t.keys, cfg.ReplicaAcks, cfg.ReplicaTimeout)
	}
	t.idx.rows = newIndex()
	t.lease.token = uuid.NewString()
	t.waiters.cond = sync.NewCond(&t.waiters.Mutex)
	if t.log == nil {
		t.log = slog.Default()
	}
	if !cfg.NoSQL {
		var err error
		if t.eng, err = openEngine(cfg.Engine); err != nil {
			return nil, err
		}
		t.done.Add(1)
		go t.applier()
	}
	fail := func(err error) (*Table, error) {
		t.closeEngine()
		return nil, err
	}
	if err := t.load(ctx); err != nil {
		return fail(err)
	}
	if t.eng != nil {
		// Queries see everything loaded before Open returns.
		if err := t.waitEngine(ctx, t.applied.durable); err != nil {
			return fail(err)
		}
	}
	if t.eng != nil {
		t.runDone.Add(1)
		go t.droppedRefresher()
	}
	t.runDone.Add(1)
	go t.run()
	if !cfg.NoVersionStats && !cfg.ReadOnly {
		t.statsQ = make(chan versionStats, statsQueue)
		t.runDone.Add(1)
		go t.statsReader()
	}
	if o := cfg.Observer; o != nil && o.Opened != nil {
		o.Opened(t)
	}
	return t, nil
}

// closeEngine stops the engine's applier and closes the engine.
func (t *Table) closeEngine() {
	if t.eng == nil {
		return
	}
	close(t.applyQ)
	t.done.Wait()
	_ = t.eng.close()
}

// Close stops following the log and releases the SQL engine. It may be
// called more than once.
func (t *Table) Close() error {
	first := false
	t.closeOnce.Do(func() { first = true })
	if !first {
		return nil
	}
	close(t.stop)
	t.runDone.Wait()
	t.lease.Lock()
	if t.lease.leading {
		t.releaseLease(context.Background())
	}
	t.lease.Unlock()
	t.closeEngine()
	if t.ownState {
		t.rs.Close()
	}
	return nil
}

// load reads the newest snapshot and the segments after it.
func (t *Table) load(ctx context.Context) error {
	snaps, err := t.st.listSeqs(ctx, snapshotPrefix)
	if err != nil {
		return err
	}
	if len(snaps) > 0 {
		seq := snaps[len(snaps)-1]
		sr, err := t.st.openSnapshot(ctx, seq)
		if err != nil {
			return fmt.Errorf("manifesttable: loading snapshot %d: %w", seq, err)
		}
		t.idx.Lock()
		err = loadSnapshot(&t.idx.rows, sr)
		t.idx.Unlock()
		sr.Close()
		if err != nil {
			return fmt.Errorf("manifesttable: loading snapshot %d: %w", seq, err)
		}
		t.applied.durable, t.applied.snapshot = seq, seq
		t.idx.Lock()
		t.idx.rows.seq = seq
		f := t.idx.rows.freeze()
		t.idx.Unlock()
		t.setDurable(seq)
		if t.eng != nil {
			if err := t.eng.loadFrozen(f); err != nil {
				return fmt.Errorf("manifesttable: loading snapshot %d into the SQL engine: %w", seq, err)
			}
		}
	}
	return t.catchUp(ctx)
}

// catchUp applies every durable segment after the current state.
//
// A process that fell behind a compaction — the segments it needs next
// were pruned, a newer snapshot covers them — starts again from the
// newest snapshot, then goes on with the segments after it; so does one
// that a compaction overtook between listing the segments and reading
// one.
func (t *Table) catchUp(ctx context.Context) error {
	t.applied.Lock()
	defer t.applied.Unlock()
	for {
		pruned, err := t.catchUpLocked(ctx)
		if err != nil || pruned == 0 {
			return err
		}
		rebased, err := t.rebaseLocked(ctx)
		if err != nil {
			return err
		}
		if !rebased {
			return nserror.New(nserror.Internal, "manifesttable: segment %d was listed, then gone, and no newer snapshot covers it", pruned)
		}
	}
}

// catchUpTo loads the segments up to the durable sequence seq that the
// leader published. A segment is named by its first sequence, so the one
// after the state is read by name, without listing the log: on S3 a
// follower then pays one request a segment, not two. Whatever it cannot
// read so (a compaction took the segment, a hole) is left to catchUp.
func (t *Table) catchUpTo(ctx context.Context, seq uint64) error {
	t.applied.Lock()
	for t.applied.durable < seq {
		seg, err := t.st.readSegment(ctx, t.applied.durable+1)
		if err != nil {
			break // (not there: catchUp lists)
		}
		if err := t.acceptLocked(seg); err != nil {
			t.applied.Unlock()
			return err
		}
	}
	done := t.applied.durable >= seq
	t.applied.Unlock()
	if done {
		return nil
	}
	return t.catchUp(ctx)
}

// catchUpLocked is one pass of catchUp over the segments listed now; it
// stops at a listed segment gone when it read it and returns its
// sequence (pruned). Call with amu.
func (t *Table) catchUpLocked(ctx context.Context) (pruned uint64, err error) {
	firsts, err := t.st.listSeqs(ctx, logPrefix)
	if err != nil {
		return 0, err
	}
	rebased := false
	for _, first := range firsts {
		if first <= t.applied.durable {
			continue
		}
		if first != t.applied.durable+1 && !rebased {
			if rebased, err = t.rebaseLocked(ctx); err != nil {
				return 0, err
			}
			if first <= t.applied.durable {
				continue
			}
		}
		if first != t.applied.durable+1 {
			return 0, nserror.New(nserror.Internal, "manifesttable: segment %d follows sequence %d: the log in storage has a hole", first, t.applied.durable)
		}
		seg, err := t.st.readSegment(ctx, first)
		if errors.Is(err, objstore.ErrNotFound) {
			return first, nil
		}
		if err != nil {
			return 0, err
		}
		if err := t.acceptLocked(seg); err != nil {
			return 0, err
		}
	}
	return 0, nil
}

// rebaseLocked replaces the state with the newest snapshot when it is
// newer than the state; it reports whether it did. Call with amu.
func (t *Table) rebaseLocked(ctx context.Context) (bool, error) {
	snaps, err := t.st.listSeqs(ctx, snapshotPrefix)
	if err != nil || len(snaps) == 0 || snaps[len(snaps)-1] <= t.applied.durable {
		return false, err
	}
	seq := snaps[len(snaps)-1]
	sr, err := t.st.openSnapshot(ctx, seq)
	if err != nil {
		return false, fmt.Errorf("manifesttable: loading snapshot %d: %w", seq, err)
	}
	fresh := newIndex()
	err = loadSnapshot(&fresh, sr)
	sr.Close()
	if err != nil {
		return false, fmt.Errorf("manifesttable: loading snapshot %d: %w", seq, err)
	}
	fresh.seq = seq
	t.log.Warn("manifesttable: this process fell behind a compaction; it starts again from the newest snapshot",
		"catalog", t.cfg.Catalog, "was_at", t.applied.durable, "snapshot", seq)
	t.idx.Lock()
	t.idx.rows = fresh
	f := t.idx.rows.freeze()
	t.idx.Unlock()
	t.applied.durable, t.applied.snapshot, t.applied.sinceSnap = seq, seq, 0
	t.setDurable(seq)
	if t.eng != nil {
		t.applyQ <- &segment{First: seq, Last: seq, reset: f}
	}
	return true, nil
}

// acceptLocked makes a durable segment part of the table: it decides for
// each change whether its key existed before (against the index, which is
// exactly the state before this segment), updates the index, advances the
// durable sequence (releasing WaitDurable), and queues the segment for the
// SQL engine, if this process has one, which applies segments in order
// behind it. Call with amu.
func (t *Table) acceptLocked(seg *segment) error {
	if seg.First != t.applied.durable+1 {
		return nserror.New(nserror.Internal, "manifesttable: segment %d..%d does not follow %d", seg.First, seg.Last, t.applied.durable)
	}
	rows := make([]Row, 0, len(seg.Changes))
	for _, c := range seg.Changes {
		if !c.del {
			rows = append(rows, c.row)
		}
	}
	t.idx.Lock()
	if err := t.idx.rows.noteColumns(rows); err != nil {
		t.idx.Unlock()
		return nserror.New(nserror.Internal, "manifesttable: segment %d..%d: %v", seg.First, seg.Last, err)
	}
	seen := map[Key]bool{}
	for i := range seg.Changes {
		c := &seg.Changes[i]
		k := c.row.Key()
		if !seen[k] {
			seen[k] = true
			c.existed = t.idx.rows.existed(k)
		}
		t.idx.rows.apply(*c)
	}
	t.idx.rows.seq = seg.Last
	t.idx.Unlock()
	t.applied.durable = seg.Last
	t.applied.sinceSnap++
	t.feed.publish(seg.Events, seg.First, seg.Last)
	if seg.LostFirst != 0 {
		t.waiters.Lock()
		t.waiters.lost = append(t.waiters.lost, [2]uint64{seg.LostFirst, seg.LostLast})
		t.waiters.Unlock()
	}
	t.setDurable(seg.Last)
	if t.eng != nil {
		t.applyQ <- seg
		if len(t.applyQ) >= cap(t.applyQ)/2 {
			t.wakeApplier() // a backlog (a replica catching up): no pacing
		}
	}
	return nil
}

// applier applies accepted segments to the SQL engine, in order.
//
// A backlog (a replica catching up, a burst of commits) is applied as one
// transaction of many segments: their changes in order, each with its own
// sequence, so time travel stays exact. A change's "existed" flag matters
// only for the first change to its key, and the state before that change's
// own segment is, for that key, the state before the whole run.
//
// Segments that follow one another within EnginePace are applied together
// (pace): a busy catalog's segments reach the engine in a few
// transactions a second, unless a query waits to see one.
func (t *Table) applier() {
	defer t.done.Done()
	var held *segment // a reset the last merge stopped at
	var last time.Time
	for {
		seg := held
		held = nil
		if seg == nil {
			var ok bool
			if seg, ok = <-t.applyQ; !ok {
				return
			}
		}
		if seg.reset == nil {
			t.pace(last)
			seg, held = t.mergeBacklog(seg)
		}
		for backoff := 10 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
			var err error
			if seg.reset != nil {
				err = t.eng.reload(seg.reset)
			} else {
				err = t.eng.applySegment(seg)
			}
			if err == nil {
				if seg.reset != nil || dropsIn(seg) {
					t.RefreshDropped()
				}
				if f := t.cfg.engineApplied; f != nil && seg.reset == nil {
					f(seg.First, seg.Last)
				}
				break
			}
			t.log.Error("manifesttable: applying a durable segment to the SQL engine; retrying", "first", seg.First, "last", seg.Last, "err", err)
			time.Sleep(backoff)
		}
		last = time.Now()
	}
}

// pace holds the applier until EnginePace has passed since its last
// application (at last), unless a query waits to see a sequence the
// engine does not show yet, the queue is half full, or the table closes.
func (t *Table) pace(last time.Time) {
	d := t.cfg.EnginePace - time.Since(last)
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	for t.engineWant.Load() <= t.eng.db.Visible() && len(t.applyQ) < cap(t.applyQ)/2 {
		select {
		case <-timer.C:
			return
		case <-t.engineHurry:
		case <-t.stop:
			return
		}
	}
}

// waitEngine returns when sequence seq is visible to SQL queries, ending
// the applier's pace for it.
func (t *Table) waitEngine(ctx context.Context, seq uint64) error {
	if t.eng.db.Visible() < seq {
		raise(&t.engineWant, seq)
		t.wakeApplier()
	}
	return t.eng.db.WaitVisible(ctx, seq)
}

// raise makes a at least v.
func raise(a *atomic.Uint64, v uint64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

// wakeApplier ends the applier's pace now (it looks again at why it
// waits).
func (t *Table) wakeApplier() {
	select {
	case t.engineHurry <- struct{}{}:
	default:
	}
}

// maxMergedChanges bounds the changes applied to the SQL engine in one
// transaction.
const maxMergedChanges = 64 * 1024

// mergeBacklog joins to seg the segments already queued after it, up to
// maxMergedChanges changes; it stops at a reset, which it returns.
func (t *Table) mergeBacklog(seg *segment) (merged, reset *segment) {
	merged = seg
	for len(merged.Changes) < maxMergedChanges {
		select {
		case next, ok := <-t.applyQ:
			if !ok {
				return merged, nil
			}
			if next.reset != nil {
				return merged, next
			}
			if merged == seg {
				merged = &segment{First: seg.First, Last: seg.Last, Changes: append([]change(nil), seg.Changes...)}
			}
			merged.Last = next.Last
			merged.Changes = append(merged.Changes, next.Changes...)
		default:
			return merged, nil
		}
	}
	return merged, nil
}

func (t *Table) setDurable(seq uint64) {
	t.waiters.Lock()
	if seq > t.waiters.seq {
		t.waiters.seq = seq
	}
	t.waiters.Unlock()
	t.waiters.cond.Broadcast()
}

// loadSnapshot reads a snapshot's rows into the empty index x; its
// columns are kept even where every row is NULL. The caller owns x (it is
// not yet the table's, or the table's lock is held).
func loadSnapshot(x *index, sr *snapshotReader) error {
	for k, v := range sr.Extra {
		x.extra[k] = v
	}
	for k, v := range sr.Raw {
		x.raw[k] = v
	}
	for {
		rec, err := sr.Next()
		if err != nil || rec == nil {
			return err
		}
		changes, err := readRecord(rec, Columns{}, map[string]arrow.DataType{})
		if err != nil {
			return err
		}
		rows := make([]Row, len(changes))
		for i := range changes {
			rows[i] = changes[i].row
		}
		if err := x.noteColumns(rows); err != nil {
			return err
		}
		for _, c := range changes {
			c.del = false
			x.apply(c)
		}
	}
}

// Refresh applies every segment durable in storage that this process has
// not applied yet (another process materialized it).
func (t *Table) Refresh(ctx context.Context) error { return t.catchUp(ctx) }

// Sync is Refresh when the materializer has published a durable sequence
// beyond what this process has applied: afterwards the index holds every
// change acknowledged anywhere before the call.
func (t *Table) Sync(ctx context.Context) error {
	v, err := t.rs.DurableSeq(ctx)
	if err != nil {
		return err
	}
	t.applied.Lock()
	behind := v > t.applied.durable
	t.applied.Unlock()
	if !behind {
		return nil
	}
	return t.catchUp(ctx)
}

// Objects returns every current namespace and table row.
func (t *Table) Objects() []Row {
	t.idx.RLock()
	defer t.idx.RUnlock()
	out := make([]Row, 0, len(t.idx.rows.objects))
	for _, r := range t.idx.rows.objects {
		out = append(out, r)
	}
	sortRows(out)
	return out
}

// Index is a read-only view of the namespaces and tables at one catalog
// sequence, valid only inside the function given to View.
type Index struct{ t *Table }

// Seq is the catalog sequence the view stands at: it holds every change
// up to it and none after.
func (x Index) Seq() uint64 { return x.t.idx.rows.seq }

// Object returns the namespace or table row with that key.
func (x Index) Object(typ, id string) (*Row, bool) {
	r, ok := x.t.idx.rows.objects[Key{Type: typ, ID: id}]
	if !ok {
		return nil, false
	}
	return &r, true
}

// ChildIDs returns the ids of the namespaces and tables directly inside
// parent, unsorted. The slice must not be changed.
func (x Index) ChildIDs(parent string) []string {
	if kl := x.t.idx.rows.kids[parent]; kl != nil {
		return kl.ids
	}
	return nil
}

// Generation identifies the state of everything below the namespace id:
// it changes whenever a namespace or table at any depth under id is
// created, changed or removed (versions excepted), and a generation seen
// in one view equals one seen in a later view only when nothing below id
// changed in between. 0: id has never had children in this index.
func (x Index) Generation(id string) uint64 {
	if kl := x.t.idx.rows.kids[id]; kl != nil {
		return kl.gen
	}
	return 0
}

// Head returns a table's highest version row (0: none).
func (x Index) Head(tableID string) uint64 { return x.t.idx.rows.head(tableID) }

// View calls fn with the index held still: everything fn reads belongs to
// one catalog sequence, so it never sees part of a segment (and so never
// part of a transaction). fn must be quick and must not call back into t.
func (t *Table) View(fn func(Index)) {
	t.idx.RLock()
	defer t.idx.RUnlock()
	fn(Index{t: t})
}

// Object returns the current namespace or table row with that key.
func (t *Table) Object(typ, id string) (Row, bool) {
	t.idx.RLock()
	defer t.idx.RUnlock()
	r, ok := t.idx.rows.objects[Key{Type: typ, ID: id}]
	return r, ok
}

// Children returns the current namespaces and tables directly inside the
// namespace parent ("" is the root), sorted by id.
func (t *Table) Children(parent string) []Row {
	t.idx.RLock()
	defer t.idx.RUnlock()
	var out []Row
	for _, id := range (Index{t: t}).ChildIDs(parent) {
		for _, typ := range []string{TypeNamespace, TypeTable} {
			if r, ok := t.idx.rows.objects[Key{Type: typ, ID: id}]; ok {
				out = append(out, r)
			}
		}
	}
	sortRows(out)
	return out
}

// TableByLocation returns the id of the table whose directory is loc.
func (t *Table) TableByLocation(loc string) (string, bool) {
	t.idx.RLock()
	defer t.idx.RUnlock()
	id, ok := t.idx.rows.byLoc[loc]
	return id, ok
}

// HighestVersion returns the highest current version row of a table.
func (t *Table) HighestVersion(tableID string) uint64 {
	t.idx.RLock()
	defer t.idx.RUnlock()
	return t.idx.rows.head(tableID)
}

// VersionRows returns a table's current version rows on main, ascending,
// as this process's index holds them (every durable segment it has
// applied).
func (t *Table) VersionRows(tableID string) []Row {
	t.idx.RLock()
	defer t.idx.RUnlock()
	return t.idx.rows.versionRows(tableID)
}

// BranchVersionRows returns a table's current version rows on a branch
// ("" is main), ascending.
func (t *Table) BranchVersionRows(tableID, branch string) []Row {
	t.idx.RLock()
	defer t.idx.RUnlock()
	return t.idx.rows.versionRows(verKey(tableID, branch))
}

// Branches returns the Lance branches of a table that have version rows,
// sorted.
func (t *Table) Branches(tableID string) []string {
	t.idx.RLock()
	defer t.idx.RUnlock()
	return t.idx.rows.branches(tableID)
}

// allVersionRows returns a table's current version rows on every branch,
// main first.
func (t *Table) allVersionRows(tableID string) []Row {
	t.idx.RLock()
	defer t.idx.RUnlock()
	return t.idx.rows.allVersionRows(tableID)
}

// Visible returns the newest catalog sequence that queries see (without
// a SQL engine: the sequence the index stands at).
func (t *Table) Visible() uint64 {
	if t.eng == nil {
		t.idx.RLock()
		defer t.idx.RUnlock()
		return t.idx.rows.seq
	}
	return t.eng.db.Visible()
}

// WaitDurable returns when sequence seq is in a durable segment, and in
// this process's index (Object, Children, TableByLocation).
func (t *Table) WaitDurable(ctx context.Context, seq uint64) error {
	t.Flush(seq)
	stop := context.AfterFunc(ctx, func() {
		t.waiters.Lock()
		t.waiters.cond.Broadcast()
		t.waiters.Unlock()
	})
	defer stop()
	t.waiters.Lock()
	defer t.waiters.Unlock()
	for t.waiters.seq < seq {
		if err := ctx.Err(); err != nil {
			return nserror.New(nserror.ServiceUnavailable, "sequence %d is not durable yet (at %d): %w", seq, t.waiters.seq, err)
		}
		t.waiters.cond.Wait()
	}
	for _, r := range t.waiters.lost {
		if r[0] <= seq && seq <= r[1] {
			return nserror.New(nserror.ServiceUnavailable, "catalog sequence %d was lost with Redis's state before it was durable; the change did not happen, retry it", seq)
		}
	}
	return nil
}

// WaitVisible returns when sequence seq is visible to SQL queries here
// (read-your-writes for Query); without a SQL engine, when it is durable
// and in the index.
func (t *Table) WaitVisible(ctx context.Context, seq uint64) error {
	if t.eng == nil {
		return t.WaitDurable(ctx, seq)
	}
	if t.eng.db.Visible() < seq {
		t.Flush(seq)
	}
	return t.waitEngine(ctx, seq)
}

// Head returns the sequence of the newest change in the commit log (0
// when the log holds nothing): every change appended anywhere before the
// call, catalog mutation or table version, has a sequence at or below it.
func (t *Table) Head(ctx context.Context) (uint64, error) {
	return t.rs.LastLogSeq(ctx)
}

// WaitCaughtUp returns once every change appended to the commit log
// before the call is visible to SQL: a query after it sees every version
// and catalog change acknowledged anywhere before it.
func (t *Table) WaitCaughtUp(ctx context.Context) error {
	h, err := t.Head(ctx)
	if err != nil || h == 0 {
		return err
	}
	return t.WaitVisible(ctx, h)
}

// Flush ends the materializer's linger over sequences up to seq: if this
// process materializes, they are written now; if another does, this
// process's follower asks it to (within a few milliseconds).
func (t *Table) Flush(seq uint64) {
	raise(&t.flushTo, seq)
	select {
	case t.flushNow <- struct{}{}:
	default:
	}
}

// Query runs a read-only SQL statement over __manifest (and its views
// namespaces, tables, table_versions, and the macro manifest_at(seq) for
// time travel) at the newest visible sequence, which the result reports.
// It first waits until everything durable here when it was called is
// visible, so a query sees every change this process has acknowledged.
func (t *Table) Query(ctx context.Context, q string, args ...any) (*sqlengine.Result, error) {
	return t.QueryAfter(ctx, t.durableNow(), q, args...)
}

// QueryAfter is Query once catalog sequence after is visible: it waits for
// the segment holding it (hurrying this process's materializer, if it
// leads) and for the SQL engine to apply it. The text is refused unless it
// is exactly one statement that only reads (see gate.go); the result
// streams, and its time and memory are bounded by ctx and the engine's
// configuration.
func (t *Table) QueryAfter(ctx context.Context, after uint64, q string, args ...any) (*sqlengine.Result, error) {
	if t.eng == nil {
		return nil, errNoSQL
	}
	if after > 0 {
		if err := t.WaitDurable(ctx, after); err != nil {
			return nil, err
		}
		if err := t.waitEngine(ctx, after); err != nil {
			return nil, err
		}
	}
	return t.eng.db.Query(ctx, q, args...)
}

// QuerySchema returns the Arrow schema of a query's result and the Arrow
// types its parameters ($1, $2, … or ?) should be bound with, without
// running it over data; it refuses what Query refuses.
func (t *Table) QuerySchema(ctx context.Context, q string) (*arrow.Schema, []arrow.DataType, error) {
	if t.eng == nil {
		return nil, nil, errNoSQL
	}
	return t.eng.db.Schema(ctx, q)
}

// MaxQueries is the number of queries the SQL engine runs at once (0
// without one: sqlengine.Config.MaxQueries).
func (t *Table) MaxQueries() int {
	if t.eng == nil {
		return 0
	}
	return t.eng.db.MaxQueries()
}

// RunningQueries is the number of queries the SQL engine runs now.
func (t *Table) RunningQueries() int {
	if t.eng == nil {
		return 0
	}
	return t.eng.db.Running()
}

var errNoSQL = nserror.New(nserror.ServiceUnavailable, "this process has no SQL engine (its queries run in a SQL worker)")

// DurableApplied is the last sequence this process applied from a
// durable segment (its own or the materializing process's): while it does
// not move, nothing new becomes durable here.
func (t *Table) DurableApplied() uint64 { return t.durableNow() }

// durableNow is the last sequence applied from a durable segment.
func (t *Table) durableNow() uint64 {
	t.applied.Lock()
	defer t.applied.Unlock()
	return t.applied.durable
}

// Append appends changes to the commit log as one catalog sequence and
// returns it; the changes are durable once WaitDurable(seq) returns.
func (t *Table) Append(ctx context.Context, changes []Change) (uint64, error) {
	if len(changes) == 0 {
		return 0, nserror.New(nserror.InvalidInput, "no changes to append")
	}
	var pairs []string
	for _, c := range changes {
		if c.Delete {
			k := c.Row.Key()
			b, _ := json.Marshal(logKey(k))
			pairs = append(pairs, commitlog.Delete, string(b))
			continue
		}
		if err := c.Row.Validate(); err != nil {
			return 0, err
		}
		b, err := MarshalRow(c.Row)
		if err != nil {
			return 0, err
		}
		pairs = append(pairs, commitlog.Put, string(b))
	}
	return t.appendEntries(ctx, pairs)
}

// appendEntries appends log entries (kind, payload pairs) under one new
// catalog sequence and returns it.
func (t *Table) appendEntries(ctx context.Context, pairs []string) (uint64, error) {
	r, err := t.rs.Append(ctx, pairs)
	if err != nil {
		return 0, err
	}
	if r.Status != redisstate.OK {
		return 0, nserror.New(nserror.ServiceUnavailable, "Redis holds no state for catalog %s (recover first)", t.cfg.Catalog)
	}
	return r.Seq, nil
}

type logKey struct {
	Type    string `json:"object_type"`
	ID      string `json:"object_id"`
	Branch  string `json:"branch,omitempty"`
	Version uint64 `json:"table_version,omitempty"`
}

// DurableSeq is the last catalog sequence in a durable segment, read from
// storage.
func (t *Table) DurableSeq(ctx context.Context) (uint64, error) {
	firsts, err := t.st.listSeqs(ctx, logPrefix)
	if err != nil {
		return 0, err
	}
	snaps, err := t.st.listSeqs(ctx, snapshotPrefix)
	if err != nil {
		return 0, err
	}
	var last uint64
	if len(snaps) > 0 {
		last = snaps[len(snaps)-1]
	}
	if len(firsts) > 0 && firsts[len(firsts)-1] > last {
		seg, err := t.st.readSegment(ctx, firsts[len(firsts)-1])
		if err != nil {
			return 0, err
		}
		last = max(last, seg.Last)
	}
	return last, nil
}

// SeqGapAfterLoss is added to the durable sequence when Redis lost its
// state: sequences handed out by the lost Redis (and perhaps still written
// by a materializer that has not noticed) are never handed out again.
const SeqGapAfterLoss = 1 << 32

// SeqFloor is what Redis's catalog sequence must be raised to after it lost
// its state: a catalog's recovery raises it there (redisclaim.Recovery.RebuildClaims).
func (t *Table) SeqFloor(ctx context.Context) (uint64, error) {
	d, err := t.DurableSeq(ctx)
	if err != nil {
		return 0, err
	}
	return d + SeqGapAfterLoss, nil
}

func sortRows(rows []Row) {
	sortSlice(rows, func(a, b Row) bool { return a.Key().Less(b.Key()) })
}
