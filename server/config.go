package server

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/flightns/flightns/flightserver"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/cleanup"
	"github.com/flightns/flightns/internal/restserver"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/redisclaim"
)

// Store says where a catalog's data and Redis are: what serve and the
// admin commands open.
type Store struct {
	// DataDir is the local data directory: the catalog root unless Root
	// is set, and the private Redis's files unless Redis is set.
	// Default ./flightns-data.
	DataDir string
	// Root is the catalog root URI (file:///abs/dir, s3://bucket/prefix?…,
	// mem://); default file://<DataDir>/root.
	Root string
	// Redis is the Redis URL (see internal/redisurl); empty: the private
	// redis-server child of DataDir.
	Redis string
	// Catalog names the catalog; its Redis keys share the hash tag
	// {Catalog}. Default "flightns".
	Catalog string
}

// EnsureDefaults fills what is unset.
func (s *Store) EnsureDefaults() {
	if s.DataDir == "" {
		s.DataDir = "./flightns-data"
	}
	if s.Catalog == "" {
		s.Catalog = "flightns"
	}
}

// Validate refuses a configuration that cannot be opened.
func (s *Store) Validate() error {
	if _, err := filepath.Abs(s.DataDir); err != nil {
		return fmt.Errorf("data directory %q: %w", s.DataDir, err)
	}
	return nil
}

// SQL configures the embedded SQL engine and where it runs.
type SQL struct {
	// Isolation is where SQL runs: "process" (a supervised worker process
	// of its own; the default) or "none" (in this process).
	Isolation string
	// Memory is the engine's memory limit (default 4GB); Threads its
	// threads (default 2).
	Memory  string
	Threads int
	// MaxQueries bounds the queries running at once, whichever surface
	// asks (default 32): the engine's one semaphore; one more fails at
	// once.
	MaxQueries int
	// SpillDir is where queries spill (default <DataDir>/sql-spill);
	// SpillLimit bounds all spilled bytes (default 1GiB; 0B: no spilling).
	SpillDir   string
	SpillLimit string
	// WorkerMemory caps the worker process's memory (default Memory +
	// 512 MiB); StopGrace is how long a stopped query may take to end
	// before the worker is restarted (default 2 s); CPUs is how many CPUs
	// the worker may run on (0: all but one).
	WorkerMemory string
	StopGrace    time.Duration
	CPUs         int
	// WorkerCommand runs the SQL worker (a process that calls
	// sqlworker.Serve); default: this executable with the argument
	// "sql-worker", as the flightns binary answers.
	WorkerCommand []string
}

// Vend configures credential vending.
type Vend struct {
	// Enabled turns vending on.
	Enabled bool
	// RoleARN is the role the server's storage credentials assume (AWS;
	// MinIO takes any value).
	RoleARN string
	// Duration is how long vended credentials live (default 1h; at least
	// 15 min).
	Duration time.Duration
	// RenewAfter and RefreshOffset: objstore.VendOptions's (0: renew at
	// the credentials' expiry; the client's default offset).
	RenewAfter, RefreshOffset time.Duration
}

// EnsureDefaults fills what is unset.
func (v *Vend) EnsureDefaults() {
	if v.Duration == 0 {
		v.Duration = time.Hour
	}
}

// Validate refuses credentials STS would not issue, or that clients
// would renew after their refresh is due.
func (v *Vend) Validate() error {
	if v.Enabled && v.Duration != 0 && v.Duration < 15*time.Minute {
		return errors.New("vended credentials (--vend-duration) live at least 15m (STS's minimum)")
	}
	life := cmp.Or(v.Duration, time.Hour)
	if v.RenewAfter > 0 {
		life = min(life, v.RenewAfter)
	}
	if v.RenewAfter < 0 || v.RefreshOffset < 0 || cmp.Or(v.RefreshOffset, time.Minute) >= life {
		return errors.New("vended credentials are renewed (--vend-renew-after, else --vend-duration) later than their refresh offset (--vend-refresh-offset, else Lance's 60s) before it")
	}
	return nil
}

