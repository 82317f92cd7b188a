package namespace

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/cleanup"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/nserror"
)

// Cleanup of old versions, by flightns itself (internal/cleanup decides
// and deletes; this file applies a table's retention to it, drops the
// pruned versions' records first, and runs one cleanup of a table at a
// time across every process of the catalog). See docs/maintenance.md.

// cleanupLease bounds how long one table's cleanup holds its lock without
// renewing it.
const cleanupLease = time.Minute

// CleanupTable cleans up a table's old versions under its retention (or
// the request's): the versions it prunes leave the catalog, then their
// manifests and every file no kept version references go. Tagged
// versions, the versions branches were forked from and the latest of
// every branch stay. One cleanup of a table runs at a time
// (ConcurrentModification for a second).
func (s *Service) CleanupTable(ctx context.Context, req api.CleanupTableRequest) (*api.CleanupTableResponse, error) {
	loc, err := s.tableLoc(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	pol, ok, err := s.Versions().RetentionOf(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	if req.OlderThan != "" {
		if pol.OlderThan, err = parseAge(req.OlderThan); err != nil {
			return nil, err
		}
		ok = pol.OlderThan > 0
	}
	if req.RetainVersions != nil {
		if *req.RetainVersions < 1 {
			return nil, nserror.New(nserror.InvalidInput, "retain_versions %d: at least 1 (the latest version is always kept)", *req.RetainVersions)
		}
		pol.RetainVersions = *req.RetainVersions
	}
	if !ok {
		return nil, nserror.New(nserror.InvalidInput, "table %q has no retention (set %s on it or a namespace above it, or give older_than)", req.ID.String(), PropCleanupOlderThan)
	}
	if !req.DryRun {
		// Locked before the plan is made: while it is held, no table can
		// be declared or registered at loc (claimLocation), so the files
		// planned are the files of the table the plan was made of.
		release, err := s.lockCleanup(ctx, req.ID, loc)
		if err != nil {
			return nil, err
		}
		defer release()
		if now, err := s.tableLoc(ctx, req.ID); err != nil || now != loc {
			return nil, nserror.New(nserror.ConcurrentModification, "table %q changed while its cleanup began: retry", req.ID.String())
		}
	}
	plan, err := cleanup.NewPlan(ctx, s.objs, lancemanifest.Dir(loc), s.table.Branches(req.ID.String()),
		cleanup.Policy{OlderThan: pol.OlderThan, KeepLast: pol.RetainVersions, Grace: s.cfg.CleanupGrace, Now: s.now()})
	if err != nil {
		return nil, err
	}
	resp := &api.CleanupTableResponse{DryRun: req.DryRun, CutoffMillis: plan.Cutoff.UnixMilli(), Pruned: map[string][]uint64{},
		KeptVersions: plan.Totals.KeptVersions, Files: plan.Totals.Files, FileBytes: plan.Totals.FileBytes}
	for _, c := range plan.Chains {
		for _, v := range c.Pruned {
			resp.Pruned[c.Branch] = append(resp.Pruned[c.Branch], v.Version)
		}
	}
	if req.DryRun {
		return resp, nil
	}

	var forget cleanup.ForgetFunc
	if s.managed() {
		forget = func(ctx context.Context, branch string, versions []uint64) error {
			return s.claims.ForgetVersions(ctx, lancemanifest.Chain{Table: plan.Table, Branch: branch}.Key(), versions)
		}
	}
	// The cleanup is made once the first object it deletes is gone: its
	// intent is recorded right before that deletion (nothing deleted, no
	// event), and its event says what it is to delete until the cleanup
	// has run, what it deleted after.
	var pruned []uint64
	for _, vs := range resp.Pruned {
		pruned = append(pruned, vs...)
	}
	ev := api.Event{Type: api.EventTableCleaned, ID: req.ID, Versions: pruned, Files: plan.Totals.PrunedVersions + len(plan.Files), Bytes: plan.Totals.FileBytes}
	var p *pending
	plan.BeforeDelete = func(ctx context.Context, first string) (err error) {
		p, err = s.intend(ctx, ev, first, nil, "", 0)
		return err
	}
	res, err := plan.Execute(ctx, s.objs, forget, nil)
	resp.FilesDeleted, resp.BytesDeleted, resp.Spared = res.ManifestsDeleted+res.FilesDeleted, res.BytesDeleted, len(res.Spared)
	if p != nil {
		ev.Files, ev.Bytes = resp.FilesDeleted, resp.BytesDeleted
		p.outcome(ev)
		if resp.FilesDeleted > 0 {
			// What was deleted is gone, whether or not the rest followed.
			err = errors.Join(p.settle(ctx, nil, nil), err)
		} else {
			err = p.settle(ctx, err, nil) // a batch that failed may have deleted some: storage tells
		}
	}
	if err != nil {
		return resp, err
	}
	s.log.Info("cleanup", "table", req.ID.String(), "pruned", plan.Totals.PrunedVersions, "kept", plan.Totals.KeptVersions,
		"deleted", resp.FilesDeleted, "bytes", resp.BytesDeleted, "spared", resp.Spared)
	return resp, nil
}

// lockCleanup takes the catalog-wide lock of one table's cleanup, renewed
// while it runs; release gives it back.
func (s *Service) lockCleanup(ctx context.Context, id api.ID, loc string) (release func(), err error) {
	key, token := s.k.Cleanup(loc), uuid.NewString()
	taken, err := s.rs.TakeLeaseOf(ctx, key, token, cleanupLease)
	if err != nil {
		return nil, err
	}
	if !taken {
		return nil, nserror.New(nserror.ConcurrentModification, "a cleanup of table %q is running", id.String())
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(cleanupLease / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				_, _ = s.rs.TakeLeaseOf(context.WithoutCancel(ctx), key, token, cleanupLease) // renews: the token holds it
			}
		}
	}()
	return func() {
		close(stop)
		<-done
		_, _ = s.rs.ReleaseLeaseOf(context.WithoutCancel(ctx), key, token)
	}, nil
}
