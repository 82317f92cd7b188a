package manifesttable

import (
	"context"
	"encoding/json"
	"time"

	"github.com/flightns/flightns/internal/commitlog"
	"github.com/flightns/flightns/lancemanifest"
	"github.com/flightns/flightns/objstore"
)

// Version statistics. A table_version row is written when its version is
// claimed, before anyone has read its manifest; its statistics (rows,
// fragments, data bytes, schema) follow in a later sequence. The process
// that materializes notes each new version row, a background reader
// fetches the version's Lance manifest (an immutable file) and appends a
// "stats" entry to the commit log, which the next segment turns into the
// row with its statistics. Nothing in a commit waits for this: a slow or
// unreadable manifest only leaves the row's statistics NULL. A stats
// entry applies only to the row it was read for (same table, branch,
// version and manifest path): a version deleted or made again meanwhile
// is left alone.

// statsQueue bounds the versions waiting for their statistics; when it
// is full, versions are left without (best effort, never back-pressure
// on the materializer).
const statsQueue = 4096

// statsBatch is how many stats entries one append carries at most, and
// statsLinger how long the reader gathers versions before it reads them.
const (
	statsBatch  = 512
	statsLinger = time.Second
)

// versionStats is a stats log entry's payload.
type versionStats struct {
	ID           string `json:"object_id"`
	Branch       string `json:"branch,omitempty"`
	Version      uint64 `json:"table_version"`
	ManifestPath string `json:"manifest_path"`
	ManifestSize uint64 `json:"-"` // the row's, to bound the read
	NumRows      uint64 `json:"num_rows"`
	NumFragments uint64 `json:"num_fragments"`
	DataBytes    uint64 `json:"data_bytes"`
	Schema       string `json:"schema"`
}

// noteVersions queues the version rows of a durable segment that have no
// statistics yet.
func (t *Table) noteVersions(seg *segment) {
	if t.statsQ == nil {
		return
	}
	for _, c := range seg.Changes {
		r := c.row
		if c.del || r.ObjectType != TypeTableVersion || r.Schema != "" || r.ManifestPath == "" {
			continue
		}
		select {
		case t.statsQ <- versionStats{ID: r.ObjectID, Branch: r.Branch, Version: r.TableVersion, ManifestPath: r.ManifestPath, ManifestSize: r.ManifestSize}:
		default:
			t.log.Debug("manifesttable: version statistics queue full; left without", "table", r.ObjectID, "version", r.TableVersion)
		}
	}
}

// statsReader reads the manifests of noted versions and appends their
// statistics, a batch at a time, until the table closes.
func (t *Table) statsReader() {
	defer t.runDone.Done()
	ctx, cancel := t.untilClosed()
	defer cancel()
	for {
		var batch []versionStats
		select {
		case <-ctx.Done():
			return
		case j := <-t.statsQ:
			batch = append(batch, j)
		}
		// Gather for a while: statistics are for people, not commits, and
		// each append is a sequence and a segment more for the
		// materializer, which commits share.
		gather := time.NewTimer(statsLinger)
	collect:
		for len(batch) < statsBatch {
			select {
			case j := <-t.statsQ:
				batch = append(batch, j)
			case <-gather.C:
				break collect
			case <-ctx.Done():
				gather.Stop()
				return
			}
		}
		gather.Stop()
		var args []any
		for _, j := range batch {
			if err := t.readStats(ctx, &j); err != nil {
				t.log.Debug("manifesttable: no statistics for a version", "table", j.ID, "branch", j.Branch,
					"version", j.Version, "manifest", j.ManifestPath, "err", err)
				continue
			}
			b, err := json.Marshal(j)
			if err != nil {
				continue
			}
			args = append(args, commitlog.Stats, string(b))
		}
		if len(args) == 0 {
			continue
		}
		if _, err := t.appendEntries(ctx, args); err != nil && ctx.Err() == nil {
			t.log.Debug("manifesttable: appending version statistics", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// readStats fills j from its version's manifest.
func (t *Table) readStats(ctx context.Context, j *versionStats) error {
	m, err := lancemanifest.Fetch(ctx, t.cfg.Objects, j.ManifestPath, int64(j.ManifestSize))
	if err != nil {
		return err
	}
	schema, err := json.Marshal(m.Schema())
	if err != nil {
		return err
	}
	j.NumRows, j.NumFragments, j.DataBytes, j.Schema = m.Rows(), uint64(len(m.Fragments)), m.DataBytes(), string(schema)
	return nil
}

// statsChange turns a stats entry into the change of its version row:
// none when the row is gone or now names another manifest.
func (t *Table) statsChange(out []change, seq uint64, payload string) (change, bool) {
	var j versionStats
	if json.Unmarshal([]byte(payload), &j) != nil || j.Schema == "" || objstore.ValidateKey(j.ManifestPath) != nil {
		return change{}, false
	}
	k := Key{Type: TypeTableVersion, ID: j.ID, Branch: j.Branch, Version: j.Version}
	r, seen, ok := lastChange(out, k)
	if !seen {
		r, ok = t.versionRow(j.ID, j.Branch, j.Version)
	}
	if !ok || r.ManifestPath != j.ManifestPath {
		return change{}, false
	}
	r.NumRows, r.NumFragments, r.DataBytes, r.Schema = j.NumRows, j.NumFragments, j.DataBytes, j.Schema
	return change{seq: seq, row: r}, true
}

// versionRow is the current version row of a table's branch.
func (t *Table) versionRow(id, branch string, v uint64) (Row, bool) {
	t.idx.RLock()
	defer t.idx.RUnlock()
	k := verKey(id, branch)
	vs := t.idx.rows.vers[k]
	i, ok := findVersion(vs, v)
	if !ok {
		return Row{}, false
	}
	return vs[i].row(k), true
}
