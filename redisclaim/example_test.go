package redisclaim_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/redisproc"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
	"github.com/flightns/flightns/redisclaim"
)

// A writer stages its manifest under a name of its own, then asks for
// version N; the store claims it in Redis, copies the staging object
// create-only to the final path (the commit point) and answers where
// version N lives. A second writer that asks for the same version loses.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "redisclaim-example")
	defer func() { _ = os.RemoveAll(dir) }()
	addr, stop := exampleRedis(ctx, filepath.Join(dir, "redis"))
	defer stop()

	objs, err := objstore.Open(ctx, "file://"+filepath.Join(dir, "root"))
	if err != nil {
		log.Fatal(err)
	}
	store, err := redisclaim.New(ctx, redisclaim.Config{
		Redis:   redis.NewClient(&redis.Options{Addr: addr}),
		Objects: objs,
		Catalog: "example",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = store.Close() }()

	// Lance stages version 1 of table "t" (a directory under the root)
	// under a unique name, then commits it.
	const staging = "t/_versions/1.manifest-writer-a"
	if err := objs.Put(ctx, staging, []byte("manifest bytes")); err != nil {
		log.Fatal(err)
	}
	loc, err := store.Put(ctx, "t", 1, staging, 14, "")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("version", loc.Version, "is", loc.Path)

	// Another writer raced for version 1 and lost.
	const late = "t/_versions/1.manifest-writer-b"
	if err := objs.Put(ctx, late, []byte("other bytes")); err != nil {
		log.Fatal(err)
	}
	_, err = store.Put(ctx, "t", 1, late, 11, "")
	fmt.Println("second writer:", nserror.CodeOf(err))

	latest, path, _, err := store.GetLatestVersion(ctx, "t")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("latest", latest, path)
	// Output:
	// version 1 is t/_versions/1.manifest
	// second writer: ConcurrentModification
	// latest 1 t/_versions/1.manifest
}

// exampleRedis starts a private redis-server for the example; an
// embedder points the go-redis client at its own Redis instead.
func exampleRedis(ctx context.Context, dir string) (addr string, stop func()) {
	srv, err := redisproc.Start(ctx, redisproc.Config{Dir: dir})
	if err != nil {
		log.Fatal(err)
	}
	return srv.Addr(), func() { _ = srv.Stop() }
}
