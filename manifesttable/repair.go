package manifesttable

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/objstore"
)

// QuarantinePrefix holds the files a storage repair took out of
// __manifest's history: <QuarantinePrefix><UTC time>/_log/… and
// …/_snapshots/…, byte for byte. Nothing reads them; an operator may.
const QuarantinePrefix = Prefix + "_quarantine/"

// StorageRepair is what a repair of __manifest's files does: keep the
// longest readable chain (the newest snapshot that reads whole, and the
// segments that continue it) and take every other file out of the
// history. Loaders then start from that chain again, and the server that
// materializes next writes what comes after it from Redis's commit log.
type StorageRepair struct {
	// State is the chain kept, loaded from storage alone.
	State *State
	// Remove lists the files taken out: those a loader cannot use
	// (State.Problems) and the readable segments past the end of the
	// chain, which cannot be applied without the sequences before them.
	Remove []FileProblem
	// LostLast is the highest catalog sequence that the removed files or
	// Redis's durable mark say was durable (0 when it is not past the
	// chain): sequences State.Seq+1..LostLast must come from elsewhere.
	LostLast uint64
	// LogFirst is the first sequence after the chain that Redis's commit
	// log still holds (0: none). When it is State.Seq+1 the log holds
	// every lost sequence and they are re-materialized exactly.
	LogFirst uint64
	// Holder is the token of the materializer lease when a process holds
	// it: a server runs on this catalog, and the files must not be moved
	// under it.
	Holder string

	catalog string
}

// PlanStorageRepair reads every file of catalog's __manifest and Redis's
// marks, and says what a repair would do. It changes nothing.
func PlanStorageRepair(ctx context.Context, objs *objstore.Store, rdb redisstate.Client, catalog string) (*StorageRepair, error) {
	st, err := LoadState(ctx, objs, catalog)
	if err != nil {
		return nil, err
	}
	p := &StorageRepair{State: st, catalog: catalog}
	removed := map[string]bool{}
	for _, fp := range st.Problems {
		p.Remove = append(p.Remove, fp)
		removed[fp.Key] = true
		if n, ok := seqOfKey(fp.Key); ok {
			p.LostLast = max(p.LostLast, n)
		}
	}
	s := storage{objs: objs, catalog: catalog}
	firsts, err := s.listSeqs(ctx, logPrefix)
	if err != nil {
		return nil, err
	}
	for _, first := range firsts {
		key := segmentKey(first)
		if first <= st.Seq || removed[key] {
			continue
		}
		seg, fp, err := readSegmentChecked(ctx, s, first)
		if err != nil {
			return nil, err
		}
		if fp != nil {
			p.Remove = append(p.Remove, *fp)
			continue
		}
		p.LostLast = max(p.LostLast, seg.Last)
		p.Remove = append(p.Remove, FileProblem{Key: key, Kind: ProblemGap,
			Detail: fmt.Sprintf("segment %d..%d lies past the end of the readable chain (sequence %d): its changes cannot be applied without the ones before them", seg.First, seg.Last, st.Seq)})
	}
	rs := redisstate.New(rdb, catalog, 0)
	d, err := rs.DurableSeq(ctx)
	if err != nil {
		return nil, err
	}
	p.LostLast = max(p.LostLast, d)
	if p.LostLast <= st.Seq {
		p.LostLast = 0
	}
	if p.LogFirst, err = rs.FirstLogSeqFrom(ctx, st.Seq+1); err != nil {
		return nil, err
	}
	if p.Holder, err = rs.LeaseHolder(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// Quarantine moves every file of Remove under dir (a key under
// QuarantinePrefix), copying it create-only before deleting it, and lowers
// Redis's durable mark to the end of the chain kept (nothing past it is
// durable in storage any more). It refuses while a materializer holds the
// lease. progress, when set, is called after each file. It returns the
// quarantine key of each file, in Remove's order.
func (p *StorageRepair) Quarantine(ctx context.Context, objs *objstore.Store, rdb redisstate.Client, dir string, progress func(done, total int)) ([]string, error) {
	if p.Holder != "" {
		return nil, fmt.Errorf("a server materializes catalog %q (it holds the lease, token %s): stop every flightns serve of this catalog, then repair (a killed server's lease lapses within %s)", p.catalog, p.Holder, LeaseTime)
	}
	if !strings.HasPrefix(dir, QuarantinePrefix) {
		return nil, fmt.Errorf("manifesttable: quarantine directory %q is not under %s", dir, QuarantinePrefix)
	}
	dir = strings.TrimSuffix(dir, "/") + "/"
	out := make([]string, 0, len(p.Remove))
	for i, fp := range p.Remove {
		to := dir + strings.TrimPrefix(fp.Key, Prefix)
		if _, err := objs.CopyIfAbsent(ctx, fp.Key, to); err != nil && !errors.Is(err, objstore.ErrNotFound) {
			return out, fmt.Errorf("quarantining %s: %w", fp.Key, err)
		}
		if err := objs.Delete(ctx, fp.Key); err != nil {
			return out, fmt.Errorf("quarantining %s: %w", fp.Key, err)
		}
		out = append(out, to)
		if progress != nil {
			progress(i+1, len(p.Remove))
		}
	}
	if p.LostLast > 0 {
		if err := redisstate.New(rdb, p.catalog, 0).PublishDurable(ctx, p.State.Seq); err != nil {
			return out, err
		}
	}
	return out, nil
}

// QuarantineDir names a repair's quarantine directory by its time.
func QuarantineDir(now time.Time) string {
	return QuarantinePrefix + now.UTC().Format("20060102T150405.000Z") + "/"
}
