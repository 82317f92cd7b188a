package namespace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/commitlog"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/redisclaim"
)

// Compaction handed to engines. flightns decides which tables need a
// compaction and leases each as a job to one worker at a time; the
// worker (a Lance engine) rewrites the table's data through the catalog,
// as any writer does, and reports back.
//
// Policy: a table is due when the latest version of its main branch has
// more than max_fragments fragments smaller than Lance's compaction
// target (compactTargetRows: larger ones a compaction leaves alone, and
// counting them would hand out jobs Lance declines), or more than a
// tenth of its rows deleted (the maintenance signals' rule,
// manifesttable.CompactDeletedRatio: a compaction materializes them),
// both read from the manifest as GetTableStats reads it. max_fragments is
// the table's property flightns.compaction.max_fragments, else the
// nearest namespace's above it, else DefaultCompactionMaxFragments; 0
// turns compaction off. A claim finds the due tables itself, cheaply: it
// reads the manifest of a table only when its head moved since this
// process last looked (compactChecks).
// Jobs need version heads in Redis: an unmanaged catalog has none due.
//
// Leases live in Redis, in one hash of the catalog (Keys.CompactionJobs):
// field the table's location (a table keeps it across renames), value
// the job as JSON. A table has at most that one job. Every change of a
// job is one claim script (redisclaim.Store.Commit with Extras): a guard
// on the job's value as it was read (absent for a new job: optimistic
// concurrency, a loser moves on), the write, and the job's events for
// the change feed, so that an event exists if and only if its change
// happened; the call returns once the events are durable. A job's life
// on the feed is compaction.claimed, compaction.renewed at each
// heartbeat, then one of completed, failed or expired. A lapsed lease
// stays the worker's (a heartbeat renews it, a completion counts) until
// a claim hands the table out again: then the old job expires and the
// new one is claimed, attempt+1, in one script. A job that ends
// (completed or failed) records the version it settled the table at
// (Keys.CompactionSettled: the head it was claimed at): the table is not
// due again at that version, so that a compaction Lance declines, or one
// that keeps failing, is not handed out in a loop, while versions
// written since (the compaction's own among them) are judged on their
// own fragments.
//
// Access: a claim hands out only jobs of tables the caller may write
// (with the namespace filter narrowing, never widening, that); a
// heartbeat, completion or failure needs write on the job's table and the
// worker's name; the list shows the jobs of the tables the caller may
// read.

// PropCompactionMaxFragments is the table (or namespace) property that
// bounds a table's fragments before a compaction is due; 0 turns it off.
const PropCompactionMaxFragments = "flightns.compaction.max_fragments"

// DefaultCompactionMaxFragments is the bound where no property sets one.
const DefaultCompactionMaxFragments = 16

// compactTargetRows is Lance's compaction target
// (CompactionOptions.target_rows_per_fragment): a fragment with fewer
// physical rows is one a compaction may rewrite.
const compactTargetRows = 1 << 20

// Lease bounds: the default lease of a claim, the longest, and the
// longest reason kept of a failure.
const (
	DefaultCompactionLease = 60 * time.Second
	MaxCompactionLease     = time.Hour
	maxFailReason          = 4096
	maxWorkerName          = 256
)

// compactChecks remembers, per table location, what this process last
// read of the table's latest manifest: the head it read, its fragments
// and its rows, so that a claim reads a manifest only when its head
// moved.
type compactChecks struct {
	mu   sync.Mutex
	seen map[string]compactCheck
}

// compactCheck is what a table's latest manifest says of its upkeep.
type compactCheck struct {
	head          uint64
	fragments     int    // under compactTargetRows
	rows, deleted uint64 // rows (deletions excluded), rows deleted
}

func (c *compactChecks) get(loc string, head uint64) (compactCheck, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.seen[loc]
	return ch, ok && ch.head == head
}

func (c *compactChecks) put(loc string, ch compactCheck) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]compactCheck{}
	}
	c.seen[loc] = ch
}

// Compaction is the part of the service that hands out compaction jobs.
type Compaction struct{ s *Service }

// Compaction is the service's compaction jobs.
func (s *Service) Compaction() Compaction { return Compaction{s} }

// errJobChanged is a guard's failure: the job changed since it was read.
var errJobChanged = errors.New("namespace: the compaction job changed meanwhile")

// storedJob is a job as Redis holds it: the value read (for the guard)
// and the job.
type storedJob struct {
	raw string
	job api.CompactionJob
}

