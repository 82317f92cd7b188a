package repair

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/namespace"
	"github.com/flightns/flightns/objstore"
	"github.com/flightns/flightns/redisclaim"
)

// Progress is told how much of a long operation is done: done of total
// units (tables); total is 0 while unknown. It may be nil.
type Progress func(done, total int)

func (p Progress) report(done, total int) {
	if p != nil {
		p(done, total)
	}
}

// Recover rebuilds the catalog's Redis state from object storage. With
// force it first deletes the epoch key, so the rebuild happens even though
// Redis seems whole (a running server's next commit waits for it, as
// after a Redis restart without data); without force it only runs when
// Redis lost the state.
func Recover(ctx context.Context, svc *namespace.Service, rdb redis.UniversalClient, force bool) (redisclaim.RecoveryStats, error) {
	if force {
		if err := rdb.Del(ctx, redisclaim.EpochKey(svc.Claims().Catalog())).Err(); err != nil {
			return redisclaim.RecoveryStats{}, fmt.Errorf("repair: clearing the epoch: %w", err)
		}
	}
	return svc.Claims().RecoverWithStats(ctx)
}

// Compact writes a __manifest snapshot at the newest durable sequence now.
func Compact(ctx context.Context, svc *namespace.Service) error {
	if err := svc.Table().WaitCaughtUp(ctx); err != nil {
		return err
	}
	return svc.Table().Compact(ctx)
}

// Table is a table of the catalog: its id and its directory (the claim
// store's table key).
type Table struct {
	ID, Location string
}

