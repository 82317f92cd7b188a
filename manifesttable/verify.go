package manifesttable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flightns/flightns/objstore"
)

// ProblemKind says what is wrong with a file of __manifest's history.
type ProblemKind string

// The kinds of file problems LoadState finds.
const (
	// ProblemUnreadable: the file is not Parquet, its rows do not decode,
	// its metadata (sequence range, lost range, snapshot sequence) is
	// malformed or disagrees with its name, its columns conflict with the
	// ones before it, or its name is not <seq:020>.parquet (the loader
	// ignores it).
	ProblemUnreadable ProblemKind = "unreadable"
	// ProblemForeign: the file says it belongs to another catalog.
	ProblemForeign ProblemKind = "foreign"
	// ProblemGap: the log segments after the newest snapshot do not
	// continue it sequence by sequence (a hole, an overlap, or a segment
	// that straddles the snapshot); a loader stops there.
	ProblemGap ProblemKind = "gap"
)

// FileProblem is one segment or snapshot that a loader cannot use as it
// is.
type FileProblem struct {
	Key    string // the object's key under the root
	Kind   ProblemKind
	Detail string
}

func (p FileProblem) String() string { return fmt.Sprintf("%s: %s: %s", p.Kind, p.Key, p.Detail) }

// State is __manifest as object storage holds it: the newest readable
// snapshot plus every log segment that continues it, read straight from
// the files into an index of its own. It is built without the SQL engine
// and without any running Table (LoadState), so it is what a verifier
// compares the rest of the catalog with.
type State struct {
	Catalog string
	// Snapshot is the sequence of the snapshot the state starts from (0:
	// none; the state starts from the empty table).
	Snapshot uint64
	// Seq is the catalog sequence the state stands at: the snapshot and
	// the segments that continue it without a hole.
	Seq uint64
	// Snapshots and Segments count the files checked (every one under
	// __manifest/_snapshots and _log); Applied counts the segments the
	// state applied on top of its snapshot.
	Snapshots, Segments, Applied int
	// Problems lists every file that does not parse, belongs to another
	// catalog, or breaks the sequence chain, in key order.
	Problems []FileProblem

	ix index
}

// errVanished: a listed file was deleted before it was read (a compaction
// pruned it meanwhile); the load starts again.
var errVanished = errors.New("manifesttable: a __manifest file vanished while it was read")

// LoadState reads the catalog's __manifest from storage alone: every
// snapshot and every segment is read and checked (it parses, it belongs to
// catalog, its metadata agrees with its name); the newest snapshot that
// reads whole is loaded, then every segment after it, in order, as long as
// they continue it without a hole. It never opens the SQL engine and never
// looks at a running Table. A file that cannot be used is reported in
// State.Problems, not as an error; the error is for storage that does not
// answer. Files pruned by a concurrent compaction make it start over.
func LoadState(ctx context.Context, objs *objstore.Store, catalog string) (*State, error) {
	if objs == nil || catalog == "" {
		return nil, errors.New("manifesttable: LoadState needs a store and a catalog")
	}
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		var s *State
		s, err = loadState(ctx, storage{objs: objs, catalog: catalog})
		if !errors.Is(err, errVanished) {
			return s, err
		}
	}
	return nil, err
}

func loadState(ctx context.Context, st storage) (*State, error) {
	s := &State{Catalog: st.catalog, ix: newIndex()}
	snaps, err := s.listFiles(ctx, st, snapshotPrefix)
	if err != nil {
		return nil, err
	}
	firsts, err := s.listFiles(ctx, st, logPrefix)
	if err != nil {
		return nil, err
	}

	// Snapshots, newest first: the first that reads whole is the base;
	// the others are only checked.
	based := false
	for i := len(snaps) - 1; i >= 0; i-- {
		seq := snaps[i]
		s.Snapshots++
		var into *index
		if !based {
			x := newIndex()
			into = &x
		}
		p, err := readSnapshotChecked(ctx, st, seq, into)
		if err != nil {
			return nil, err
		}
		if p != nil {
			s.Problems = append(s.Problems, *p)
			continue
		}
		if !based {
			based = true
			s.ix, s.Snapshot, s.Seq = *into, seq, seq
			s.ix.seq = seq
		}
	}

	// Segments, in order: those after the base continue it.
	broken := false
	for _, first := range firsts {
		s.Segments++
		key := segmentKey(first)
		seg, p, err := readSegmentChecked(ctx, st, first)
		if err != nil {
			return nil, err
		}
		if p != nil {
			s.Problems = append(s.Problems, *p)
			if first > s.Seq {
				broken = true // the state cannot go past an unreadable segment
			}
			continue
		}
		switch {
		case first <= s.Snapshot:
			if seg.Last > s.Snapshot {
				s.Problems = append(s.Problems, FileProblem{Key: key, Kind: ProblemGap,
					Detail: fmt.Sprintf("segment %d..%d straddles the snapshot at %d: a loader skips it and stops after the snapshot", seg.First, seg.Last, s.Snapshot)})
				broken = true
			}
		case broken:
			// Checked; the state stopped before it.
		case first != s.Seq+1:
			detail := fmt.Sprintf("segment %d..%d follows sequence %d: sequences %d..%d are in no segment", seg.First, seg.Last, s.Seq, s.Seq+1, first-1)
			if first <= s.Seq {
				detail = fmt.Sprintf("segment %d..%d overlaps the segment before it (which ends at %d)", seg.First, seg.Last, s.Seq)
			}
			s.Problems = append(s.Problems, FileProblem{Key: key, Kind: ProblemGap, Detail: detail})
			broken = true
		default:
			if err := s.ix.applySegment(seg); err != nil {
				s.Problems = append(s.Problems, FileProblem{Key: key, Kind: ProblemUnreadable, Detail: err.Error()})
				broken = true
				continue
			}
			s.Seq = seg.Last
			s.Applied++
		}
	}
	slices.SortFunc(s.Problems, func(a, b FileProblem) int { return strings.Compare(a.Key, b.Key) })
	return s, nil
}

