package manifesttable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/objstore"
)

// Where __manifest lives under the catalog root.
const (
	Prefix         = "__manifest/"
	logPrefix      = Prefix + "_log/"
	snapshotPrefix = Prefix + "_snapshots/"
)

// errSegmentExists: another materializer wrote the segment starting at
// this sequence first.
var errSegmentExists = errors.New("manifesttable: a segment starting at this sequence exists")

// segment is one group commit: the changes of catalog sequences First
// through Last, in order. Every sequence in the range is covered even when
// it changed no row.
type segment struct {
	First, Last uint64
	Changes     []change
	// Events are the change feed's events of the sequences, in order
	// (kept in the file's metadata, metaEvents).
	Events []api.Event
	// LostFirst..LostLast (0: none) are sequences whose log entries were
	// lost; their rows were re-derived from storage where possible, and
	// whoever waited for one of them is told it was lost.
	LostFirst, LostLast uint64

	// reset, in the SQL engine's queue only, replaces everything the
	// engine holds with a snapshot's rows (a replica that fell behind a
	// compaction starts again from the snapshot).
	reset *frozen
}

func segmentKey(first uint64) string { return fmt.Sprintf("%s%020d.parquet", logPrefix, first) }

func snapshotKey(seq uint64) string { return fmt.Sprintf("%s%020d.parquet", snapshotPrefix, seq) }

// seqOfKey parses the sequence in a segment or snapshot key.
func seqOfKey(key string) (uint64, bool) {
	name := strings.TrimSuffix(path.Base(key), ".parquet")
	if len(name) != 20 || !strings.HasSuffix(key, ".parquet") {
		return 0, false
	}
	n, err := strconv.ParseUint(name, 10, 64)
	return n, err == nil
}

// storage reads and writes __manifest's objects. Every write is
// create-only: a segment or snapshot, once written, never changes.
type storage struct {
	objs    *objstore.Store
	catalog string // written into every file, checked on every read
}

// writeSegment writes seg create-only; errSegmentExists if another writer
// was first.
func (s *storage) writeSegment(ctx context.Context, seg *segment) error {
	extra, raw := Columns{}, map[string]arrow.DataType{}
	rows := make([]Row, len(seg.Changes))
	for i := range seg.Changes {
		rows[i] = seg.Changes[i].row
		for k, v := range rows[i].Extra {
			if r, ok := v.(Raw); ok {
				raw[k] = r.Type
			}
		}
	}
	if err := extra.merge(stripRaw(rows)); err != nil {
		return err
	}
	kv := map[string]string{
		metaFormat: formatV1, metaCatalog: s.catalog,
		metaFirstSeq: strconv.FormatUint(seg.First, 10), metaLastSeq: strconv.FormatUint(seg.Last, 10),
		metaLost: fmt.Sprintf("%d-%d", seg.LostFirst, seg.LostLast),
	}
	if len(seg.Events) > 0 {
		b, err := json.Marshal(seg.Events)
		if err != nil {
			return err
		}
		kv[metaEvents] = string(b)
	}
	data, err := encodeParquet(Schema(extra, raw, true), nil, seg.Changes, kv)
	if err != nil {
		return err
	}
	err = s.objs.PutIfAbsent(ctx, segmentKey(seg.First), data)
	if errors.Is(err, objstore.ErrAlreadyExists) {
		return errSegmentExists
	}
	return err
}

// stripRaw returns rows whose Extra maps omit Raw values (their columns
// are typed by the Raw itself).
func stripRaw(rows []Row) []Row {
	out := rows
	for i := range rows {
		for _, v := range rows[i].Extra {
			if _, ok := v.(Raw); ok {
				out = append([]Row(nil), rows...)
				for j := range out {
					if len(out[j].Extra) == 0 {
						continue
					}
					m := map[string]any{}
					for k, v := range out[j].Extra {
						if _, raw := v.(Raw); !raw {
							m[k] = v
						}
					}
					out[j].Extra = m
				}
				return out
			}
		}
	}
	return out
}

// readSegment reads the segment starting at first.
func (s *storage) readSegment(ctx context.Context, first uint64) (*segment, error) {
	data, err := s.objs.Get(ctx, segmentKey(first))
	if err != nil {
		return nil, err
	}
	pf, err := decodeParquet(ctx, data)
	if err != nil {
		return nil, fmt.Errorf("segment %d: %w", first, err)
	}
	if c := pf.kv[metaCatalog]; c != s.catalog {
		return nil, fmt.Errorf("manifesttable: segment %d belongs to catalog %q, not %q: one root holds one catalog", first, c, s.catalog)
	}
	f, err1 := strconv.ParseUint(pf.kv[metaFirstSeq], 10, 64)
	l, err2 := strconv.ParseUint(pf.kv[metaLastSeq], 10, 64)
	if err1 != nil || err2 != nil || f != first || l < f {
		return nil, fmt.Errorf("manifesttable: segment %d has a bad sequence range (%q..%q)", first, pf.kv[metaFirstSeq], pf.kv[metaLastSeq])
	}
	seg := &segment{First: f, Last: l, Changes: pf.changes}
	if evs, ok := pf.kv[metaEvents]; ok {
		if err := json.Unmarshal([]byte(evs), &seg.Events); err != nil {
			return nil, fmt.Errorf("manifesttable: segment %d: its events are not JSON: %w", first, err)
		}
	}
	if lost, ok := pf.kv[metaLost]; ok {
		if _, err := fmt.Sscanf(lost, "%d-%d", &seg.LostFirst, &seg.LostLast); err != nil {
			return nil, fmt.Errorf("manifesttable: segment %d: bad lost range %q", first, lost)
		}
	}
	return seg, nil
}

