package namespace

import (
	"context"
	"fmt"
	"testing"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/manifesttable"
)

// Config.LogMaxLen reaches every script that appends to the commit log:
// the namespace scripts, the claims and the materializer's statistics
// entries all trim the log to it (XADD MAXLEN ~ trims whole stream nodes
// of 100 entries, so the bound is loose but far below what was written).
func TestLogMaxLenBoundsTheLogWhoeverAppends(t *testing.T) {
	e := newTenv(t)
	_ = e.s.Close()
	ctx := context.Background()
	s, err := Open(ctx, Config{Objects: e.objs, Redis: e.rdb, Catalog: e.catalog, Logger: quiet, LogMaxLen: 10, Table: manifesttable.Config{Engine: sqlengine.Config{MemoryLimit: "1GB"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	const n = 400
	for i := range n {
		if _, err := s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id(fmt.Sprintf("ns%d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	l, err := e.rdb.XLen(ctx, string(redisstate.KeysOf(e.catalog).Log())).Result()
	if err != nil {
		t.Fatal(err)
	}
	if l >= n/2 {
		t.Fatalf("the commit log holds %d entries after %d catalog mutations with LogMaxLen 10: the namespace scripts do not trim to it", l, n)
	}
}
