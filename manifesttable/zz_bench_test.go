package manifesttable

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

func benchChanges(n int) []change {
	cs := make([]change, n)
	for i := range cs {
		cs[i] = change{seq: uint64(i + 1), row: Row{ObjectID: fmt.Sprintf("ns$t%d", i), ObjectType: "table_version", TableVersion: uint64(i + 1),
			ManifestPath: "abcd1234_ns$t/_versions/18446744073709551594.manifest", ManifestSize: 2000, CommittedAt: time.Now()}}
	}
	return cs
}

func BenchmarkEncodeSegment(b *testing.B) {
	for _, n := range []int{1, 8, 64} {
		cs := benchChanges(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := encodeParquet(Schema(Columns{}, nil, true), nil, cs, map[string]string{"a": "b"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

var _ = parquet.NewWriterProperties
var _ = compress.Codecs.Zstd