// HTTP bounds the connections of every HTTP listener: REST, the console,
// and metrics and health.
type HTTP struct {
	// ReadHeaderTimeout bounds the reading of a request's header (default
	// 10 s); IdleTimeout closes a keep-alive connection idle that long
	// (default 2 min).
	ReadHeaderTimeout, IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's header (default 64 KiB): past it,
	// 431 Request Header Fields Too Large.
	MaxHeaderBytes int
}

// EnsureDefaults fills what is unset (zero).
func (h *HTTP) EnsureDefaults() {
	if h.ReadHeaderTimeout == 0 {
		h.ReadHeaderTimeout = 10 * time.Second
	}
	if h.IdleTimeout == 0 {
		h.IdleTimeout = 2 * time.Minute
	}
	if h.MaxHeaderBytes == 0 {
		h.MaxHeaderBytes = 64 << 10
	}
}

// Validate refuses a negative bound, naming it (0 is unset:
// EnsureDefaults fills it). Config.Validate calls it, as it calls every
// nested configuration's.
func (h *HTTP) Validate() error {
	switch {
	case h.ReadHeaderTimeout < 0:
		return fmt.Errorf("HTTP.ReadHeaderTimeout %v is negative (0: the default, 10s)", h.ReadHeaderTimeout)
	case h.IdleTimeout < 0:
		return fmt.Errorf("HTTP.IdleTimeout %v is negative (0: the default, 2m)", h.IdleTimeout)
	case h.MaxHeaderBytes < 0:
		return fmt.Errorf("HTTP.MaxHeaderBytes %d is negative (0: the default, 64 KiB)", h.MaxHeaderBytes)
	}
	return nil
}

// OIDC configures OpenID Connect bearer tokens.
type OIDC struct {
	// Issuer is the issuer URL; empty: no OIDC.
	Issuer string
	// Audience must be in a token's aud.
	Audience string
	// NameClaim names the principal (default "sub"); RoleClaim holds the
	// groups or roles (default "groups"); Roles maps them to roles,
	// "group=role,…" ("*": every token; auth.ParseRoleMap).
	NameClaim, RoleClaim, Roles string
}

// EnsureDefaults fills the claims of an issuer that names none with
// auth.OIDCConfig's defaults; without an issuer OIDC is off.
func (o *OIDC) EnsureDefaults() {
	if o.Issuer == "" {
		return
	}
	d := auth.OIDCConfig{NameClaim: o.NameClaim, RoleClaim: o.RoleClaim}
	d.EnsureDefaults()
	o.NameClaim, o.RoleClaim = d.NameClaim, d.RoleClaim
}

// Validate refuses an issuer without an audience, and a role map
// auth.ParseRoleMap cannot read.
func (o *OIDC) Validate() error {
	if o.Issuer != "" && o.Audience == "" {
		return errors.New("OIDC (--oidc-issuer) needs an audience (--oidc-audience)")
	}
	if _, err := auth.ParseRoleMap(o.Roles); err != nil {
		return fmt.Errorf("OIDC roles (--oidc-roles): %w", err)
	}
	return nil
}

// EnsureDefaults fills what is unset.
func (s *SQL) EnsureDefaults() {
	if s.Isolation == "" {
		s.Isolation = "process"
	}
	if s.Memory == "" {
		s.Memory = "4GB"
	}
	if s.Threads == 0 {
		s.Threads = 2
	}
	if s.SpillLimit == "" {
		s.SpillLimit = "1GiB"
	}
	if s.StopGrace == 0 {
		s.StopGrace = 2 * time.Second
	}
}

// Validate refuses what the engine or the worker would refuse later.
func (s *SQL) Validate() error {
	if s.Isolation != "process" && s.Isolation != "none" {
		return fmt.Errorf("SQL isolation (--sql-isolation) %q: want process or none", s.Isolation)
	}
	mem, err := sqlengine.ParseSize(s.Memory)
	if err != nil {
		return fmt.Errorf("SQL memory (--sql-memory): %w", err)
	}
	if _, err := sqlengine.ParseSize(s.SpillLimit); err != nil {
		return fmt.Errorf("SQL spill limit (--sql-spill-limit): %w", err)
	}
	if s.WorkerMemory != "" {
		n, err := sqlengine.ParseSize(s.WorkerMemory)
		if err != nil {
			return fmt.Errorf("SQL worker memory (--sql-worker-memory): %w", err)
		}
		if n < mem {
			return fmt.Errorf("SQL worker memory (--sql-worker-memory) %s is below the SQL memory (--sql-memory) %s", s.WorkerMemory, s.Memory)
		}
	}
	return nil
}

