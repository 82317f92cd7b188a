package manifesttable

import (
	"fmt"
	"testing"
	"time"

	"github.com/flightns/flightns/internal/sqlengine"
)

// BenchmarkApplySegment measures what the SQL engine spends on one
// segment of the shape a lone LanceDB writer makes: a few new versions,
// and as many versions before them whose statistics arrived (each
// replaces its row).
func BenchmarkApplySegment(b *testing.B) {
	for _, per := range []int{1, 20} {
		b.Run(fmt.Sprintf("versions=%d", per), func(b *testing.B) {
			e, err := openEngine(sqlengine.Config{MemoryLimit: "1GB"})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = e.close() }()
			seq, ver := uint64(0), uint64(0)
			row := func(v uint64, stats bool) Row {
				r := Row{ObjectID: "ns$t", ObjectType: TypeTableVersion, TableVersion: v,
					ManifestPath: fmt.Sprintf("t.lance/_versions/%d.manifest", v), ManifestSize: 900, CommittedAt: time.Unix(1e9, 0)}
				if stats {
					r.NumRows, r.NumFragments, r.DataBytes = v, v, 100*v
				}
				return r
			}
			b.ResetTimer()
			for range b.N {
				seg := &segment{First: seq + 1}
				for range per {
					ver++
					seq++
					seg.Changes = append(seg.Changes, change{seq: seq, row: row(ver, false)})
					if ver > uint64(per) {
						seq++
						seg.Changes = append(seg.Changes, change{seq: seq, row: row(ver-uint64(per), true), existed: true})
					}
				}
				seg.Last = seq
				if err := e.applySegment(seg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
