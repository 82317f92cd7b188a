package manifesttable

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

func BenchmarkEncodeSegmentProps(b *testing.B) {
	cs := benchChanges(1)
	schema := Schema(Columns{}, nil, true)
	for name, props := range map[string]*parquet.WriterProperties{
		"zstd-dict-stats": parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDictionaryDefault(true)),
		"zstd-nodict":     parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDictionaryDefault(false)),
		"none-nodict":     parquet.NewWriterProperties(parquet.WithDictionaryDefault(false)),
		"none-nodict-nostats": parquet.NewWriterProperties(parquet.WithDictionaryDefault(false), parquet.WithStats(false)),
		"zstd-nodict-nostats": parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDictionaryDefault(false), parquet.WithStats(false)),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var buf bytes.Buffer
				fw, _ := pqarrow.NewFileWriter(schema, &buf, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
				rec := buildRecord(schema, nil, cs)
				if err := fw.Write(rec); err != nil {
					b.Fatal(err)
				}
				rec.Release()
				_ = fw.Close()
			}
		})
	}
}
