package namespace

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/redisclaim"
)

// The maintainer. One process of a catalog at a time (a lease in Redis)
// looks after the tables' lives in the background, a pass every
// Interval:
//
//   - it follows Lance's cleanup (prune.go) on every chain whose head
//     moved since its last pass (every chain on its first pass, and every
//     FullEvery passes), so that SQL and the console lose pruned versions
//     with no request;
//   - it cleans up every table with a retention policy (retention.go)
//     whose head moved since its last cleanup, at most once per
//     CleanupEvery per table (cleanup.go);
//   - it resolves the intents of changes made in storage that nobody
//     settled (a crash between the change and its event) once they are
//     IntentGrace old (intents.go), expires the lapsed compaction jobs
//     of tables that are gone and forgets what was settled of them
//     (compaction.go).
//
// A pass works one chain and one table at a time, and rests after each
// (Busy): its I/O is one listing per chain (a busy chain at most
// every FollowEvery) and what a cleanup reads and deletes, in batches. A
// commit never waits for it; it competes with it for storage requests
// only, a bounded share (bench: commit-maintainer-s3).

// MaintainConfig configures the maintainer.
type MaintainConfig struct {
	// Interval is the time between passes (default 1 minute).
	Interval time.Duration
	// FullEvery: every FullEvery passes, every chain is read, moved or not
	// (default 60: an hour at the default interval).
	FullEvery int
	// CleanupEvery is the least time between two cleanups of one table
	// (default 1 hour).
	CleanupEvery time.Duration
	// FollowEvery is the least time between two readings of one chain
	// whose head keeps moving (default 1 minute): a busy table is not
	// listed at every pass.
	FollowEvery time.Duration
	// Busy is the share of its time the maintainer spends cleaning up
	// (default 0.05): after each table it cleans up it rests (1-Busy)/Busy
	// times as long as that took, so that a cleanup's burst of reads and
	// deletions meets few commits (bench: commit-maintainer-s3). After
	// each chain it reads (one listing) it rests as long as that took. 1:
	// no rest.
	Busy float64
	// Observer receives what each pass did (metrics; may be nil).
	Observer func(MaintainReport)
}

// MaintainReport is what one pass did.
type MaintainReport struct {
	// Held is whether this process held the lease (a pass without it does
	// nothing).
	Held bool
	// Chains is how many chains were read against storage, Pruned how
	// many version records left because Lance pruned their manifests.
	Chains, Pruned int
	// Cleanups is how many tables were cleaned up, CleanedVersions how
	// many versions they pruned, Deleted and Bytes the objects deleted;
	// Failed counts the cleanups that failed (logged).
	Cleanups, CleanedVersions, Deleted, Failed int
	Bytes                                      int64
	// IntentsMade and IntentsNotMade count the intents of changes made in
	// storage that nobody settled, resolved by reading storage: made
	// (their events appended) or not (dropped).
	IntentsMade, IntentsNotMade int
	// JobsExpired counts the lapsed compaction jobs of tables that are
	// gone, expired (compaction.go's tidy).
	JobsExpired int
	Took        time.Duration
}

// maintainer is the state of this process's maintainer.
type maintainer struct {
	mu      sync.Mutex // held by a pass
	cfg     MaintainConfig
	token   string
	passes  int
	heads   map[string]uint64    // each chain's head at its last read
	read    map[string]time.Time // when each chain was last read
	taken   time.Time            // when the lease was last taken or renewed
	cleaned map[string]time.Time // each table's last cleanup (by location)
	cleanAt map[string]uint64    // the table's main head at that cleanup
}

// EnsureDefaults fills what is unset (zero).
func (c *MaintainConfig) EnsureDefaults() {
	if c.Interval == 0 {
		c.Interval = time.Minute
	}
	if c.FullEvery == 0 {
		c.FullEvery = 60
	}
	if c.CleanupEvery == 0 {
		c.CleanupEvery = time.Hour
	}
	if c.FollowEvery == 0 {
		c.FollowEvery = time.Minute
	}
	if c.Busy == 0 {
		c.Busy = 0.05
	}
}