// jobs reads the jobs in progress, by location. A job names its table
// by the id the table has now, found from its location (a rename keeps
// the location): who may act on the job, who sees it and what its events
// name follow the table, never the name it had when the job was claimed.
// A job of a table that is gone keeps the id it was claimed under.
func (c Compaction) jobs(ctx context.Context) (map[string]storedJob, error) {
	all, err := c.s.rs.Hash(ctx, c.s.k.CompactionJobs())
	if err != nil {
		return nil, nserror.New(nserror.ServiceUnavailable, "reading the compaction jobs: %w", err)
	}
	out := make(map[string]storedJob, len(all))
	for loc, raw := range all {
		var j api.CompactionJob
		if json.Unmarshal([]byte(raw), &j) != nil || j.Location != loc {
			continue // not a job as this code writes them: left alone
		}
		j.ID = c.s.tableIDAt(loc, j.ID)
		out[loc] = storedJob{raw: raw, job: j}
	}
	return out, nil
}

// tableIDAt is the id of the table whose directory is loc now (a rename
// keeps the directory), or was when no table holds it.
func (s *Service) tableIDAt(loc string, was api.ID) api.ID {
	if id, ok := s.table.TableByLocation(loc); ok {
		if now, err := api.ParseID(id, ""); err == nil {
			return now
		}
	}
	return was
}

// settled reads each table's head when its last job ended.
func (c Compaction) settled(ctx context.Context) (map[string]string, error) {
	all, err := c.s.rs.Hash(ctx, c.s.k.CompactionSettled())
	if err != nil {
		return nil, nserror.New(nserror.ServiceUnavailable, "reading the compaction jobs: %w", err)
	}
	return all, nil
}

// jobChange is one change of the jobs: guards, writes and events, made
// by the caller of ctx now.
type jobChange struct {
	guards    []redisstate.Guard
	writes    []redisstate.Write
	log       []redisstate.LogEntry
	principal string
	at        time.Time
}

func (c Compaction) newChange(ctx context.Context) *jobChange {
	ch := &jobChange{at: c.s.now().UTC()}
	if p, ok := auth.PrincipalFrom(ctx); ok {
		ch.principal = p.Name
	}
	return ch
}

// event records the event of type typ of job j.
func (ch *jobChange) event(typ string, j api.CompactionJob, reason string, version uint64) {
	props := api.Properties{
		api.CompactionJobIDProperty:   j.JobID,
		api.CompactionWorkerProperty:  j.Worker,
		api.CompactionAttemptProperty: strconv.Itoa(j.Attempt),
	}
	if reason != "" {
		props[api.CompactionReasonProperty] = reason
	}
	ev := api.Event{Type: typ, ID: j.ID, Location: j.Location, Version: version, Properties: props,
		Principal: ch.principal, Time: ch.at}
	b, err := json.Marshal(ev)
	if err != nil {
		return // an Event always marshals
	}
	ch.log = append(ch.log, redisstate.LogEntry{commitlog.KindField, commitlog.Event, "e", string(b)})
}

// apply commits ch in one claim script and waits until its events are
// durable; errJobChanged when a guard failed.
func (c Compaction) apply(ctx context.Context, ch *jobChange) error {
	batch, err := c.s.claims.Commit(ctx, nil, &redisclaim.Extras{Guards: ch.guards, Writes: ch.writes, Log: ch.log})
	var ge *redisclaim.GuardError
	if errors.As(err, &ge) {
		return errJobChanged
	}
	if err != nil {
		return err
	}
	return c.s.durable(ctx, batch.Seq)
}

