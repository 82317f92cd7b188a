package bench

import (
	"context"
	"os"
	"path/filepath"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/redisproc"
	"github.com/flightns/flightns/objstore"
)

// env is what a scenario runs on: a temporary directory holding a file://
// root and a private redis-server, and a client of it.
type env struct {
	dir  string
	objs *objstore.Store
	rs   *redisproc.Server
	rdb  *redis.Client
}

// newEnv makes an env in a fresh temporary directory named after prefix;
// close removes it all.
func newEnv(ctx context.Context, prefix string, p redisproc.Persistence, poolSize int) (*env, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, err
	}
	e := &env{dir: dir}
	if e.objs, err = objstore.Open(ctx, "file://"+filepath.Join(dir, "root")); err != nil {
		e.close()
		return nil, err
	}
	if e.rs, err = redisproc.Start(ctx, redisproc.Config{Dir: filepath.Join(dir, "redis"), Persistence: p}); err != nil {
		e.close()
		return nil, err
	}
	e.rdb = redis.NewClient(&redis.Options{Addr: e.rs.Addr(), PoolSize: poolSize})
	return e, nil
}

func (e *env) close() {
	if e.rdb != nil {
		_ = e.rdb.Close()
	}
	if e.rs != nil {
		_ = e.rs.Kill()
	}
	if e.objs != nil {
		_ = e.objs.Close()
	}
	_ = os.RemoveAll(e.dir)
}