// listSegments lists the segments' first sequences, ascending, with when
// each was written.
func (s *storage) listSegments(ctx context.Context) (firsts []uint64, written []time.Time, err error) {
	for a, err := range s.objs.List(ctx, logPrefix) {
		if err != nil {
			return nil, nil, err
		}
		if n, ok := seqOfKey(a.Key); ok {
			firsts, written = append(firsts, n), append(written, a.ModTime)
		}
	}
	return firsts, written, nil
}

// listSeqs lists the sequences of the objects under prefix, ascending.
func (s *storage) listSeqs(ctx context.Context, prefix string) ([]uint64, error) {
	var out []uint64
	for a, err := range s.objs.List(ctx, prefix) {
		if err != nil {
			return nil, err
		}
		if n, ok := seqOfKey(a.Key); ok {
			out = append(out, n)
		}
	}
	return out, nil
}

// snapshotReader streams a snapshot's record batches.
type snapshotReader struct {
	Seq   uint64
	pf    *file.Reader
	rr    pqarrow.RecordReader
	Extra Columns
	Raw   map[string]arrow.DataType
}

func (r *snapshotReader) Schema() *arrow.Schema { return r.rr.Schema() }

// Next returns the next batch, or nil at the end. A batch is valid until
// the next call.
func (r *snapshotReader) Next() (arrow.RecordBatch, error) {
	rec, err := r.rr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	return rec, nil
}

func (r *snapshotReader) Close() {
	r.rr.Release()
	_ = r.pf.Close()
}

// openSnapshot opens the snapshot at seq.
func (s *storage) openSnapshot(ctx context.Context, seq uint64) (*snapshotReader, error) {
	data, err := s.objs.Get(ctx, snapshotKey(seq))
	if err != nil {
		return nil, err
	}
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("manifesttable: snapshot %d is not Parquet: %w", seq, err)
	}
	var got, catalog string
	for _, kv := range pf.MetaData().KeyValueMetadata() {
		if kv.Key == metaSeq && kv.Value != nil {
			got = *kv.Value
		}
		if kv.Key == metaCatalog && kv.Value != nil {
			catalog = *kv.Value
		}
	}
	if catalog != s.catalog {
		_ = pf.Close()
		return nil, fmt.Errorf("manifesttable: snapshot %d belongs to catalog %q, not %q: one root holds one catalog", seq, catalog, s.catalog)
	}
	if got != strconv.FormatUint(seq, 10) {
		_ = pf.Close()
		return nil, fmt.Errorf("manifesttable: snapshot %d says it is at sequence %q", seq, got)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: rowGroupRows}, memory.DefaultAllocator)
	if err != nil {
		_ = pf.Close()
		return nil, err
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		_ = pf.Close()
		return nil, err
	}
	sr := &snapshotReader{Seq: seq, pf: pf, rr: rr}
	sr.Extra, sr.Raw = schemaColumns(rr.Schema())
	return sr, nil
}

// schemaColumns are the extra columns of a __manifest schema: those of a
// type flightns models, and the others (kept raw).
func schemaColumns(s *arrow.Schema) (Columns, map[string]arrow.DataType) {
	extra, raw := Columns{}, map[string]arrow.DataType{}
	for _, f := range s.Fields() {
		if baseColumns[f.Name] {
			continue
		}
		if t, ok := columnTypeOf(f.Type); ok {
			extra[f.Name] = t
		} else {
			raw[f.Name] = f.Type
		}
	}
	return extra, raw
}

// writeSnapshot writes the state at seq, read from batches (whose schema
// is the __manifest schema; each is released once written), create-only. A snapshot that exists already is
// left as it is (another compaction wrote the same state).
func (s *storage) writeSnapshot(ctx context.Context, seq uint64, schema *arrow.Schema, next func() (arrow.RecordBatch, error)) error {
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDictionaryDefault(true),
		parquet.WithMaxRowGroupLength(rowGroupRows))
	fw, err := pqarrow.NewFileWriter(schema, &buf, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return err
	}
	for {
		rec, err := next()
		if err != nil {
			_ = fw.Close()
			return err
		}
		if rec == nil {
			break
		}
		err = fw.WriteBuffered(rec)
		rec.Release()
		if err != nil {
			_ = fw.Close()
			return err
		}
	}
	if err := fw.AppendKeyValueMetadata(metaFormat, formatV1); err != nil {
		return err
	}
	if err := fw.AppendKeyValueMetadata(metaCatalog, s.catalog); err != nil {
		return err
	}
	if err := fw.AppendKeyValueMetadata(metaSeq, strconv.FormatUint(seq, 10)); err != nil {
		return err
	}
	if err := fw.Close(); err != nil {
		return err
	}
	err = s.objs.PutIfAbsent(ctx, snapshotKey(seq), buf.Bytes())
	if errors.Is(err, objstore.ErrAlreadyExists) {
		return nil
	}
	return err
}

// ImportSnapshot writes a snapshot of catalog at sequence seq into the root,
// from rows that next yields in batches until it returns none: a bulk import
// of an existing catalog (and the benchmarks' way to make millions of rows).
// Rows must have unique keys.
func ImportSnapshot(ctx context.Context, objs *objstore.Store, catalog string, seq uint64, extra Columns, next func() ([]Row, error)) error {
	st := storage{objs: objs, catalog: catalog}
	schema := Schema(extra, nil, false)
	return st.writeSnapshot(ctx, seq, schema, func() (arrow.RecordBatch, error) {
		rows, err := next()
		if err != nil || len(rows) == 0 {
			return nil, err
		}
		return buildRecord(schema, rows, nil), nil
	})
}