// Claim hands out the next compaction job due among the tables the
// caller may write (inside req.Namespace when set), in table id order: a
// table due with no job, or whose job's lease lapsed (handed out again,
// attempt+1, the old job expiring in the same change). A lapsed job
// whose table is no longer due, or gone, expires. No job due: an empty
// answer.
func (c Compaction) Claim(ctx context.Context, req api.ClaimCompactionRequest) (*api.ClaimCompactionResponse, error) {
	s := c.s
	if err := checkWorker(req.Worker); err != nil {
		return nil, err
	}
	lease, err := leaseOf(req.LeaseSeconds, DefaultCompactionLease)
	if err != nil {
		return nil, err
	}
	if err := c.checkFilter(ctx, req.Namespace, auth.Write); err != nil {
		return nil, err
	}
	if err := authorizedOnly(ctx); err != nil {
		return nil, err
	}
	may, err := c.mayOn(ctx, auth.Write)
	if err != nil {
		return nil, err
	}
	jobs, err := c.jobs(ctx)
	if err != nil {
		return nil, err
	}
	settled, err := c.settled(ctx)
	if err != nil {
		return nil, err
	}
	heads, err := s.claims.Heads(ctx)
	if err != nil {
		return nil, err
	}
	now := s.now().UTC()
	for _, t := range c.tables(req.Namespace, may) {
		old, held := jobs[t.loc]
		if held && now.Before(old.job.LeaseExpires) {
			continue // leased
		}
		head := heads[t.loc]
		due, reason, frags, err := c.due(ctx, t, head, settled[t.loc])
		if err != nil {
			s.log.Warn("compaction: reading a table's fragments", "table", t.id.String(), "err", err)
			continue
		}
		if !due {
			if held { // lapsed, and the table needs no compaction now
				if err := c.expire(ctx, old); err != nil && !errors.Is(err, errJobChanged) {
					return nil, err
				}
			}
			continue
		}
		job := api.CompactionJob{JobID: uuid.Must(uuid.NewV7()).String(), ID: t.id, Location: t.loc, Reason: reason,
			Version: head, Fragments: frags, Worker: req.Worker, Attempt: 1, ClaimedAt: now,
			LeaseSeconds: int(lease / time.Second), LeaseExpires: now.Add(lease)}
		if p, ok := auth.PrincipalFrom(ctx); ok {
			job.Principal = p.Name
		}
		ch := c.newChange(ctx)
		if held {
			job.Attempt = old.job.Attempt + 1
			ch.guards = append(ch.guards, redisstate.GuardEq(s.k.CompactionJobs(), t.loc, old.raw))
			ch.event(api.EventCompactionExpired, old.job, "its lease lapsed at "+old.job.LeaseExpires.Format(time.RFC3339Nano), 0)
		} else {
			ch.guards = append(ch.guards, redisstate.GuardAbsent(s.k.CompactionJobs(), t.loc))
		}
		b, err := json.Marshal(job)
		if err != nil {
			return nil, err
		}
		ch.writes = append(ch.writes, redisstate.HSet(s.k.CompactionJobs(), t.loc, string(b)))
		ch.event(api.EventCompactionClaimed, job, reason, head)
		switch err := c.apply(ctx, ch); {
		case errors.Is(err, errJobChanged):
			continue // another claim took it first
		case err != nil:
			return nil, err
		}
		return &api.ClaimCompactionResponse{Job: &job}, nil
	}
	// Lapsed jobs of tables that are gone (dropped, deregistered) end.
	for loc, old := range jobs {
		if _, table := s.table.TableByLocation(loc); table || now.Before(old.job.LeaseExpires) ||
			len(req.Namespace) > 0 && !auth.Within(old.job.ID, req.Namespace) || !may(old.job.ID) {
			continue
		}
		if err := c.expire(ctx, old); err != nil && !errors.Is(err, errJobChanged) {
			return nil, err
		}
	}
	return &api.ClaimCompactionResponse{}, nil
}

// expire ends a lapsed job whose table needs no compaction now (or is
// gone).
func (c Compaction) expire(ctx context.Context, old storedJob) error {
	ch := c.newChange(ctx)
	ch.guards = append(ch.guards, redisstate.GuardEq(c.s.k.CompactionJobs(), old.job.Location, old.raw))
	ch.writes = append(ch.writes, redisstate.HDel(c.s.k.CompactionJobs(), old.job.Location))
	ch.event(api.EventCompactionExpired, old.job, "its lease lapsed at "+old.job.LeaseExpires.Format(time.RFC3339Nano)+" and the table needs no compaction now", 0)
	return c.apply(ctx, ch)
}

// compactTable is a table a claim looks at.
type compactTable struct {
	id    api.ID
	loc   string
	props api.Properties
}

// tables are the tables the caller may act on (may), inside ns when set,
// in id order.
func (c Compaction) tables(ns api.ID, may func(api.ID) bool) []compactTable {
	var out []compactTable
	for _, r := range c.s.table.Objects() {
		if r.ObjectType != manifesttable.TypeTable || r.Location == "" {
			continue
		}
		id, err := api.ParseID(r.ObjectID, "")
		if err != nil || len(ns) > 0 && !auth.Within(id, ns) || !may(id) {
			continue
		}
		out = append(out, compactTable{id: id, loc: r.Location, props: propsOf(r)})
	}
	slices.SortFunc(out, func(a, b compactTable) int { return strings.Compare(a.id.String(), b.id.String()) })
	return out
}