// Validate refuses a maintainer that cannot run, naming the field: a
// negative interval or count (0 is unset: EnsureDefaults fills it), and
// a Busy that is no share of time (outside [0, 1], or NaN).
// Config.Validate calls it, as every configuration's Validate calls its
// parts'.
func (c *MaintainConfig) Validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Interval", c.Interval}, {"CleanupEvery", c.CleanupEvery}, {"FollowEvery", c.FollowEvery}} {
		if d.v < 0 {
			return fmt.Errorf("namespace: MaintainConfig.%s %v is negative (0: the default)", d.name, d.v)
		}
	}
	if c.FullEvery < 0 {
		return fmt.Errorf("namespace: MaintainConfig.FullEvery %d is negative (0: the default, 60)", c.FullEvery)
	}
	if !(c.Busy >= 0 && c.Busy <= 1) {
		return fmt.Errorf("namespace: MaintainConfig.Busy %v is not a share of time in [0, 1] (0: the default, 0.05)", c.Busy)
	}
	return nil
}

// newMaintainer is a maintainer's state, before its first pass.
func newMaintainer(cfg MaintainConfig) *maintainer {
	cfg.EnsureDefaults()
	return &maintainer{cfg: cfg, token: uuid.NewString(),
		heads: map[string]uint64{}, read: map[string]time.Time{}, cleaned: map[string]time.Time{}, cleanAt: map[string]uint64{}}
}

// keep renews the lease when a third of its time has passed since it was
// taken, and reports whether this process still holds it (a pass that
// lost it stops: another process's maintainer goes on).
func (s *Service) keepLease(ctx context.Context, m *maintainer) bool {
	if time.Since(m.taken) < m.cfg.Interval {
		return true
	}
	held, err := s.rs.TakeLeaseOf(ctx, s.k.MaintainLease(), m.token, 3*m.cfg.Interval)
	if err != nil || !held {
		return false
	}
	m.taken = time.Now()
	return true
}

// rest waits (1-busy)/busy times took, or until ctx ends.
func (m *maintainer) rest(ctx context.Context, took time.Duration, busy float64) {
	if busy >= 1 {
		return
	}
	t := time.NewTimer(time.Duration(float64(took) * (1 - busy) / busy))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// startMaintainer runs the maintainer until ctx ends; done is closed when
// it has stopped.
func (s *Service) startMaintainer(ctx context.Context) (done chan struct{}) {
	done = make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(s.maint.cfg.Interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := s.MaintainPass(ctx); err != nil && ctx.Err() == nil {
					s.log.Warn("maintainer: pass failed", "err", err)
				}
			}
		}
	}()
	return done
}

