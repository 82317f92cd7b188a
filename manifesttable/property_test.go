package manifesttable

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"pgregory.net/rapid"

	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/objstore"
)

// The reference model: the rows current after each sequence, by key.
type model map[Key]Row

func (m model) apply(cs []Change) model {
	out := make(model, len(m)+len(cs))
	for k, v := range m {
		out[k] = v
	}
	for _, c := range cs {
		k := c.Row.Key()
		if c.Delete {
			delete(out, k)
		} else {
			out[k] = c.Row
		}
	}
	return out
}

// render prints the model's rows the way rowsOf prints the table's:
// columns in order, NULL as ∅, values as Arrow prints them.
func (m model) render(t *testing.T, tb *Table) []string {
	var rows []Row
	for _, r := range m {
		rows = append(rows, r)
	}
	extra := Columns{}
	_ = tb.eng.db.Write(func(*sqlengine.Writer) error {
		for k, v := range tb.eng.extra {
			extra[k] = v
		}
		return nil
	})
	rec := buildRecord(Schema(extra, nil, false), rows, nil)
	defer rec.Release()
	var out []string
	for i := 0; i < int(rec.NumRows()); i++ {
		var cells []string
		for c := 0; c < int(rec.NumCols()); c++ {
			cells = append(cells, cell(rec.Column(c), i))
		}
		out = append(out, strings.Join(cells, "|"))
	}
	sort.Strings(out)
	return out
}

func genRow(t *rapid.T) Row {
	ids := []string{"a", "a$b", "a$b$c", "d", "d$e"}
	id := rapid.SampledFrom(ids).Draw(t, "id")
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rapid.IntRange(0, 1000).Draw(t, "min")) * time.Minute)
	switch rapid.IntRange(0, 2).Draw(t, "type") {
	case 0:
		return Row{ObjectType: TypeNamespace, ObjectID: id, Metadata: fmt.Sprintf(`{"n":%d}`, rapid.IntRange(0, 9).Draw(t, "meta"))}
	case 1:
		r := Row{ObjectType: TypeTable, ObjectID: id, Location: "loc_" + id, CommittedAt: at}
		if rapid.Bool().Draw(t, "partitioned") {
			r.HasSpecID, r.SpecID = true, int32(rapid.IntRange(1, 3).Draw(t, "spec"))
			r.Extra = map[string]any{
				"partition_field_1": rapid.Int32Range(-5, 5).Draw(t, "p1"),
				"partition_field_2": rapid.SampledFrom([]string{"eu", "us", ""}).Draw(t, "p2"),
				"partition_field_3": arrow.Date32(rapid.Int32Range(0, 30000).Draw(t, "p3")),
			}
		}
		return r
	default:
		v := uint64(rapid.IntRange(1, 6).Draw(t, "version"))
		branch := rapid.SampledFrom([]string{"", "", "dev", "a/b"}).Draw(t, "branch")
		return Row{ObjectType: TypeTableVersion, ObjectID: id, Branch: branch, TableVersion: v,
			ManifestPath: fmt.Sprintf("loc_%s/_versions/%d.manifest", id, v), ManifestSize: uint64(rapid.IntRange(1, 999).Draw(t, "size")),
			CommittedAt: at, TxnID: rapid.SampledFrom([]string{"", "tx1"}).Draw(t, "txn")}
	}
}

// A random sequence of mutations applied to the table equals the reference
// model at every sequence number, and again after a restart.
func TestMutationsMatchAReferenceModelAtEverySequence(t *testing.T) {
	e := newTenv(t)
	rapid.Check(t, func(rt *rapid.T) {
		e.catalog = fmt.Sprintf("prop%d", catalogN.Add(1))
		e.openEpoch()
		objs, err := objstore.Open(context.Background(), "mem://") // one root per catalog
		if err != nil {
			rt.Fatal(err)
		}
		e.objs = objs
		tb := e.open()
		defer func() { _ = tb.Close() }()
		states := map[uint64]model{}
		cur := model{}
		steps := rapid.IntRange(1, 12).Draw(rt, "steps")
		for range steps {
			var cs []Change
			for range rapid.IntRange(1, 4).Draw(rt, "changes") {
				r := genRow(rt)
				if rapid.IntRange(0, 3).Draw(rt, "delete") == 0 {
					cs = append(cs, Change{Delete: true, Row: Row{ObjectType: r.ObjectType, ObjectID: r.ObjectID, TableVersion: r.TableVersion}})
				} else {
					cs = append(cs, Change{Row: r})
				}
			}
			seq := commit(t, tb, cs...)
			cur = cur.apply(cs)
			states[seq] = cur
		}
		for seq, m := range states {
			got := allRows(t, tb, seq)
			if want := m.render(t, tb); !slices.Equal(got, want) {
				rt.Fatalf("at sequence %d:\n got:\n%s\nwant:\n%s", seq, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
		if rapid.Bool().Draw(rt, "compact") {
			if err := tb.Compact(context.Background()); err != nil {
				rt.Fatal(err)
			}
		}
		want := allRows(t, tb, 0)
		_ = tb.Close()
		again := e.open()
		defer func() { _ = again.Close() }()
		if got := allRows(t, again, 0); !slices.Equal(got, want) {
			rt.Fatalf("after a restart:\n got %v\nwant %v", got, want)
		}
	})
}