// due reports whether table t, whose main head is head, needs a
// compaction: why, and its fragments. settledAt is the version its last
// job ended at ("" for none): a table is not due again at that version.
func (c Compaction) due(ctx context.Context, t compactTable, head uint64, settledAt string) (bool, string, int, error) {
	if head == 0 || settledAt == strconv.FormatUint(head, 10) {
		return false, "", 0, nil
	}
	bound := c.maxFragments(t)
	if bound == 0 {
		return false, "", 0, nil
	}
	ch, ok := c.s.compact.get(t.loc, head)
	if !ok {
		m, err := c.s.manifestAt(ctx, t.id, t.loc, "", int64(head))
		if err != nil {
			return false, "", 0, err
		}
		ch = compactCheck{head: head, rows: m.Rows(), deleted: m.DeletedRows()}
		for _, f := range m.Fragments {
			if f.PhysicalRows < compactTargetRows {
				ch.fragments++
			}
		}
		c.s.compact.put(t.loc, ch)
	}
	switch {
	case ch.fragments > bound:
		return true, fmt.Sprintf("version %d has %d fragments under the compaction target, more than %d", head, ch.fragments, bound), ch.fragments, nil
	case float64(ch.deleted) > manifesttable.CompactDeletedRatio*(float64(ch.rows)+float64(ch.deleted)):
		return true, fmt.Sprintf("version %d has %d of its %d rows deleted, more than %g%%", head, ch.deleted, ch.rows+ch.deleted,
			100*manifesttable.CompactDeletedRatio), ch.fragments, nil
	}
	return false, "", ch.fragments, nil
}

// maxFragments is the bound of table t: its property, else the nearest
// namespace's, else the default. A value that is not a whole number from
// 0 up counts as unset.
func (c Compaction) maxFragments(t compactTable) int {
	if n, ok := parseMaxFragments(t.props); ok {
		return n
	}
	for ns := t.id.Parent(); !ns.IsRoot(); ns = ns.Parent() {
		if r, ok := c.s.table.Object(manifesttable.TypeNamespace, ns.String()); ok {
			if n, ok := parseMaxFragments(propsOf(r)); ok {
				return n
			}
		}
	}
	return DefaultCompactionMaxFragments
}

func parseMaxFragments(p api.Properties) (int, bool) {
	v, ok := p[PropCompactionMaxFragments]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 || n > maxCompactionMaxFragments {
		return 0, false // set before it was checked: as unset
	}
	return n, true
}

// maxCompactionMaxFragments bounds PropCompactionMaxFragments.
const maxCompactionMaxFragments = 1_000_000

// propCompactionPrefix begins flightns's compaction properties.
const propCompactionPrefix = "flightns.compaction."

// checkCompactionProps refuses compaction properties flightns does not
// know or whose values it cannot read, as they are set.
func checkCompactionProps(p api.Properties) error {
	for k := range p {
		if !strings.HasPrefix(k, propCompactionPrefix) {
			continue
		}
		if k != PropCompactionMaxFragments {
			return nserror.New(nserror.InvalidInput, "property %q: flightns's compaction property is %s", k, PropCompactionMaxFragments)
		}
		if _, ok := parseMaxFragments(p); !ok {
			return nserror.New(nserror.InvalidInput, "property %s: %q is not a whole number from 0 (no compaction) to %d",
				PropCompactionMaxFragments, p[k], maxCompactionMaxFragments)
		}
	}
	return nil
}

// checkFilter checks a namespace filter (none: nil): a valid id, on which
// the caller holds role need or which leads to a grant of its (the
// filter then narrows to what that gives); a namespace the caller may
// read but not act on is PermissionDenied, one it may not read is
// missing to it.
func (c Compaction) checkFilter(ctx context.Context, ns api.ID, need auth.Role) error {
	if len(ns) == 0 {
		return nil
	}
	if err := ns.Validate("namespace"); err != nil {
		return err
	}
	p, ok := auth.PrincipalFrom(ctx)
	if !ok || p.Role >= need {
		return nil
	}
	gs, err := c.s.Access().Grants(ctx)
	if err != nil {
		return err
	}
	switch r := gs.RoleOn(p, ns); {
	case r >= need || gs.Leads(p, ns):
		return nil
	case r >= auth.Read:
		return denied(p, need, r, ns)
	}
	return missing(false, ns)
}

