package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// built is the flightns binary the serving scenarios' tests run, built
// once per test process.
var built struct {
	once sync.Once
	bin  string
	err  error
	out  []byte
}

// servingFlightns builds the flightns binary (once for every test of the
// package) and points the serving scenarios at it for t.
func servingFlightns(t *testing.T) {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "flightns-bench-test-bin-")
		if err != nil {
			built.err = err
			return
		}
		built.bin = filepath.Join(dir, "flightns")
		build := exec.Command("go", "build", "-tags", "duckdb_arrow", "-o", built.bin, "./cmd/flightns")
		build.Dir = ".." // the module root
		built.out, built.err = build.CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	t.Setenv("FLIGHTNS_BINARY", built.bin)
}