// Config is a server's whole configuration. The zero value, after
// EnsureDefaults, runs a catalog in ./flightns-data with no listeners;
// the flightns binary's flags set the addresses.
type Config struct {
	Store Store
	// FlightAddr, RESTAddr and MetricsAddr are TCP listen addresses
	// ("127.0.0.1:0" picks a free port); empty: that surface is off.
	FlightAddr  string
	RESTAddr    string
	MetricsAddr string
	// ConsoleAddr is the web console's listen address (package console);
	// empty: no console.
	ConsoleAddr string
	// ReplicaAcks is how many Redis replicas must have a claim before its
	// commit point: nil one whenever the primary has replicas, 0 none, n
	// n. ReplicaTimeout bounds the wait (default 1s). See redisclaim's
	// replicas.
	ReplicaAcks    *int
	ReplicaTimeout time.Duration
	// IdempotencyWindow is how long the answer to a mutation that carried
	// an Idempotency-Key is kept for its retries (default 15 min).
	IdempotencyWindow time.Duration
	// DropRetention is namespace.Config's: how long drops stay recoverable
	// (0, the zero Config's: drops delete at once; the binary's default is
	// DefaultDropRetention).
	DropRetention time.Duration
	// EventHistory is how long the change feed keeps its history
	// (manifesttable.Config.EventHistory; 0: its default, a week).
	EventHistory time.Duration
	// MaintainInterval runs the maintainer (namespace.MaintainConfig: it
	// follows Lance's cleanup and applies retention; one server of the
	// catalog at a time) a pass every MaintainInterval (0, the zero
	// Config's: no maintainer in this server; the binary's default is
	// DefaultMaintainInterval).
	MaintainInterval time.Duration
	// IntentGrace is namespace.Config's: how old the intent of a change
	// made in storage must be before the maintainer settles it (0: its
	// default, namespace.DefaultIntentGrace).
	IntentGrace time.Duration
	// CleanupGrace is namespace.Config's: files younger than it are never
	// cleaned up (0: cleanup.DefaultGrace, 7 days).
	CleanupGrace time.Duration
	// ConsoleSampleEvery is how often the console's metrics history is
	// sampled (default 2 s; an hour of samples is kept).
	ConsoleSampleEvery time.Duration
	// SessionTTL is how long a session token (what a Flight handshake
	// with a user's password answers) lives (default 12h); a handshake
	// with a live one answers a fresh one.
	SessionTTL time.Duration
	// AuthFile is the JSON file of tokens and users (see package auth);
	// empty: no authentication.
	AuthFile string
	// TLSCert and TLSKey (PEM files) turn TLS on for Flight, REST and the
	// console.
	TLSCert string
	TLSKey  string
	// Vend has DescribeTable and DeclareTable answer temporary storage
	// credentials scoped to the table (STS AssumeRole with an inline
	// policy); it needs an s3:// root.
	Vend Vend
	// OIDC, with an issuer, accepts bearer JWTs of that OpenID Connect
	// issuer beside the auth file (auth.OIDCConfig).
	OIDC OIDC
	// AuditFile, when set, receives the audit events (every mutation and
	// every refused request: package audit) as JSON lines, appended;
	// otherwise they go to Logger with audit=true.
	AuditFile string
	// TLSClientCA (PEM) turns mutual TLS on: every client must present a
	// certificate one of its CAs signed.
	TLSClientCA string
	// Logger receives the server's structured log (default: discarded);
	// LogFormat and LogLevel are handed to the SQL worker so that its
	// lines match (default text, info).
	Logger    *slog.Logger
	LogFormat string
	LogLevel  string
	// ShutdownTimeout is how long Close lets running requests finish
	// before it cuts them off (default 30 s).
	ShutdownTimeout time.Duration
	// Limits bound Flight SQL messages and queries (flightserver's
	// defaults for what is unset).
	Limits flightserver.Limits
	// MaxBodyBytes bounds one REST request body (default
	// restserver.DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// HTTP bounds the HTTP listeners' connections and headers.
	HTTP HTTP
	SQL  SQL
	// Unmanaged: Lance commits versions itself and the catalog only names
	// and places tables.
	Unmanaged bool
	// Version is reported by Flight SQL's GetSqlInfo and the ready log.
	Version string
	// ClaimStep, when set, runs at every step of the commit protocol (a
	// test seam: FLIGHTNS_DEBUG_STEP_DELAY in the binary).
	ClaimStep redisclaim.StepFunc
}