// Tables lists every table of the catalog, by id.
func Tables(ctx context.Context, svc *namespace.Service) ([]Table, error) {
	if err := svc.Table().Sync(ctx); err != nil {
		return nil, err
	}
	var out []Table
	for _, r := range svc.Table().Objects() {
		if r.ObjectType == manifesttable.TypeTable && r.Location != "" {
			out = append(out, Table{ID: r.ObjectID, Location: r.Location})
		}
	}
	slices.SortFunc(out, func(a, b Table) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// DriftKind names a disagreement between a version record and storage.
type DriftKind string

// The kinds of drift.
const (
	// MissingManifest: a version is recorded, its final manifest is gone
	// (deleted behind the catalog's back, e.g. by Lance's cleanup).
	// Repair forgets the record.
	MissingManifest DriftKind = "missing-manifest"
	// UnrecordedManifest: a final manifest above the recorded head exists
	// in storage (written around the catalog). Repair records it, so the
	// head moves up to it.
	UnrecordedManifest DriftKind = "unrecorded-manifest"
	// SizeMismatch: the final manifest's size differs from the record's.
	// Reported only: which one is right needs a person.
	SizeMismatch DriftKind = "size-mismatch"
)

// Drift is one disagreement.
type Drift struct {
	Kind     DriftKind
	Table    string // table id
	Version  uint64
	Path     string // final manifest key
	Detail   string
	Repaired bool
}

func (d Drift) String() string {
	s := fmt.Sprintf("%s: table %s version %d (%s)", d.Kind, d.Table, d.Version, d.Path)
	if d.Detail != "" {
		s += ": " + d.Detail
	}
	if d.Repaired {
		s += " — repaired"
	}
	return s
}

// VerifyReport is what Verify found.
type VerifyReport struct {
	Tables   int
	Versions int // version records checked
	Drift    []Drift
}

// Unrepaired counts the drift left as it was.
func (r VerifyReport) Unrepaired() int {
	n := 0
	for _, d := range r.Drift {
		if !d.Repaired {
			n++
		}
	}
	return n
}

// Verify compares every table's version records with the final manifests
// in its _versions directory, and with repair set fixes what it can (see
// DriftKind).
func Verify(ctx context.Context, svc *namespace.Service, repair bool, progress Progress) (VerifyReport, error) {
	var rep VerifyReport
	tables, err := Tables(ctx, svc)
	if err != nil {
		return rep, err
	}
	progress.report(0, len(tables))
	for i, t := range tables {
		if err := verifyTable(ctx, svc.Claims(), t, repair, &rep); err != nil {
			return rep, fmt.Errorf("repair: table %s: %w", t.ID, err)
		}
		rep.Tables++
		progress.report(i+1, len(tables))
	}
	return rep, nil
}

func verifyTable(ctx context.Context, claims *redisclaim.Store, t Table, repair bool, rep *VerifyReport) error {
	objs := claims.Objects()
	stored := map[uint64]objstore.Attrs{} // final manifests in storage
	list, err := objs.ListAll(ctx, redisclaim.VersionsPrefix(t.Location))
	if err != nil {
		return err
	}
	for _, a := range list {
		m, err := redisclaim.ParseManifestName(path.Base(a.Key))
		if err != nil || m.Staging || m.Detached {
			continue
		}
		stored[m.Version] = a
	}
	var head uint64
	for after := uint64(0); ; {
		page, next, err := claims.ListVersions(ctx, t.Location, redisclaim.ListOptions{After: after})
		if err != nil {
			return err
		}
		for _, l := range page {
			rep.Versions++
			head = max(head, l.Version)
			a, ok := stored[l.Version]
			switch {
			case !ok:
				d := Drift{Kind: MissingManifest, Table: t.ID, Version: l.Version, Path: l.Path}
				if _, err := objs.Head(ctx, l.Path); err == nil {
					continue // listed under another name scheme
				} else if !errors.Is(err, objstore.ErrNotFound) {
					return err
				}
				if repair {
					if _, err := claims.DeleteVersions(ctx, t.Location, []redisclaim.Range{{Start: l.Version, End: l.Version + 1}}); err != nil {
						return err
					}
					d.Repaired = true
				}
				rep.Drift = append(rep.Drift, d)
			case l.Size > 0 && a.Size != l.Size:
				rep.Drift = append(rep.Drift, Drift{Kind: SizeMismatch, Table: t.ID, Version: l.Version, Path: l.Path,
					Detail: fmt.Sprintf("recorded %d bytes, storage holds %d", l.Size, a.Size)})
			}
		}
		if next == 0 {
			break
		}
		after = next
	}
	// Final manifests above the head that no record names, in order.
	var above []uint64
	for v := range stored {
		if v > head {
			above = append(above, v)
		}
	}
	slices.Sort(above)
	for _, v := range above {
		a := stored[v]
		d := Drift{Kind: UnrecordedManifest, Table: t.ID, Version: v, Path: a.Key}
		if repair {
			if err := claims.PutIfNotExists(ctx, t.Location, v, a.Key, a.Size, a.ETag); err != nil {
				d.Detail = err.Error()
			} else {
				d.Repaired = true
			}
		}
		rep.Drift = append(rep.Drift, d)
	}
	return nil
}

// GCReport is what GC found and did.
type GCReport struct {
	Tables   int
	Staging  int      // staging objects seen
	Orphaned []string // keys older than the window and claimed by no record
	Deleted  int
}

// GC deletes the staging manifests of every table that are older than
// window and that no version record points at (with dryRun it only lists
// them). Staging objects of losers, of crashed writers, and of commits
// that were never claimed end up here.
func GC(ctx context.Context, svc *namespace.Service, window time.Duration, dryRun bool, now time.Time, progress Progress) (GCReport, error) {
	var rep GCReport
	if window <= 0 {
		return rep, errors.New("repair: the gc safety window must be positive")
	}
	tables, err := Tables(ctx, svc)
	if err != nil {
		return rep, err
	}
	claims := svc.Claims()
	objs := claims.Objects()
	progress.report(0, len(tables))
	for i, t := range tables {
		list, err := objs.ListAll(ctx, redisclaim.VersionsPrefix(t.Location))
		if err != nil {
			return rep, err
		}
		var candidates []objstore.Attrs
		for _, a := range list {
			m, err := redisclaim.ParseManifestName(path.Base(a.Key))
			if err != nil || !m.Staging {
				continue
			}
			rep.Staging++
			if now.Sub(a.ModTime) > window {
				candidates = append(candidates, a)
			}
		}
		if len(candidates) > 0 {
			inUse, err := stagingInUse(ctx, claims, t.Location)
			if err != nil {
				return rep, err
			}
			for _, a := range candidates {
				if inUse[a.Key] {
					continue
				}
				rep.Orphaned = append(rep.Orphaned, a.Key)
				if dryRun {
					continue
				}
				if err := objs.Delete(ctx, a.Key); err != nil && !errors.Is(err, objstore.ErrNotFound) {
					return rep, err
				}
				rep.Deleted++
			}
		}
		rep.Tables++
		progress.report(i+1, len(tables))
	}
	return rep, nil
}

// stagingInUse is the set of staging keys the table's version records
// name.
func stagingInUse(ctx context.Context, claims *redisclaim.Store, table string) (map[string]bool, error) {
	in := map[string]bool{}
	for after := uint64(0); ; {
		page, next, err := claims.ListVersions(ctx, table, redisclaim.ListOptions{After: after})
		if err != nil {
			return nil, err
		}
		for _, l := range page {
			if l.StagingPath != "" {
				in[l.StagingPath] = true
			}
		}
		if next == 0 {
			return in, nil
		}
		after = next
	}
}
