package manifesttable

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/internal/testutil/redistest"
	"github.com/flightns/flightns/objstore"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

var catalogN atomic.Int64

type tenv struct {
	t       testing.TB
	redis   *redistest.Server
	rdb     *redis.Client
	objs    *objstore.Store
	catalog string
}

// newTenv is a table's environment: a Redis of its own, a directory root
// (with the store options of opts[0], if given).
func newTenv(t testing.TB, opts ...objstore.Options) *tenv {
	t.Helper()
	r := redistest.Start(t)
	var o objstore.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	objs, err := objstore.OpenWith(context.Background(), "file://"+t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	e := &tenv{t: t, redis: r, rdb: r.Client(), objs: objs, catalog: fmt.Sprintf("mt%d", catalogN.Add(1))}
	e.openEpoch()
	return e
}

// openEpoch marks Redis as holding the catalog's state (redisclaim's
// recovery does this in a server).
func (e *tenv) openEpoch() {
	if err := e.rdb.Set(context.Background(), "{"+e.catalog+"}:epoch", "test", 0).Err(); err != nil {
		e.t.Fatal(err)
	}
}

func (e *tenv) open(mod ...func(*Config)) *Table {
	e.t.Helper()
	cfg := Config{Objects: e.objs, Redis: e.rdb, Catalog: e.catalog, Logger: quiet, CompactAfter: -1,
		Engine: sqlengine.Config{MemoryLimit: "1GB"}}
	for _, m := range mod {
		m(&cfg)
	}
	tb, err := Open(context.Background(), cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return tb
}

// commit appends changes and waits until they are durable.
func commit(t *testing.T, tb *Table, changes ...Change) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	seq, err := tb.Append(ctx, changes)
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.WaitDurable(ctx, seq); err != nil {
		t.Fatal(err)
	}
	if err := tb.WaitVisible(ctx, seq); err != nil {
		t.Fatal(err)
	}
	return seq
}

func put(r Row) Change { return Change{Row: r} }

func del(typ, id string, v uint64) Change {
	return Change{Delete: true, Row: Row{ObjectType: typ, ObjectID: id, TableVersion: v}}
}

// rowsOf runs a query and renders every row as one string, in order.
func rowsOf(t *testing.T, tb *Table, q string, args ...any) []string {
	t.Helper()
	res, err := tb.Query(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer res.Release()
	var out []string
	for res.Next() {
		rec := res.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			var cells []string
			for c := 0; c < int(rec.NumCols()); c++ {
				cells = append(cells, cell(rec.Column(c), i))
			}
			out = append(out, strings.Join(cells, "|"))
		}
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func cell(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "∅"
	}
	return strings.Clone(a.ValueStr(i)) // the value aliases DuckDB's memory
}

// allRows is __manifest at seq (0: newest), sorted, as strings.
func allRows(t *testing.T, tb *Table, seq uint64) []string {
	t.Helper()
	var rows []string
	if seq == 0 {
		rows = rowsOf(t, tb, `SELECT * FROM __manifest`)
	} else {
		rows = rowsOf(t, tb, `SELECT * FROM manifest_at(?)`, seq)
	}
	sort.Strings(rows)
	return rows
}

type atomic32 struct{ n atomic.Int32 }

func (a *atomic32) add() int32  { return a.n.Add(1) }
func (a *atomic32) load() int32 { return a.n.Load() }

func writeFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o644)
}