// DefaultDropRetention is the binary's --drop-retention: a week, as
// catalogs with soft deletion keep dropped tables.
const DefaultDropRetention = 7 * 24 * time.Hour

// DefaultMaintainInterval is the binary's --maintain-interval.
const DefaultMaintainInterval = time.Minute

// EnsureDefaults fills what is unset, in the sub-structs too.
func (c *Config) EnsureDefaults() {
	c.Store.EnsureDefaults()
	c.SQL.EnsureDefaults()
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.LogFormat == "" {
		c.LogFormat = "text"
	}
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 30 * time.Second
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = restserver.DefaultMaxBodyBytes
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.ConsoleSampleEvery <= 0 {
		c.ConsoleSampleEvery = 2 * time.Second
	}
	c.Vend.EnsureDefaults()
	c.HTTP.EnsureDefaults()
	c.OIDC.EnsureDefaults()
	c.Limits.EnsureDefaults()
}

// Validate refuses a configuration Start could not run, naming what is
// wrong.
func (c *Config) Validate() error {
	if err := c.Store.Validate(); err != nil {
		return err
	}
	if err := c.SQL.Validate(); err != nil {
		return err
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return errors.New("TLS needs both a certificate and a key")
	}
	if c.TLSClientCA != "" && c.TLSCert == "" {
		return errors.New("client certificates (--tls-client-ca) need TLS (--tls-cert and --tls-key)")
	}
	if c.ShutdownTimeout < 0 || c.MaxBodyBytes < 0 {
		return errors.New("the shutdown timeout and the REST body limit must not be negative")
	}
	for _, v := range []interface{ Validate() error }{&c.Vend, &c.OIDC, &c.HTTP, &c.Limits} {
		if err := v.Validate(); err != nil {
			return err
		}
	}
	if c.DropRetention < 0 {
		return errors.New("the drop retention (--drop-retention) must not be negative")
	}
	if c.EventHistory < 0 {
		return errors.New("the change feed's history (--event-history) must not be negative")
	}
	if c.MaintainInterval < 0 {
		return errors.New("the maintainer's interval (--maintain-interval) must not be negative")
	}
	if c.IntentGrace < 0 {
		return errors.New("the intents' grace (--intent-grace) must not be negative")
	}
	if c.CleanupGrace != 0 && c.CleanupGrace < cleanup.MinGrace {
		return fmt.Errorf("the cleanup grace period (--cleanup-grace) must be at least %v", cleanup.MinGrace)
	}
	if c.SessionTTL < 0 {
		return errors.New("session lifetime (--session-ttl) must not be negative")
	}
	return nil
}

// engine is the SQL engine's configuration: memory, threads, as many
// queries at once as Flight admits, spill under the data directory.
func (c *Config) engine() (sqlengine.Config, error) {
	spill := c.SQL.SpillDir
	if spill == "" {
		data, err := filepath.Abs(c.Store.DataDir)
		if err != nil {
			return sqlengine.Config{}, err
		}
		spill = filepath.Join(data, "sql-spill")
	}
	if n, _ := sqlengine.ParseSize(c.SQL.SpillLimit); n == 0 {
		spill = ""
	}
	return sqlengine.Config{MemoryLimit: c.SQL.Memory, Threads: c.SQL.Threads, MaxQueries: c.SQL.MaxQueries,
		SpillDir: spill, SpillLimit: c.SQL.SpillLimit}, nil
}
