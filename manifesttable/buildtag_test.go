package manifesttable

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A build without the duckdb_arrow tag fails, and its one error names the
// tag: a newcomer's untagged `go test ./...` or `go build ./cmd/flightns`
// says what to do instead of building a server without SQL or passing a
// suite that skipped most of itself.
func TestAnUntaggedBuildFailsNamingTheTag(t *testing.T) {
	gobin, err := exec.LookPath("go") // go test puts GOROOT/bin first in PATH
	if err != nil {
		t.Fatalf("no go command to build with: %v", err)
	}
	cmd := exec.Command(gobin, "build", "-o", os.DevNull, ".")
	cmd.Env = append(os.Environ(), "GOFLAGS=") // no -tags from the environment
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("an untagged build of manifesttable succeeded:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var errs []string
	for _, l := range lines {
		if !strings.HasPrefix(l, "#") {
			errs = append(errs, l)
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0], "build_tag_duckdb_arrow") {
		t.Fatalf("an untagged build failed with %d errors, want one naming the duckdb_arrow tag:\n%s", len(errs), out)
	}
}
