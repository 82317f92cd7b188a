package namespace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/commitlog"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
	"github.com/flightns/flightns/redisclaim"
)

// Config configures a Service.
type Config struct {
	// Objects is the catalog root.
	Objects *objstore.Store
	// Redis is a standalone, Sentinel or Cluster client (a go-redis
	// UniversalClient).
	Redis redisstate.Client
	// Catalog names the catalog (its Redis keys share the hash tag {Catalog}).
	Catalog string
	// State is the catalog's Redis state when the caller shares it with
	// other parts of a server (its sessions and idempotency records): one
	// pipeliner and one replica waiter for the catalog; its owner closes
	// it. Nil: Open builds it (confirming on Claims.ReplicaAcks) and
	// Close closes it.
	State *redisstate.Catalog
	// Claims configures the claim store (its fault-injection Step, its
	// Observer, PromoteWindow, ReplicaAcks and ReplicaTimeout: they also
	// govern the catalog's own Redis writes). Its Redis, Objects,
	// Catalog, State, LogMaxLen, Logger and Now are the catalog's: Open
	// sets them.
	Claims redisclaim.Config
	// Table configures __manifest (its SQL Engine, NoSQL, CompactAfter,
	// Observer, …). Its Objects, Redis, Catalog, State, LogMaxLen, Logger
	// and Now are the catalog's: Open sets them.
	Table manifesttable.Config
	// StallTimeout is how long __manifest may fail to make progress before
	// a catalog mutation waiting for it fails with ServiceUnavailable
	// (default 5s; see manifesttable.Table.Stalled).
	StallTimeout time.Duration
	// DurableTimeout bounds the wait of a catalog mutation for its segment
	// (default 30s); past it the outcome is unknown (ServiceUnavailable).
	DurableTimeout time.Duration
	// LogMaxLen bounds the commit log approximately (default
	// commitlog.MaxLen); claims, catalog mutations and the materializer's
	// entries all trim to it.
	LogMaxLen int64
	// Unmanaged makes the catalog's tables unmanaged: DeclareTable and
	// DescribeTable answer managed_versioning false, so Lance commits
	// versions to a table's _versions directory itself and the catalog only
	// names and places tables; version reads then come from storage. Every
	// process serving one catalog must agree on it.
	Unmanaged bool
	// Vend, when set, has DescribeTable and DeclareTable answer
	// temporary storage credentials scoped to the table (storageOptions);
	// it needs an s3:// root.
	Vend *objstore.VendOptions
	// DropRetention keeps what DropTable and DropNamespace drop
	// recoverable for this long (trash.go): the tables' directories stay,
	// a record of the drop is written, and UndropTable/UndropNamespace put
	// it back until `admin gc` purges it. 0 deletes at once.
	DropRetention time.Duration
	// CleanupGrace keeps every file younger than it out of a cleanup's
	// reach, referenced or not (an in-flight commit may be about to
	// reference it): cleanup.DefaultGrace when 0, at least
	// cleanup.MinGrace.
	CleanupGrace time.Duration
	// IntentGrace is how old the intent of a change made in storage must
	// be before the maintainer resolves it from storage (intents.go;
	// default DefaultIntentGrace).
	IntentGrace time.Duration
	// Maintain, when set, runs the maintainer in this process (one
	// process of the catalog at a time holds its lease; maintain.go).
	Maintain *MaintainConfig
	// FeedsPerPrincipal bounds the change feeds one principal reads at
	// once (FollowChanges; default DefaultFeedsPerPrincipal): each holds a
	// connection, a goroutine and a batch.
	FeedsPerPrincipal int
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Service is the namespace service of one catalog.
type Service struct {
	cfg    Config
	objs   *objstore.Store
	claims *redisclaim.Store
	table  *manifesttable.Table
	root   root
	k      nsKeys
	log    *slog.Logger
	now    func() time.Time
	locs   locCache // tables' locations, for CreateTableVersion

	rs    *redisstate.Catalog // the object index's scripts and commands
	maint *maintainer         // the maintainer's state (maintain.go)
	// stopMaint stops the maintainer and waits for it (nil: none runs).
	stopMaint func()
	vended    vendCache     // credentials vended, while young
	grants    grantBook     // the catalog's grants (grants.go)
	batches   sharedBatches // the change feed's batches as followers share them (changes.go)
	feeds     feedCount     // the change feeds each principal reads (changes.go)
	compact   compactChecks // the tables' fragments as last read (compaction.go)

	closeOnce sync.Once
	closeErr  error
}

// nsKeys are the catalog's Redis keys (redisstate.Keys), and the children
// set of an id.
type nsKeys struct{ redisstate.Keys }

func (k nsKeys) kids(parent api.ID) redisstate.Key { return k.Kids(parent.String()) }

// EnsureDefaults fills what is unset.
func (c *Config) EnsureDefaults() {
	if c.DurableTimeout <= 0 {
		c.DurableTimeout = 30 * time.Second
	}
	if c.LogMaxLen <= 0 {
		c.LogMaxLen = commitlog.MaxLen
	}
	if c.StallTimeout <= 0 {
		c.StallTimeout = 5 * time.Second
	}
	if c.FeedsPerPrincipal <= 0 {
		c.FeedsPerPrincipal = DefaultFeedsPerPrincipal
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate refuses a configuration Open cannot run.
func (c *Config) Validate() error {
	if c.Objects == nil || c.Redis == nil {
		return errors.New("namespace: Config.Objects and Config.Redis are required")
	}
	if c.Maintain != nil {
		if err := c.Maintain.Validate(); err != nil {
			return err
		}
	}
	if err := redisclaim.ValidateCatalog(c.Catalog); err != nil {
		return err
	}
	if c.State != nil && c.State.Keys != redisstate.KeysOf(c.Catalog) {
		return fmt.Errorf("namespace: Config.State is the state of catalog %s, not of %q", c.State.Tag(), c.Catalog)
	}
	return nil
}

// Open opens the catalog: loads __manifest, connects the claim store and,
// if Redis lost the catalog's state, rebuilds it from storage before
// returning.
func Open(ctx context.Context, cfg Config) (*Service, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// One Redis state for the catalog: its pipeliner and its replica
	// waiter serve the index, the __manifest table and the claims alike.
	rs := cfg.State
	if rs == nil {
		rs = redisstate.New(cfg.Redis, cfg.Catalog, cfg.LogMaxLen)
		rs.ConfirmOn(redisstate.NewReplicas(cfg.Redis, rs.Keys, cfg.Claims.ReplicaAcks, cfg.Claims.ReplicaTimeout))
	}
	s := &Service{cfg: cfg, objs: cfg.Objects, rs: rs, k: nsKeys{rs.Keys}, log: cfg.Logger, now: cfg.Now,
		maint: newMaintainer(MaintainConfig{})}
	fail := func(err error) (*Service, error) {
		if cfg.State == nil {
			rs.Close()
		}
		return nil, err
	}
	var err error
	if s.root, err = newRoot(cfg.Objects); err != nil {
		return fail(err)
	}
	if err := s.checkVend(); err != nil {
		return fail(err)
	}
	if err := s.bindRoot(ctx); err != nil {
		return fail(err)
	}
	tc := cfg.Table
	tc.Objects, tc.Redis, tc.Catalog, tc.State, tc.LogMaxLen, tc.Logger, tc.Now = cfg.Objects, cfg.Redis, cfg.Catalog, rs, cfg.LogMaxLen, s.log, s.now
	s.table, err = manifesttable.Open(ctx, tc)
	if err != nil {
		return fail(err)
	}
	cc := cfg.Claims
	cc.Redis, cc.Objects, cc.Catalog, cc.State, cc.LogMaxLen, cc.Logger, cc.Now = cfg.Redis, cfg.Objects, cfg.Catalog, rs, cfg.LogMaxLen, s.log, s.now
	s.claims, err = redisclaim.NewIn(ctx, cc, catalog{s})
	if err != nil {
		_ = s.table.Close()
		return fail(err)
	}
	s.table.SettleWith(s.claims.Settle)
	if err := s.Recover(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	if err := s.reserveLocations(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	if cfg.Maintain != nil {
		s.maint = newMaintainer(*cfg.Maintain)
		mctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		done := s.startMaintainer(mctx)
		s.stopMaint = func() { cancel(); <-done }
	}
	return s, nil
}

// Close releases the service (not the Redis client or the object store).
// It may be called more than once.
func (s *Service) Close() error {
	s.closeOnce.Do(func() {
		if s.stopMaint != nil {
			s.stopMaint()
		}
		_ = s.claims.Close()
		s.closeErr = s.table.Close()
		if s.cfg.State == nil {
			s.rs.Close()
		}
	})
	return s.closeErr
}

// Claims is the claim store (the ExternalManifestStore Go API).
func (s *Service) Claims() *redisclaim.Store { return s.claims }

// Table is the __manifest table.
func (s *Service) Table() *manifesttable.Table { return s.table }

// Recover rebuilds Redis's state from storage if Redis lost it (the epoch
// key is missing); otherwise it returns at once.
func (s *Service) Recover(ctx context.Context) error {
	_, err := s.recover(ctx)
	return err
}

// rebuildIndex re-indexes every namespace and table of __manifest, for a
// recovery holding the lock whose token it gets.
func (s *Service) rebuildIndex(ctx context.Context, token string) error {
	if err := s.table.Refresh(ctx); err != nil {
		return err
	}
	// Redis lost the record of the catalog's root with the rest.
	if err := s.bindRoot(ctx); err != nil {
		return err
	}
	// Children sets of the lost state go first: a stale one would make a
	// re-created namespace look non-empty.
	stale, err := s.rs.KidsKeys(ctx)
	if err != nil {
		return err
	}
	for len(stale) > 0 {
		n := min(len(stale), 500)
		ok, err := s.rs.ClearKids(ctx, token, stale[:n])
		if err != nil {
			return fmt.Errorf("namespace: clearing the object index: %w", err)
		}
		if !ok {
			return errors.New("namespace: the recovery lock was lost while clearing the object index")
		}
		stale = stale[n:]
	}
	// The directories drops keep for undrop stay reserved.
	kept, err := s.keptLocations(ctx)
	if err != nil {
		return err
	}
	var all []redisstate.Indexed
	for _, r := range s.table.Objects() {
		id, _ := api.ParseID(r.ObjectID, "")
		all = append(all, redisstate.Indexed{ID: r.ObjectID, Parent: id.Parent().String(), Type: r.ObjectType, Location: r.Location})
	}
	objects := len(all)
	for _, loc := range kept {
		all = append(all, redisstate.Indexed{Type: redisstate.Reserved, Location: loc})
	}
	for start, first := 0, true; start < len(all) || first; start, first = start+200, false {
		part := all[start:min(start+200, len(all))]
		ok, err := s.rs.RebuildIndex(ctx, token, first, part)
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("namespace: the recovery lock was lost while rebuilding the object index")
		}
	}
	s.log.Info("namespace: object index rebuilt from __manifest", "catalog", s.cfg.Catalog, "objects", objects, "kept_drops", len(kept))
	return nil
}

// indexField reads one field of a hash of the object index; ok is false
// when Redis holds the catalog's epoch but not the field (no such
// object). Without the epoch Redis lost its state: the catalog recovers
// and the field is read again (redisclaim.WithEpoch).
func (s *Service) indexField(ctx context.Context, key redisstate.Key, field string) (val string, ok bool, err error) {
	err = s.claims.WithEpoch(ctx, "namespace: reading the object index", 0, func() (redisstate.Status, error) {
		v, st, err := s.rs.IndexField(ctx, key, field)
		val, ok = v, st == redisstate.OK
		return st, err
	}, redisclaim.Final)
	return val, ok, err
}

// durable waits until the mutation at seq is in a durable __manifest
// segment: the moment it may be acknowledged.
func (s *Service) durable(ctx context.Context, seq uint64) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.DurableTimeout)
	defer cancel()
	// A __manifest that cannot make progress fails the wait once it has
	// been so for StallTimeout, rather than at DurableTimeout: here (a full
	// disk, a store that refuses writes), or anywhere (nothing became
	// durable all that time: the process that materializes died and its
	// lease has not lapsed yet).
	wctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		var since time.Time // when this wait first saw __manifest stalled
		last, moved := s.table.DurableApplied(), time.Now()
		for {
			select {
			case <-wctx.Done():
				return
			case <-tick.C:
			}
			if d := s.table.DurableApplied(); d != last {
				last, moved = d, time.Now()
			}
			reason, ok := s.table.Stalled(0)
			switch {
			case ok && since.IsZero():
				since = time.Now()
			case ok && time.Since(since) >= s.cfg.StallTimeout:
				stop(nserror.New(nserror.ServiceUnavailable, "the change may or may not take effect: %s", reason))
				return
			case ok:
			case time.Since(moved) >= s.cfg.StallTimeout:
				stop(nserror.New(nserror.ServiceUnavailable, "the change may or may not take effect: nothing in __manifest became durable for %s (is a process materializing it? a killed one's lease lapses within %s)", s.cfg.StallTimeout, manifesttable.LeaseTime))
				return
			default:
				since = time.Time{}
			}
		}
	}()
	err := s.table.WaitDurable(wctx, seq)
	var ne *nserror.Error
	if cause := context.Cause(wctx); err != nil && errors.As(cause, &ne) {
		return cause
	}
	return err
}

// objectType returns the type of an object in the authoritative index
// ("" when it does not exist); the root is a namespace.
func (s *Service) objectType(ctx context.Context, id api.ID) (string, error) {
	if id.IsRoot() {
		return manifesttable.TypeNamespace, nil
	}
	t, _, err := s.indexField(ctx, s.k.Obj(), id.String())
	return t, err
}

// row returns the current __manifest row of an object the index knows,
// reading segments another process wrote if this one has not yet.
func (s *Service) row(ctx context.Context, typ string, id api.ID) (manifesttable.Row, bool, error) {
	if r, ok := s.table.Object(typ, id.String()); ok {
		return r, true, nil
	}
	if err := s.table.Refresh(ctx); err != nil {
		return manifesttable.Row{}, false, err
	}
	r, ok := s.table.Object(typ, id.String())
	return r, ok, nil
}

// Bounds on the properties of a namespace or table: they are catalog
// rows, held in memory by every process and in every snapshot.
const (
	MaxProperties     = 256       // properties of one object
	MaxPropertyKey    = 256       // bytes of a key
	MaxPropertyValue  = 64 << 10  // bytes of a value
	MaxPropertiesSize = 256 << 10 // bytes of all keys and values together
)

// propsJSON checks properties against the bounds and encodes them for a
// row's metadata; a property beyond a bound is InvalidInput.
func propsJSON(p api.Properties) (string, error) {
	if len(p) > MaxProperties {
		return "", nserror.New(nserror.InvalidInput, "%d properties, more than %d", len(p), MaxProperties)
	}
	total := 0
	for k, v := range p {
		switch {
		case k == "":
			return "", nserror.New(nserror.InvalidInput, "a property with an empty key")
		case len(k) > MaxPropertyKey:
			return "", nserror.New(nserror.InvalidInput, "property key of %d bytes, more than %d", len(k), MaxPropertyKey)
		case len(v) > MaxPropertyValue:
			return "", nserror.New(nserror.InvalidInput, "property %q has a value of %d bytes, more than %d", k, len(v), MaxPropertyValue)
		}
		total += len(k) + len(v)
	}
	if total > MaxPropertiesSize {
		return "", nserror.New(nserror.InvalidInput, "properties of %d bytes, more than %d", total, MaxPropertiesSize)
	}
	if err := checkRetentionProps(p); err != nil {
		return "", err
	}
	if err := checkCompactionProps(p); err != nil {
		return "", err
	}
	if p == nil {
		p = api.Properties{}
	}
	b, err := json.Marshal(p)
	return string(b), err
}

func propsOf(r manifesttable.Row) api.Properties {
	p := api.Properties{}
	if r.Metadata != "" {
		_ = json.Unmarshal([]byte(r.Metadata), &p)
	}
	return p
}

// normMode matches a mode or behavior regardless of case and underscores;
// "" gives def.
func normMode(s, def string, allowed ...string) (string, error) {
	if s == "" {
		return def, nil
	}
	n := strings.ReplaceAll(strings.ToLower(s), "_", "")
	for _, a := range allowed {
		if strings.ToLower(a) == n {
			return a, nil
		}
	}
	return "", nserror.New(nserror.InvalidInput, "%q is not one of %s", s, strings.Join(allowed, ", "))
}

// page applies page_token (exclusive start) and limit to sorted names.
func page(names []string, token string, limit *int) ([]string, string, error) {
	start := 0
	if token != "" {
		for start < len(names) && names[start] <= token {
			start++
		}
	}
	// Never nil: the protocol's lists are required arrays, and Lance's
	// client rejects a null one.
	names = append([]string{}, names[start:]...)
	if limit != nil && *limit < 0 {
		return nil, "", nserror.New(nserror.InvalidInput, "limit %d is negative", *limit)
	}
	// No limit (or 0) means everything: Lance's tableNames() does not follow
	// page tokens.
	if limit == nil || *limit == 0 || len(names) <= *limit {
		return names, "", nil
	}
	return names[:*limit], names[*limit-1], nil
}