// mayOn is whether the caller of ctx holds role need on an object.
func (c Compaction) mayOn(ctx context.Context, need auth.Role) (func(api.ID) bool, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok || p.Role >= need {
		return func(api.ID) bool { return true }, nil
	}
	gs, err := c.s.Access().Grants(ctx)
	if err != nil {
		return nil, err
	}
	return func(id api.ID) bool { return gs.RoleOn(p, id) >= need }, nil
}

// held finds job jobID, held by worker, whose table the caller may write
// and which it claimed (or it administers the catalog).
func (c Compaction) held(ctx context.Context, jobID, worker string) (storedJob, error) {
	if jobID == "" {
		return storedJob{}, nserror.New(nserror.InvalidInput, "job_id is required")
	}
	if err := checkWorker(worker); err != nil {
		return storedJob{}, err
	}
	jobs, err := c.jobs(ctx)
	if err != nil {
		return storedJob{}, err
	}
	for _, j := range jobs {
		if j.job.JobID != jobID {
			continue
		}
		p, ok := auth.PrincipalFrom(ctx)
		if ok {
			if err := c.s.authorize(ctx, p, auth.Write, target{id: j.job.ID, table: true}); err != nil {
				return storedJob{}, err
			}
		}
		if j.job.Worker != worker {
			return storedJob{}, nserror.New(nserror.PermissionDenied, "compaction job %s is held by another worker, not %q", jobID, worker)
		}
		if ok && j.job.Principal != "" && p.Name != j.job.Principal && p.Role < auth.Admin {
			// The worker's name is shown to every reader of the table: it
			// is no credential. The claim's principal is.
			return storedJob{}, nserror.New(nserror.PermissionDenied, "compaction job %s was claimed by another principal", jobID)
		}
		return j, authorizedOnly(ctx)
	}
	return storedJob{}, lostJob(jobID)
}

func lostJob(jobID string) error {
	return nserror.New(nserror.ConcurrentModification, "compaction job %s is not in progress: it ended, or its lease lapsed and it was handed out again", jobID)
}