// MaintainPass runs one pass of the maintainer now, if this process holds
// (or takes) its lease. The maintainer calls it every Interval; tests
// and operators may call it too.
func (s *Service) MaintainPass(ctx context.Context) (MaintainReport, error) {
	m := s.maint
	m.mu.Lock()
	defer m.mu.Unlock()
	start := time.Now()
	var rep MaintainReport
	held, err := s.rs.TakeLeaseOf(ctx, s.k.MaintainLease(), m.token, 3*m.cfg.Interval)
	if err != nil || !held {
		return rep, err
	}
	m.taken = time.Now()
	rep.Held = true
	defer func() {
		rep.Took = time.Since(start)
		if m.cfg.Observer != nil {
			m.cfg.Observer(rep)
		}
	}()
	full := m.passes%m.cfg.FullEvery == 0
	m.passes++
	heads, err := s.claims.Heads(ctx)
	if err != nil {
		return rep, err
	}
	isTable := func(loc string) bool { _, ok := s.table.TableByLocation(loc); return ok }
	for chain, head := range heads {
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		if !s.keepLease(ctx, m) {
			return rep, nil
		}
		if last, seen := m.heads[chain]; seen && !full && (last == head || time.Since(m.read[chain]) < m.cfg.FollowEvery) {
			continue
		}
		c := lancemanifest.ParseChain(chain, isTable)
		table, branch := string(c.Table), c.Branch
		if !isTable(table) {
			continue // a chain of no table (dropped meanwhile)
		}
		t0 := time.Now()
		p, err := s.claims.FollowPrunes(ctx, table, branch)
		m.rest(ctx, time.Since(t0), max(m.cfg.Busy, 0.5))
		if err != nil {
			s.log.Warn("maintainer: following Lance's cleanup", "chain", chain, "err", err)
			continue
		}
		m.heads[chain], m.read[chain] = head, t0
		rep.Chains++
		rep.Pruned += len(p.Pruned)
	}
	s.cleanupDue(ctx, heads, &rep)
	grace := s.cfg.IntentGrace
	if grace <= 0 {
		grace = DefaultIntentGrace
	}
	if rep.IntentsMade, rep.IntentsNotMade, err = s.ResolveIntents(ctx, grace); err != nil {
		s.log.Warn("maintainer: resolving the intents of changes made in storage", "err", err)
	}
	if rep.JobsExpired, err = s.Compaction().tidy(ctx); err != nil {
		s.log.Warn("maintainer: tidying the compaction jobs", "err", err)
	}
	return rep, nil
}

// cleanupDue cleans up the tables with a retention policy whose main head
// moved since their last cleanup, at most once per CleanupEvery each.
func (s *Service) cleanupDue(ctx context.Context, heads map[string]uint64, rep *MaintainReport) {
	m := s.maint
	for _, r := range s.table.Objects() {
		if ctx.Err() != nil || !s.keepLease(ctx, m) {
			return
		}
		if r.ObjectType != manifesttable.TypeTable || r.Location == "" {
			continue
		}
		head := heads[r.Location]
		if last, ok := m.cleaned[r.Location]; ok && (time.Since(last) < m.cfg.CleanupEvery || m.cleanAt[r.Location] == head) {
			continue
		}
		id, err := api.ParseID(r.ObjectID, "")
		if err != nil {
			continue
		}
		pol, ok, err := s.Versions().RetentionOf(ctx, id)
		if err != nil || !ok {
			continue
		}
		if s.nothingToPrune(ctx, r.Location, heads, pol) {
			m.cleaned[r.Location], m.cleanAt[r.Location] = time.Now(), head
			continue
		}
		t0 := time.Now()
		res, err := s.CleanupTable(ctx, api.CleanupTableRequest{ID: id})
		m.cleaned[r.Location], m.cleanAt[r.Location] = time.Now(), head
		m.rest(ctx, time.Since(t0), m.cfg.Busy)
		if err != nil {
			rep.Failed++
			s.log.Warn("maintainer: cleanup", "table", r.ObjectID, "err", err)
			continue
		}
		rep.Cleanups++
		for _, vs := range res.Pruned {
			rep.CleanedVersions += len(vs)
		}
		rep.Deleted += res.FilesDeleted
		rep.Bytes += res.BytesDeleted
	}
}

// nothingToPrune reports, from Redis alone, that a cleanup of the table at
// loc under pol would prune nothing: it has no branch, and main holds at
// most RetainVersions versions or its oldest is younger than the cutoff.
// When in doubt it says no, and the cleanup plans.
func (s *Service) nothingToPrune(ctx context.Context, loc string, heads map[string]uint64, pol Retention) bool {
	for chain := range heads {
		if strings.HasPrefix(chain, loc+"/tree/") {
			return false
		}
	}
	oldest, _, err := s.claims.ListVersions(ctx, loc, redisclaim.ListOptions{Limit: 1})
	if err != nil || len(oldest) == 0 {
		return err == nil // no versions: nothing to prune
	}
	o := oldest[0]
	if heads[loc] >= o.Version && heads[loc]-o.Version < uint64(pol.RetainVersions) {
		return true
	}
	return !o.CommittedAt.IsZero() && o.CommittedAt.After(s.now().Add(-pol.OlderThan))
}
