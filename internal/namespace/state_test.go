package namespace

import (
	"context"
	"strings"
	"testing"

	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/manifesttable"
)

// A catalog handed the Redis state of another catalog refuses to open:
// its scripts would run on the other catalog's keys.
func TestOpenRefusesAnotherCatalogsState(t *testing.T) {
	e := newTenv(t)
	other := redisstate.New(e.rdb, e.catalog+"-other", 0)
	defer other.Close()
	_, err := Open(context.Background(), Config{Objects: e.objs, Redis: e.rdb, Catalog: e.catalog, State: other, Logger: quiet,
		Table: manifesttable.Config{Engine: sqlengine.Config{MemoryLimit: "1GB"}}})
	if err == nil || !strings.Contains(err.Error(), "Config.State is the state of catalog") {
		t.Fatalf("Open with another catalog's state: %v", err)
	}
}
