package manifesttable

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/flightns/flightns/internal/commitlog"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/objstore"
)

// Version statistics. A table_version row is written when its version is
// claimed, before anyone has read its manifest; its statistics (rows,
// fragments, data bytes, schema, and for maintenance.go the small
// fragments, deleted rows and the operation of its Lance transaction)
// follow in a later sequence. The process
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
	// Absent from the entries of a process that did not read them (nil:
	// NULL in the row).
	SmallFragments *uint64 `json:"small_fragments,omitempty"`
	DeletedRows    *uint64 `json:"deleted_rows,omitempty"`
	Operation      string  `json:"operation,omitempty"`
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
		var pairs []string
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
			pairs = append(pairs, commitlog.Stats, string(b))
		}
		if len(pairs) == 0 {
			continue
		}
		if _, err := t.appendEntries(ctx, pairs); err != nil && ctx.Err() == nil {
			t.log.Debug("manifesttable: appending version statistics", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// readStats fills j from its version's manifest (and, for a manifest
// that names its transaction's file instead of holding it, that file).
func (t *Table) readStats(ctx context.Context, j *versionStats) error {
	size := int64(j.ManifestSize)
	if size <= 0 {
		a, err := t.cfg.Objects.Head(ctx, j.ManifestPath)
		if err != nil {
			return err
		}
		size = a.Size
	}
	if size > lancemanifest.MaxSize {
		return fmt.Errorf("%w: %s has %d bytes, more than the %d a manifest may have", lancemanifest.ErrNotManifest, j.ManifestPath, size, lancemanifest.MaxSize)
	}
	b, err := t.cfg.Objects.Get(ctx, j.ManifestPath)
	if err != nil {
		return err
	}
	m, err := lancemanifest.Read(b)
	if err != nil {
		return err
	}
	if err := j.fill(m); err != nil {
		return err
	}
	op, err := readOperation(ctx, t.cfg.Objects, j.ManifestPath, b)
	if err != nil {
		// The statistics stand without it: the operation stays NULL.
		t.log.Debug("manifesttable: no transaction operation for a version", "table", j.ID, "version", j.Version, "err", err)
	}
	j.Operation = op
	return nil
}

// fill sets j's statistics from its version's manifest.
func (j *versionStats) fill(m *lancemanifest.Manifest) error {
	schema, err := json.Marshal(m.Schema())
	if err != nil {
		return err
	}
	j.NumRows, j.NumFragments, j.DataBytes, j.Schema = m.Rows(), uint64(len(m.Fragments)), m.DataBytes(), string(schema)
	var small uint64
	for _, f := range m.Fragments {
		if f.PhysicalRows < SmallFragmentRows {
			small++
		}
	}
	deleted := m.DeletedRows()
	j.SmallFragments, j.DeletedRows = &small, &deleted
	return nil
}

// setOn gives row r j's statistics.
func (j *versionStats) setOn(r *Row) {
	r.NumRows, r.NumFragments, r.DataBytes, r.Schema = j.NumRows, j.NumFragments, j.DataBytes, j.Schema
	r.HasFragmentStats = j.SmallFragments != nil && j.DeletedRows != nil
	r.SmallFragments, r.DeletedRows = 0, 0
	if r.HasFragmentStats {
		r.SmallFragments, r.DeletedRows = *j.SmallFragments, *j.DeletedRows
	}
	r.Operation = internOperation(j.Operation)
}

// Where a writer of this process holds the bytes of the final manifest it
// made (on S3 it read them to copy them), the materializer takes the
// version row's statistics from them when it translates the version's
// log entry (NoteManifest): the row is then written with its statistics
// in the segment that adds it, without a read of the manifest or a
// segment more for a stats entry. The bytes are those of the final
// object (it was made from them, create-only, or found holding them), so
// the row is derived from storage as every other is. A version whose
// bytes are not here (another process's commit, a full cache, an entry
// translated before its promotion ended) gets them from the reader above.

// The bounds of the manifests noted and not yet used: the oldest go first.
const (
	recentManifests     = 1024
	recentManifestBytes = 64 << 20
)

// manifestCache holds final manifests' bytes by path until the
// materializer uses them.
type manifestCache struct {
	mu     sync.Mutex
	byPath map[string][]byte
	order  []string // paths in the order noted (some may be used already)
	bytes  int
}

// NoteManifest tells the table that the final manifest at path (a key
// relative to the catalog root) holds data: a writer of this process made
// it from those bytes. While this process materializes the log (it holds
// the lease) it keeps them, within bounds, until the version's row is
// translated; a follower's rows are another process's to translate, and
// it keeps nothing.
func (t *Table) NoteManifest(path string, data []byte) {
	c := &t.recent
	if len(data) == 0 || len(data) > recentManifestBytes/16 {
		return
	}
	t.lease.Lock()
	leading := t.lease.leading
	t.lease.Unlock()
	if !leading {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byPath == nil {
		c.byPath = map[string][]byte{}
	}
	if _, ok := c.byPath[path]; ok {
		return
	}
	c.byPath[path] = data
	c.order = append(c.order, path)
	c.bytes += len(data)
	for len(c.byPath) > recentManifests || c.bytes > recentManifestBytes {
		old := c.order[0]
		c.order = c.order[1:]
		if b, ok := c.byPath[old]; ok {
			c.bytes -= len(b)
			delete(c.byPath, old)
		}
	}
	if len(c.order) > 4*recentManifests { // used paths linger in order
		live := c.order[:0]
		for _, p := range c.order {
			if _, ok := c.byPath[p]; ok {
				live = append(live, p)
			}
		}
		c.order = live
	}
}

// clear forgets every noted manifest (the lease is lost: nothing here
// will take them).
func (c *manifestCache) clear() {
	c.mu.Lock()
	c.byPath, c.order, c.bytes = nil, nil, 0
	c.mu.Unlock()
}

// take removes and returns the bytes noted for path (nil: none).
func (c *manifestCache) take(path string) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.byPath[path]
	if ok {
		delete(c.byPath, path)
		c.bytes -= len(b)
	}
	return b
}

// noted fills a new version row's statistics from the manifest bytes a
// writer of this process noted for it, if any.
func (t *Table) noted(r *Row) {
	b := t.recent.take(r.ManifestPath)
	if b == nil || uint64(len(b)) != r.ManifestSize {
		return
	}
	m, err := lancemanifest.Read(b)
	if err != nil {
		return // not a Lance manifest: no statistics, as the reader would find
	}
	op, file, err := inlineOperation(b)
	if err == nil && op == "" && file != "" {
		return // the transaction is in a file of its own: the reader reads it
	}
	j := versionStats{Operation: op}
	if j.fill(m) != nil {
		return
	}
	j.setOn(r)
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
	j.setOn(&r)
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