// listFiles lists the sequences of the files under prefix, ascending;
// an object there whose name is not a sequence is a problem (a loader
// ignores it).
func (s *State) listFiles(ctx context.Context, st storage, prefix string) ([]uint64, error) {
	var out []uint64
	for a, err := range st.objs.List(ctx, prefix) {
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(a.Key, "/") {
			continue // a directory marker
		}
		n, ok := seqOfKey(a.Key)
		if !ok {
			s.Problems = append(s.Problems, FileProblem{Key: a.Key, Kind: ProblemUnreadable,
				Detail: "not named <sequence:020>.parquet: loaders ignore it"})
			continue
		}
		out = append(out, n)
	}
	return out, nil
}

// get reads a listed file; errVanished when it is gone.
func get(ctx context.Context, st storage, key string) ([]byte, error) {
	data, err := st.objs.Get(ctx, key)
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, errVanished
	}
	return data, err
}

// readSegmentChecked reads the segment starting at first, as readSegment
// does, telling a file that cannot be used (a problem) from storage that
// does not answer (an error).
func readSegmentChecked(ctx context.Context, st storage, first uint64) (*segment, *FileProblem, error) {
	key := segmentKey(first)
	data, err := get(ctx, st, key)
	if err != nil {
		return nil, nil, err
	}
	bad := func(kind ProblemKind, format string, args ...any) (*segment, *FileProblem, error) {
		return nil, &FileProblem{Key: key, Kind: kind, Detail: fmt.Sprintf(format, args...)}, nil
	}
	pf, err := decodeParquet(ctx, data)
	if err != nil {
		return bad(ProblemUnreadable, "%v", err)
	}
	if c := pf.kv[metaCatalog]; c != st.catalog {
		return bad(ProblemForeign, "written for catalog %q, not %q", c, st.catalog)
	}
	f, err1 := strconv.ParseUint(pf.kv[metaFirstSeq], 10, 64)
	l, err2 := strconv.ParseUint(pf.kv[metaLastSeq], 10, 64)
	if err1 != nil || err2 != nil || f != first || l < f {
		return bad(ProblemUnreadable, "bad sequence range %q..%q for a segment named %d", pf.kv[metaFirstSeq], pf.kv[metaLastSeq], first)
	}
	seg := &segment{First: f, Last: l, Changes: pf.changes}
	if lost, ok := pf.kv[metaLost]; ok {
		if _, err := fmt.Sscanf(lost, "%d-%d", &seg.LostFirst, &seg.LostLast); err != nil {
			return bad(ProblemUnreadable, "bad lost range %q", lost)
		}
	}
	for _, c := range seg.Changes {
		if c.seq != 0 && (c.seq < f || c.seq > l) {
			return bad(ProblemUnreadable, "a change of %s carries sequence %d, outside the segment's %d..%d", c.row.Key(), c.seq, f, l)
		}
	}
	return seg, nil, nil
}

