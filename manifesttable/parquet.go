package manifesttable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Parquet key-value metadata of segments and snapshots.
const (
	metaFormat   = "flightns.format"
	metaFirstSeq = "flightns.first_seq"
	metaLastSeq  = "flightns.last_seq"
	metaSeq      = "flightns.seq"
	metaCatalog  = "flightns.catalog"
	metaLost     = "flightns.lost"
	// metaEvents holds a segment's change feed events (JSON, api.Event):
	// metadata, so that readers that know no events read the rows alone.
	metaEvents = "flightns.events"
	formatV1   = "1"
)

// rowGroupRows bounds a row group, so large snapshots stream.
const rowGroupRows = 64 * 1024

// encodeParquet writes rows (or changes) as one Parquet file.
func encodeParquet(schema *arrow.Schema, rows []Row, changes []change, kv map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDictionaryDefault(true))
	fw, err := pqarrow.NewFileWriter(schema, &buf, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return nil, err
	}
	n := len(rows)
	if changes != nil {
		n = len(changes)
	}
	for start := 0; start < n || start == 0; start += rowGroupRows {
		end := min(start+rowGroupRows, n)
		var rec arrow.RecordBatch
		if changes != nil {
			rec = buildRecord(schema, nil, changes[start:end])
		} else {
			rec = buildRecord(schema, rows[start:end], nil)
		}
		err = fw.Write(rec)
		rec.Release()
		if err != nil {
			_ = fw.Close()
			return nil, err
		}
		if n == 0 {
			break
		}
	}
	for _, k := range sortedKeys(kv) {
		if err := fw.AppendKeyValueMetadata(k, kv[k]); err != nil {
			return nil, err
		}
	}
	if err := fw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// parquetFile is a decoded segment or snapshot.
type parquetFile struct {
	kv      map[string]string
	changes []change
	extra   Columns
	raw     map[string]arrow.DataType
}

// decodeParquet reads a whole Parquet file written by encodeParquet (or any
// file with the __manifest columns).
func decodeParquet(ctx context.Context, data []byte) (*parquetFile, error) {
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("manifesttable: not a Parquet file: %w", err)
	}
	defer func() { _ = pf.Close() }()
	out := &parquetFile{kv: map[string]string{}, extra: Columns{}, raw: map[string]arrow.DataType{}}
	for _, kv := range pf.MetaData().KeyValueMetadata() {
		if kv.Value != nil {
			out.kv[kv.Key] = *kv.Value
		}
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: rowGroupRows}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	for {
		rec, err := rr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		cs, err := readRecord(rec, out.extra, out.raw)
		if err != nil {
			return nil, err
		}
		out.changes = append(out.changes, cs...)
	}
	return out, nil
}
