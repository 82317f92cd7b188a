package redisclaim

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/objstore"
)

// A shared Redis state must be the configured catalog's: a Store handed
// another catalog's state is refused before it touches Redis.
func TestStateOfAnotherCatalogIsRefused(t *testing.T) {
	ctx := context.Background()
	objs, err := objstore.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer func() { _ = rdb.Close() }()
	other := redisstate.New(rdb, "other", 0)
	defer other.Close()
	_, err = New(ctx, Config{Redis: rdb, Objects: objs, Catalog: "mine", State: other})
	if err == nil || !strings.Contains(err.Error(), "not of \"mine\"") {
		t.Fatalf("another catalog's state: %v", err)
	}
}
