package namespace

import (
	"context"
	"testing"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/nserror"
)

// A table dropped and declared again under its id, in another directory,
// takes commits at once on the server that committed to the first: the
// location it kept for the id is read again before a staging manifest in
// the new directory is refused. (Before, every commit to the new table
// failed with InvalidInput, "not inside table", on that server.)
func TestATableDeclaredAgainTakesCommitsAtOnce(t *testing.T) {
	e := newTenv(t)
	bg := context.Background()
	must(e.s.CreateNamespace(bg, api.CreateNamespaceRequest{ID: id("a")}))
	must(e.s.DeclareTable(bg, api.DeclareTableRequest{ID: id("a", "t")}))
	old := e.locOf(id("a", "t"))
	e.commitManifest(t, id("a", "t"), old, 1, lanceManifest(t, "v1"))
	must(e.s.DropTable(bg, api.DropTableRequest{ID: id("a", "t")}))
	must(e.s.DeclareTable(bg, api.DeclareTableRequest{ID: id("a", "t")}))
	now := e.locOf(id("a", "t"))
	if now == old {
		t.Fatalf("declared again in the same directory %s", now)
	}
	e.commitManifest(t, id("a", "t"), now, 1, lanceManifest(t, "v1"))
	if v := must(e.s.DescribeTable(bg, api.DescribeTableRequest{ID: id("a", "t")})).Version; v == nil || *v != 1 {
		t.Fatalf("the new table's version: %v", v)
	}
	// A staging manifest in another table's directory is still refused.
	must(e.s.DeclareTable(bg, api.DeclareTableRequest{ID: id("a", "u")}))
	_, err := e.s.Versions().CreateTableVersion(bg, api.CreateTableVersionRequest{ID: id("a", "t"), Version: 2,
		ManifestPath: e.stage(e.locOf(id("a", "u")), 2, "elsewhere")})
	wantCode(t, "a staging manifest of another table", err, nserror.InvalidInput)
}