// Heartbeat renews the lease of a job the worker holds (lapsed or not,
// as long as no claim handed the table out again).
func (c Compaction) Heartbeat(ctx context.Context, req api.HeartbeatCompactionRequest) (*api.HeartbeatCompactionResponse, error) {
	var renewed api.CompactionJob
	err := c.onHeld(ctx, req.JobID, req.Worker, func(j storedJob, ch *jobChange) error {
		lease, err := leaseOf(req.LeaseSeconds, time.Duration(j.job.LeaseSeconds)*time.Second)
		if err != nil {
			return err
		}
		renewed = j.job
		renewed.LeaseSeconds, renewed.LeaseExpires = int(lease/time.Second), ch.at.Add(lease)
		b, err := json.Marshal(renewed)
		if err != nil {
			return err
		}
		ch.writes = append(ch.writes, redisstate.HSet(c.s.k.CompactionJobs(), j.job.Location, string(b)))
		ch.event(api.EventCompactionRenewed, renewed, "", 0)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &api.HeartbeatCompactionResponse{LeaseExpires: renewed.LeaseExpires}, nil
}

// Complete ends a job the worker holds as done.
func (c Compaction) Complete(ctx context.Context, req api.CompleteCompactionRequest) (*api.CompactionJob, error) {
	var version uint64
	if req.Version != nil {
		version = *req.Version
	}
	return c.end(ctx, req.JobID, req.Worker, api.EventCompactionCompleted, "", version)
}

// Fail ends a job the worker holds as failed: the table is not due again
// at the version the job was claimed at.
func (c Compaction) Fail(ctx context.Context, req api.FailCompactionRequest) (*api.CompactionJob, error) {
	reason := strings.ToValidUTF8(req.Reason, "\uFFFD")
	if len(reason) > maxFailReason {
		reason = strings.ToValidUTF8(reason[:maxFailReason], "")
	}
	if reason == "" {
		reason = "the worker gave no reason"
	}
	return c.end(ctx, req.JobID, req.Worker, api.EventCompactionFailed, reason, 0)
}

// end removes the job with its event typ, and records the version the
// job settled the table at: the head it was claimed at. Not the head
// now, nor the version the compaction made: Lance rebases a compaction
// over the appends committed while it ran, whose fragments stay, and
// those make the table due again.
func (c Compaction) end(ctx context.Context, jobID, worker, typ, reason string, version uint64) (*api.CompactionJob, error) {
	var ended api.CompactionJob
	err := c.onHeld(ctx, jobID, worker, func(j storedJob, ch *jobChange) error {
		ended = j.job
		ch.writes = append(ch.writes,
			redisstate.HDel(c.s.k.CompactionJobs(), j.job.Location),
			redisstate.HSet(c.s.k.CompactionSettled(), j.job.Location, strconv.FormatUint(j.job.Version, 10)))
		ch.event(typ, j.job, reason, version)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &ended, nil
}

// onHeld applies the change build adds to of job jobID, which worker
// must hold, guarded on the job as read. When the job changed meanwhile
// and is still the worker's (its own heartbeat crossed the request), it
// is read and the change built again, a few times; a job that is no
// longer the worker's is ConcurrentModification.
func (c Compaction) onHeld(ctx context.Context, jobID, worker string, build func(j storedJob, ch *jobChange) error) error {
	for range 5 {
		j, err := c.held(ctx, jobID, worker)
		if err != nil {
			return err
		}
		ch := c.newChange(ctx)
		ch.guards = append(ch.guards, redisstate.GuardEq(c.s.k.CompactionJobs(), j.job.Location, j.raw))
		if err := build(j, ch); err != nil {
			return err
		}
		if err := c.apply(ctx, ch); !errors.Is(err, errJobChanged) {
			return err
		}
	}
	return lostJob(jobID)
}

// List lists the jobs in progress of the tables the caller may read,
// inside req.Namespace when set, by table id.
func (c Compaction) List(ctx context.Context, req api.ListCompactionsRequest) (*api.ListCompactionsResponse, error) {
	if err := c.checkFilter(ctx, req.Namespace, auth.Read); err != nil {
		return nil, err
	}
	if err := authorizedOnly(ctx); err != nil {
		return nil, err
	}
	may, err := c.mayOn(ctx, auth.Read)
	if err != nil {
		return nil, err
	}
	jobs, err := c.jobs(ctx)
	if err != nil {
		return nil, err
	}
	out := &api.ListCompactionsResponse{Jobs: []api.CompactionJob{}}
	for _, j := range jobs {
		if len(req.Namespace) > 0 && !auth.Within(j.job.ID, req.Namespace) || !may(j.job.ID) {
			continue
		}
		out.Jobs = append(out.Jobs, j.job)
	}
	slices.SortFunc(out.Jobs, func(a, b api.CompactionJob) int { return strings.Compare(a.ID.String(), b.ID.String()) })
	return out, nil
}

// checkWorker refuses a worker name that is empty, too long, not UTF-8
// or holds control characters.
func checkWorker(w string) error {
	if w == "" || len(w) > maxWorkerName || !utf8.ValidString(w) || strings.IndexFunc(w, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return nserror.New(nserror.InvalidInput, "worker must be 1 to %d bytes of UTF-8 without control characters", maxWorkerName)
	}
	return nil
}

// leaseOf is the lease asked for (seconds), or def.
func leaseOf(seconds *int, def time.Duration) (time.Duration, error) {
	if seconds == nil {
		return def, nil
	}
	if *seconds < 1 || *seconds > int(MaxCompactionLease/time.Second) { // compared in seconds: no product to overflow
		return 0, nserror.New(nserror.InvalidInput, "lease_seconds %d is not from 1 to %d", *seconds, int(MaxCompactionLease/time.Second))
	}
	return time.Duration(*seconds) * time.Second, nil
}

// tidy is the maintainer's part of the jobs: a lapsed job of a table that
// is gone (dropped, deregistered) expires, with its event, though no
// claim comes to hand the table out again; and what the settled versions
// keep of gone tables is forgotten. It returns how many jobs expired.
func (c Compaction) tidy(ctx context.Context) (int, error) {
	jobs, err := c.jobs(ctx)
	if err != nil {
		return 0, err
	}
	gone := func(loc string) bool { _, table := c.s.table.TableByLocation(loc); return !table }
	expired, now := 0, c.s.now()
	for loc, old := range jobs {
		if !gone(loc) || now.Before(old.job.LeaseExpires) {
			continue
		}
		switch err := c.expire(ctx, old); {
		case err == nil:
			expired++
		case !errors.Is(err, errJobChanged):
			return expired, err
		}
	}
	settled, err := c.settled(ctx)
	if err != nil {
		return expired, err
	}
	var forget []string
	for loc := range settled {
		if gone(loc) {
			forget = append(forget, loc)
		}
	}
	return expired, c.s.rs.ForgetSettled(ctx, forget)
}