// readSnapshotChecked reads the snapshot at seq, as openSnapshot and
// loadSnapshot do, into x (nil: only check it), telling a file that cannot
// be used (a problem) from storage that does not answer (an error).
func readSnapshotChecked(ctx context.Context, st storage, seq uint64, x *index) (*FileProblem, error) {
	key := snapshotKey(seq)
	data, err := get(ctx, st, key)
	if err != nil {
		return nil, err
	}
	bad := func(kind ProblemKind, format string, args ...any) (*FileProblem, error) {
		return &FileProblem{Key: key, Kind: kind, Detail: fmt.Sprintf(format, args...)}, nil
	}
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		return bad(ProblemUnreadable, "not a Parquet file: %v", err)
	}
	defer func() { _ = pf.Close() }()
	kv := map[string]string{}
	for _, m := range pf.MetaData().KeyValueMetadata() {
		if m.Value != nil {
			kv[m.Key] = *m.Value
		}
	}
	if c := kv[metaCatalog]; c != st.catalog {
		return bad(ProblemForeign, "written for catalog %q, not %q", c, st.catalog)
	}
	if got := kv[metaSeq]; got != strconv.FormatUint(seq, 10) {
		return bad(ProblemUnreadable, "says it is at sequence %q, its name says %d", got, seq)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: rowGroupRows}, memory.DefaultAllocator)
	if err != nil {
		return bad(ProblemUnreadable, "%v", err)
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return bad(ProblemUnreadable, "%v", err)
	}
	defer rr.Release()
	if x != nil {
		extra, raw := schemaColumns(rr.Schema())
		for k, v := range extra {
			x.extra[k] = v
		}
		for k, v := range raw {
			x.raw[k] = v
		}
	}
	sr := &snapshotReader{Seq: seq, pf: pf, rr: rr}
	for {
		rec, err := sr.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return bad(ProblemUnreadable, "%v", err)
		}
		if rec == nil {
			return nil, nil
		}
		changes, err := readRecord(rec, Columns{}, map[string]arrow.DataType{})
		if err != nil {
			return bad(ProblemUnreadable, "%v", err)
		}
		if x == nil {
			continue
		}
		rows := make([]Row, len(changes))
		for i := range changes {
			rows[i] = changes[i].row
		}
		if err := x.noteColumns(rows); err != nil {
			return bad(ProblemUnreadable, "%v", err)
		}
		for _, c := range changes {
			c.del = false
			x.apply(c)
		}
	}
}

// applySegment applies a segment that follows the index's state, as
// acceptLocked does.
func (x *index) applySegment(seg *segment) error {
	rows := make([]Row, 0, len(seg.Changes))
	for _, c := range seg.Changes {
		if !c.del {
			rows = append(rows, c.row)
		}
	}
	if err := x.noteColumns(rows); err != nil {
		return fmt.Errorf("segment %d..%d: %w", seg.First, seg.Last, err)
	}
	for _, c := range seg.Changes {
		x.apply(c)
	}
	x.seq = seg.Last
	return nil
}

// Objects returns every namespace and table row (and any row of another
// type found in storage), sorted by key.
func (s *State) Objects() []Row {
	out := make([]Row, 0, len(s.ix.objects))
	for _, r := range s.ix.objects {
		out = append(out, r)
	}
	sortRows(out)
	return out
}

// Object returns the namespace or table row with that key.
func (s *State) Object(typ, id string) (Row, bool) {
	r, ok := s.ix.objects[Key{Type: typ, ID: id}]
	return r, ok
}

// TableByLocation returns the id of the table whose directory is loc.
func (s *State) TableByLocation(loc string) (string, bool) {
	id, ok := s.ix.byLoc[loc]
	return id, ok
}

// VersionTables returns the object ids that have table_version rows on
// main, sorted (whether or not a table row has that id).
func (s *State) VersionTables() []string {
	out := make([]string, 0, len(s.ix.vers))
	for k := range s.ix.vers {
		if _, branch := splitVerKey(k); branch == "" {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// VersionRows returns the table_version rows of object id on main,
// ascending.
func (s *State) VersionRows(id string) []Row { return s.ix.versionRows(id) }

// Branches returns the Lance branches of object id that have
// table_version rows, sorted.
func (s *State) Branches(id string) []string { return s.ix.branches(id) }

// BranchVersionRows returns the table_version rows of object id on a
// branch ("" is main), ascending.
func (s *State) BranchVersionRows(id, branch string) []Row {
	return s.ix.versionRows(verKey(id, branch))
}

// HasBranchVersion reports whether object id has a table_version row of
// version v on a branch ("" is main).
func (s *State) HasBranchVersion(id, branch string, v uint64) bool {
	return s.ix.hasVersion(verKey(id, branch), v)
}

// HasVersion reports whether object id has a table_version row of
// version v.
func (s *State) HasVersion(id string, v uint64) bool { return s.ix.hasVersion(id, v) }

// Rows counts the current rows.
func (s *State) Rows() int { return len(s.ix.objects) + s.ix.nvers }
