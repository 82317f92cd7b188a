package restserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/nserror"
)

// The conformance tests hold the REST surface to the Lance Namespace
// specification, lance-namespace 0.11.1, vendored unchanged in
// testdata/spec. Every request a case sends is first validated against
// the specification and must route to the operation the case names, so
// the test speaks the spec's form (its method, path, query parameters and
// request body), not just a form flightns happens to accept. Every reply
// is then validated against the response the specification defines for
// that operation and status: the status must be one the operation
// declares, the Content-Type one of its media types, the body its schema.
// kin-openapi does both validations; the cases add the outcome the schema
// cannot say (the Lance error code, what the body holds).
//
// The error codes are those of the same commit's
// docs/src/namespace/operations/errors.md and of the spec's ErrorResponse
// (1 NamespaceNotFound, 2 NamespaceAlreadyExists, 3 NamespaceNotEmpty,
// 4 TableNotFound, 5 TableAlreadyExists, 8 TableTagNotFound,
// 9 TableTagAlreadyExists, 11 TableVersionNotFound, 13 InvalidInput,
// 14 ConcurrentModification, 22 TableBranchNotFound).

// specFile is the vendored specification.
const specFile = "testdata/spec/lance-namespace-0.11.1.yaml"

// servedOperations are the spec's operations flightns serves (docs/rest.md,
// "served: yes"). TestServedOperationsAreTheRoutes holds the list to the
// routing table; TestConformance requires each to succeed and to fail at
// least once.
var servedOperations = []string{
	"CreateNamespace", "ListNamespaces", "DescribeNamespace", "DropNamespace", "NamespaceExists",
	"ListTables", "ListAllTables", "RegisterTable", "DescribeTable", "TableExists", "DropTable",
	"DeregisterTable", "RenameTable", "DeclareTable",
	"ListTableVersions", "CreateTableVersion", "DescribeTableVersion", "BatchDeleteTableVersions",
	"BatchCreateTableVersions", "BatchCommitTables", "GetTableStats",
	"ListTableTags", "GetTableTagVersion", "CreateTableTag", "UpdateTableTag", "DeleteTableTag",
	"ListTableBranches", "CreateTableBranch", "DeleteTableBranch", "RestoreTable",
}

// noTableToMiss are the served operations that name no existing table,
// which therefore have no missing-table case: the namespace operations,
// the listings, and those that make a table.
var noTableToMiss = map[string]bool{
	"CreateNamespace": true, "ListNamespaces": true, "DescribeNamespace": true, "DropNamespace": true, "NamespaceExists": true,
	"ListTables": true, "ListAllTables": true, "DeclareTable": true, "RegisterTable": true,
}

// openAPI is the loaded specification and a router over its paths.
type openAPI struct {
	doc    *openapi3.T
	router routers.Router
}

// loadSpec loads and validates the vendored specification. Two parts of
// it are set aside, for reasons outside flightns: its servers, which name
// deployments (requests are routed by path alone) and which kin-openapi
// refuses because it reads the empty default of the basePath variable as
// a missing default; and the validation of its examples, because the
// examples of its error responses lack the code that ErrorResponse
// requires (they illustrate; they are not replies to check).
func loadSpec(t *testing.T) *openAPI {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromFile(specFile)
	if err != nil {
		t.Fatalf("loading %s: %v", specFile, err)
	}
	// openapi3filter validates the schemas of a 3.1 document as JSON
	// Schema 2020-12, the dialect the spec is written in.
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("%s is OpenAPI %s, want 3.1", specFile, doc.OpenAPI)
	}
	doc.Servers = nil
	if err := doc.Validate(context.Background(), openapi3.DisableExamplesValidation()); err != nil {
		t.Fatalf("%s does not validate: %v", specFile, err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &openAPI{doc: doc, router: router}
}

// operations returns every operation of the specification by its
// operationId, with its path template and method.
func (o *openAPI) operations() map[string]specOperation {
	ops := map[string]specOperation{}
	for path, item := range o.doc.Paths.Map() {
		for method, op := range item.Operations() {
			ops[op.OperationID] = specOperation{path: path, method: method, op: op}
		}
	}
	return ops
}

type specOperation struct {
	path, method string
	op           *openapi3.Operation
}

// filterOptions are the validation options of every exchange. The test
// server runs without authentication (TestAuthErrors covers it), so the
// spec's security requirements are not checked; defaults are not written
// into the validated request; a reply status the operation does not
// declare is an error.
func filterOptions() *openapi3filter.Options {
	return &openapi3filter.Options{
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		SkipSettingDefaults:   true,
		IncludeResponseStatus: true,
		MultiError:            true,
	}
}

// send validates a request against the specification, requires it to be
// operation op, and sends it with s.do. body is JSON-encoded unless it is
// a string or []byte (as s.do encodes it) and is validated in exactly the
// bytes that are sent; headers come after the Content-Type s.do sets.
func (o *openAPI) send(t *testing.T, s *server, op, method, path string, body any, headers ...string) (reply, *openapi3filter.RequestValidationInput) {
	t.Helper()
	var raw []byte
	switch b := body.(type) {
	case nil:
	case string:
		raw = []byte(b)
	case []byte:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(method, s.url()+path, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if raw != nil {
		req.Header.Set("Content-Type", "application/json") // as s.do sends it
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	in, err := o.validateRequest(req)
	if err != nil {
		t.Fatalf("the request %s %s %s is not in the spec's form: %v", method, path, raw, err)
	}
	if got := in.Route.Operation.OperationID; got != op {
		t.Fatalf("%s %s is %s in the spec, not %s", method, path, got, op)
	}
	if raw == nil {
		return s.do(method, path, nil, headers...), in
	}
	return s.do(method, path, raw, headers...), in
}

// validateRequest finds the operation of a request in the specification
// and validates the request against it: path and query parameters, the
// Content-Type and the body. It reads the body and puts it back.
func (o *openAPI) validateRequest(req *http.Request) (*openapi3filter.RequestValidationInput, error) {
	route, params, err := o.router.FindRoute(req)
	if err != nil {
		return nil, err
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: filterOptions()}
	return in, openapi3filter.ValidateRequest(context.Background(), in)
}

// validateResponse validates a reply against the response the
// specification defines for the request's operation and the reply's
// status: the status must be declared, the Content-Type one of the
// response's media types and the body its schema.
func validateResponse(in *openapi3filter.RequestValidationInput, r reply) error {
	return openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: r.status, Header: r.header,
		Body: io.NopCloser(bytes.NewReader(r.body)), Options: filterOptions(),
	})
}

// validateReply fails the test unless the reply conforms (validateResponse).
func validateReply(t *testing.T, in *openapi3filter.RequestValidationInput, r reply) {
	t.Helper()
	if err := validateResponse(in, r); err != nil {
		t.Fatalf("the reply to %s does not conform to the spec: %s\n%v", in.Route.Operation.OperationID, r, err)
	}
}

// validateError validates an error reply whose status its operation does
// not declare against the ErrorResponse schema itself, as JSON Schema
// 2020-12 (the spec's dialect): the Content-Type of the spec's error
// responses, and the body.
func (o *openAPI) validateError(r reply) error {
	schema := o.doc.Components.Schemas["ErrorResponse"]
	if schema == nil || schema.Value == nil {
		return errors.New("the spec has no ErrorResponse schema")
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		return fmt.Errorf("Content-Type %q, want application/json", ct)
	}
	var body any
	if err := json.Unmarshal(r.body, &body); err != nil {
		return err
	}
	return schema.Value.VisitJSON(body, openapi3.EnableJSONSchema2020())
}

// later is a request body made when its case runs: from what earlier
// cases did (a location they answered, a table they declared).
type later func() any

// A conformanceCase is one request of the scenario: the operation it is
// (the spec's operationId), the behaviour it shows, the request in the
// spec's form, and the outcome: 200 (with check, when set, reading the
// body), or an error's HTTP status and Lance code.
type conformanceCase struct {
	op, name     string
	method, path string
	body         any
	status, code int
	check        func(t *testing.T, r reply)
}

// TestConformance runs one scenario through every operation flightns
// serves: each succeeds at least once and fails at least once, every
// request is in the spec's form and every reply in the spec's shape. The
// cases run in order; later ones build on what earlier ones did.
func TestConformance(t *testing.T) {
	spec := loadSpec(t)
	s := startServer(t)
	key := s.declareOrders()

	// Real Lance manifests (LanceDB 0.39 wrote them: see package
	// lancemanifest), so that detailed metadata and statistics read them.
	manifest := func(name string) string {
		b, err := os.ReadFile("../lancemanifest/testdata/" + name + ".manifest")
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	m1, m2, m3, m4 := manifest("v1"), manifest("v2"), manifest("v3"), manifest("v4")
	s.commit(pOrders, key, 1, m1)
	s.commit(pOrders, key, 2, m2)
	// A branch Lance recorded (ListTableBranches reads Lance's files).
	if err := s.Objects.Put(context.Background(), lancemanifest.Dir(key).BranchRefs()+"dev.json",
		[]byte(`{"parentBranch": null, "parentVersion": 2, "createAt": 1796172517, "manifestSize": 425, "metadata": {}}`)); err != nil {
		t.Fatal(err)
	}
	versionBody := func(v uint64, content string) map[string]any {
		return map[string]any{"version": v, "manifest_path": s.stage(key, v, content), "manifest_size": len(content), "naming_scheme": "V2"}
	}
	ordersID := []string{"prod", "sales", "orders"}
	itemsID := []string{"prod", "sales", "items"}
	const (
		get  = http.MethodGet
		post = http.MethodPost
	)
	ranges := func(start, end int) []map[string]int {
		return []map[string]int{{"start_version": start, "end_version": end}}
	}
	// The location key of prod$sales$items, which DeclareTable answers.
	var items string
	// The location DeregisterTable answers, which RegisterTable registers
	// again (a later body).
	var deregistered string
	// The first version CreateTableVersion commits, which its retry must
	// answer again.
	var committed api.TableVersion
	v3 := versionBody(3, m3)

	cases := []conformanceCase{
		// Namespaces.
		{"CreateNamespace", "creates a namespace with properties", post, "/v1/namespace/prod%24eu/create" + dq,
			map[string]any{"id": []string{"prod", "eu"}, "properties": map[string]string{"owner": "ops"}}, 200, 0,
			func(t *testing.T, r reply) {
				var c api.CreateNamespaceResponse
				r.decode(t, &c)
				if c.Properties["owner"] != "ops" {
					t.Fatalf("properties %v", c.Properties)
				}
			}},
		{"CreateNamespace", "an existing namespace", post, pProd + "/create" + dq, map[string]any{}, 409, 2, nil},
		{"CreateNamespace", "an unknown mode", post, "/v1/namespace/x/create" + dq, map[string]any{"mode": "Sometimes"}, 400, 13, nil},
		{"ListNamespaces", "lists the root", get, pRoot + "/list" + dq, nil, 200, 0, wantNamespaces("prod")},
		{"ListNamespaces", "a leaf has an empty list", get, "/v1/namespace/prod%24eu/list" + dq, nil, 200, 0, wantNamespaces()},
		{"ListNamespaces", "a missing namespace", get, "/v1/namespace/nope/list" + dq, nil, 404, 1, nil},
		{"ListNamespaces", "a negative limit", get, pRoot + "/list" + dq + "&limit=-1", nil, 400, 13, nil},
		{"DescribeNamespace", "describes a namespace", post, "/v1/namespace/prod%24eu/describe" + dq, map[string]any{"id": []string{"prod", "eu"}}, 200, 0,
			func(t *testing.T, r reply) {
				var d api.DescribeNamespaceResponse
				r.decode(t, &d)
				if d.Properties["owner"] != "ops" {
					t.Fatalf("properties %v", d.Properties)
				}
			}},
		{"DescribeNamespace", "a missing namespace", post, "/v1/namespace/nope/describe" + dq, map[string]any{}, 404, 1, nil},
		{"DescribeNamespace", "a body id that disagrees with the path", post, pProd + "/describe" + dq, map[string]any{"id": []string{"other"}}, 400, 13, nil},
		{"NamespaceExists", "an existing namespace", post, pSales + "/exists" + dq, map[string]any{}, 200, 0, wantNoBody},
		{"NamespaceExists", "a missing namespace", post, "/v1/namespace/nope/exists" + dq, map[string]any{}, 404, 1, nil},
		{"DropNamespace", "drops an empty namespace", post, "/v1/namespace/prod%24eu/drop" + dq, map[string]any{"mode": "Fail", "behavior": "Restrict"}, 200, 0, nil},
		{"DropNamespace", "a missing namespace", post, "/v1/namespace/prod%24eu/drop" + dq, map[string]any{}, 404, 1, nil},
		{"DropNamespace", "a namespace with tables, restricted", post, pProd + "/drop" + dq, map[string]any{"behavior": "Restrict"}, 409, 3, nil},

		// Tables.
		{"DeclareTable", "declares a table", post, "/v1/table/prod%24sales%24items/declare" + dq, map[string]any{"id": itemsID}, 200, 0,
			func(t *testing.T, r reply) {
				var d api.DeclareTableResponse
				r.decode(t, &d)
				if !strings.HasPrefix(d.Location, "file://") || !d.ManagedVersioning {
					t.Fatalf("declare: %+v", d)
				}
				items = s.keyOf(d.Location)
			}},
		{"DeclareTable", "an existing table", post, pOrders + "/declare" + dq, map[string]any{}, 409, 5, nil},
		{"DeclareTable", "in a missing namespace", post, "/v1/table/nope%24t/declare" + dq, map[string]any{}, 404, 1, nil},
		{"ListTables", "lists a namespace's tables", get, pSales + "/table/list" + dq, nil, 200, 0, wantTables("items", "orders")},
		{"ListTables", "without the declared-only ones", get, pSales + "/table/list" + dq + "&include_declared=false", nil, 200, 0, wantTables("orders")},
		{"ListTables", "a missing namespace", get, "/v1/namespace/nope/table/list" + dq, nil, 404, 1, nil},
		{"ListAllTables", "lists every table by its full id", get, "/v1/table" + dq, nil, 200, 0, wantTables("prod$sales$items", "prod$sales$orders")},
		{"ListAllTables", "a page of one", get, "/v1/table" + dq + "&limit=1", nil, 200, 0, wantTables("prod$sales$items")},
		{"ListAllTables", "a negative limit", get, "/v1/table" + dq + "&limit=-1", nil, 400, 13, nil},
		{"TableExists", "an existing table", post, pOrders + "/exists" + dq, map[string]any{"id": ordersID}, 200, 0, wantNoBody},
		{"TableExists", "an existing version", post, pOrders + "/exists" + dq, map[string]any{"version": 2}, 200, 0, wantNoBody},
		{"TableExists", "a missing table", post, "/v1/table/prod%24sales%24nope/exists" + dq, map[string]any{}, 404, 4, nil},
		{"TableExists", "a missing version", post, pOrders + "/exists" + dq, map[string]any{"version": 7}, 404, 11, nil},
		// Deliberate, documented deviation (docs/rest.md): DescribeTable
		// fills table, namespace and version always, not only with
		// load_detailed_metadata. The spec's schema allows the fields.
		// is_only_declared is not checked here: without check_declared
		// the spec says it "should" be null, and flightns fills it anyway
		// (the schema allows both; the case with check_declared below
		// checks its value).
		{"DescribeTable", "fills table, namespace and version always", post, pOrders + "/describe" + dq, map[string]any{"id": ordersID}, 200, 0,
			func(t *testing.T, r reply) {
				var d api.DescribeTableResponse
				r.decode(t, &d)
				if d.Table != "orders" || !slices.Equal(d.Namespace, []string{"prod", "sales"}) || d.Version == nil || *d.Version != 2 ||
					d.Location == "" || d.Schema != nil || d.Stats != nil {
					t.Fatalf("describe: %s", r)
				}
			}},
		{"DescribeTable", "with load_detailed_metadata, from the Lance manifest", post, pOrders + "/describe" + dq + "&load_detailed_metadata=true", map[string]any{}, 200, 0,
			func(t *testing.T, r reply) {
				var d api.DescribeTableResponse
				r.decode(t, &d)
				if d.Version == nil || *d.Version != 2 || d.Schema == nil || len(d.Schema.Fields) != 9 || d.Schema.Fields[0].Name != "id" ||
					d.Stats == nil || d.Stats.NumFragments != 2 || d.Stats.NumDeletedRows != 0 {
					t.Fatalf("detailed describe: %s", r)
				}
			}},
		{"DescribeTable", "a declared table, with its uri", post, "/v1/table/prod%24sales%24items/describe" + dq + "&with_table_uri=true&check_declared=true", map[string]any{}, 200, 0,
			func(t *testing.T, r reply) {
				var d api.DescribeTableResponse
				r.decode(t, &d)
				if d.TableURI == "" || d.TableURI != d.Location || d.Version != nil || d.IsOnlyDeclared == nil || !*d.IsOnlyDeclared {
					t.Fatalf("describe a declared table: %s", r)
				}
			}},
		{"DescribeTable", "a missing table", post, "/v1/table/prod%24sales%24nope/describe" + dq, map[string]any{}, 404, 4, nil},
		{"DescribeTable", "a missing version", post, pOrders + "/describe" + dq, map[string]any{"version": 9}, 404, 11, nil},
		{"DescribeTable", "detailed metadata of a declared-only table", post, "/v1/table/prod%24sales%24items/describe" + dq + "&load_detailed_metadata=true", map[string]any{}, 404, 11, nil},
		{"DescribeTable", "a branch that does not exist", post, pOrders + "/describe" + dq, map[string]any{"branch": "ghost"}, 404, 22, nil},

		// Versions.
		{"CreateTableVersion", "commits the next version", post, pOrders + "/version/create" + dq, v3, 200, 0,
			func(t *testing.T, r reply) {
				var c api.CreateTableVersionResponse
				r.decode(t, &c)
				if c.Version == nil || c.Version.Version != 3 || !strings.HasSuffix(c.Version.ManifestPath, lancemanifest.ManifestName(lancemanifest.V2, 3)) {
					t.Fatalf("version/create: %s", r)
				}
				committed = *c.Version
			}},
		// Deliberate, documented deviation (docs/rest.md): the same request
		// repeated after it succeeded (a retry after a lost reply) answers
		// 200 with the version it committed, not the spec's 409, which
		// Lance would read as another writer's version.
		{"CreateTableVersion", "a retry of a committed request answers the same version", post, pOrders + "/version/create" + dq, v3, 200, 0,
			func(t *testing.T, r reply) {
				var c api.CreateTableVersionResponse
				r.decode(t, &c)
				if c.Version == nil || c.Version.Version != 3 || c.Version.ManifestPath != committed.ManifestPath {
					t.Fatalf("the retry answered %s; the commit %+v", r, committed)
				}
			}},
		{"CreateTableVersion", "a version another writer took", post, pOrders + "/version/create" + dq, versionBody(3, "another writer's manifest"), 409, 14, nil},
		{"CreateTableVersion", "a version that skips ahead", post, pOrders + "/version/create" + dq, versionBody(9, "far ahead"), 400, 13, nil},
		{"CreateTableVersion", "a missing table", post, "/v1/table/prod%24sales%24nope/version/create" + dq, map[string]any{"version": 1, "manifest_path": "x"}, 404, 4, nil},
		{"ListTableVersions", "the latest, as Lance asks for it", post, pOrders + "/version/list" + dq + "&limit=1&descending=true", nil, 200, 0,
			func(t *testing.T, r reply) {
				var l api.ListTableVersionsResponse
				r.decode(t, &l)
				if len(l.Versions) != 1 || l.Versions[0].Version != 3 || l.PageToken == "" {
					t.Fatalf("version/list: %s", r)
				}
			}},
		// As Lance's own directory namespace answers (docs/rest.md).
		{"ListTableVersions", "a branch that does not exist", post, pOrders + "/version/list" + dq + "&branch=ghost", nil, 404, 22, nil},
		{"ListTableVersions", "a missing table", post, "/v1/table/prod%24sales%24nope/version/list" + dq, nil, 404, 4, nil},
		{"ListTableVersions", "a page token that is not a version", post, pOrders + "/version/list" + dq + "&page_token=x", nil, 400, 13, nil},
		{"DescribeTableVersion", "describes a version", post, pOrders + "/version/describe" + dq, map[string]any{"version": 2}, 200, 0, wantVersion(2)},
		{"DescribeTableVersion", "without a version, the latest", post, pOrders + "/version/describe" + dq, map[string]any{}, 200, 0, wantVersion(3)},
		{"DescribeTableVersion", "a missing version", post, pOrders + "/version/describe" + dq, map[string]any{"version": 9}, 404, 11, nil},
		{"DescribeTableVersion", "a branch that does not exist", post, pOrders + "/version/describe" + dq, map[string]any{"branch": "ghost"}, 404, 22, nil},
		{"DescribeTableVersion", "a missing table", post, "/v1/table/prod%24sales%24nope/version/describe" + dq, map[string]any{}, 404, 4, nil},

		// Tags.
		{"CreateTableTag", "tags a version", post, pOrders + "/tags/create" + dq, map[string]any{"tag": "first", "version": 1}, 200, 0, nil},
		{"CreateTableTag", "an existing tag", post, pOrders + "/tags/create" + dq, map[string]any{"tag": "first", "version": 2}, 409, 9, nil},
		{"CreateTableTag", "a missing version", post, pOrders + "/tags/create" + dq, map[string]any{"tag": "later", "version": 99}, 404, 11, nil},
		{"CreateTableTag", "a name Lance refuses", post, pOrders + "/tags/create" + dq, map[string]any{"tag": "no spaces", "version": 1}, 400, 13, nil},
		{"CreateTableTag", "a missing table", post, "/v1/table/prod%24sales%24nope/tags/create" + dq, map[string]any{"tag": "t", "version": 1}, 404, 4, nil},
		{"GetTableTagVersion", "the version of a tag", post, pOrders + "/tags/version" + dq, map[string]any{"tag": "first"}, 200, 0, wantTagVersion(1)},
		{"GetTableTagVersion", "a missing tag", post, pOrders + "/tags/version" + dq, map[string]any{"tag": "nope"}, 404, 8, nil},
		{"GetTableTagVersion", "a missing table", post, "/v1/table/prod%24sales%24nope/tags/version" + dq, map[string]any{"tag": "first"}, 404, 4, nil},
		{"UpdateTableTag", "moves a tag", post, pOrders + "/tags/update" + dq, map[string]any{"tag": "first", "version": 2}, 200, 0, nil},
		{"UpdateTableTag", "a missing tag", post, pOrders + "/tags/update" + dq, map[string]any{"tag": "nope", "version": 2}, 404, 8, nil},
		{"UpdateTableTag", "a missing version", post, pOrders + "/tags/update" + dq, map[string]any{"tag": "first", "version": 99}, 404, 11, nil},
		{"UpdateTableTag", "a missing table", post, "/v1/table/prod%24sales%24nope/tags/update" + dq, map[string]any{"tag": "first", "version": 1}, 404, 4, nil},
		{"ListTableTags", "lists the tags", post, pOrders + "/tags/list" + dq, nil, 200, 0,
			func(t *testing.T, r reply) {
				var l api.ListTableTagsResponse
				r.decode(t, &l)
				if len(l.Tags) != 1 || l.Tags["first"].Version != 2 || l.Tags["first"].ManifestSize != int64(len(m2)) {
					t.Fatalf("tags/list: %s", r)
				}
			}},
		{"ListTableTags", "a missing table", post, "/v1/table/prod%24sales%24nope/tags/list" + dq, nil, 404, 4, nil},
		{"DeleteTableTag", "deletes a tag", post, pOrders + "/tags/delete" + dq, map[string]any{"tag": "first"}, 200, 0, nil},
		{"DeleteTableTag", "a missing tag", post, pOrders + "/tags/delete" + dq, map[string]any{"tag": "first"}, 404, 8, nil},
		{"DeleteTableTag", "a missing table", post, "/v1/table/prod%24sales%24nope/tags/delete" + dq, map[string]any{"tag": "first"}, 404, 4, nil},

		// Branches.
		{"ListTableBranches", "lists the branches Lance recorded", post, pOrders + "/branches/list" + dq, nil, 200, 0,
			func(t *testing.T, r reply) {
				var l api.ListTableBranchesResponse
				r.decode(t, &l)
				if dev, ok := l.Branches["dev"]; len(l.Branches) != 1 || !ok || dev.ParentVersion != 2 || dev.CreateAt != 1796172517 || dev.ManifestSize != 425 {
					t.Fatalf("branches/list: %s", r)
				}
			}},
		{"ListTableBranches", "a missing table", post, "/v1/table/prod%24sales%24nope/branches/list" + dq, nil, 404, 4, nil},

		// Several tables at once.
		{"BatchCreateTableVersions", "commits versions of two tables", post, "/v1/table/version/batch-create" + dq, later(func() any {
			return map[string]any{"entries": []map[string]any{
				{"id": itemsID, "version": 1, "manifest_path": s.stage(items, 1, "items one"), "naming_scheme": "V2"},
				{"id": ordersID, "version": 4, "manifest_path": s.stage(key, 4, m4), "manifest_size": len(m4), "naming_scheme": "V2"},
			}}
		}), 200, 0,
			func(t *testing.T, r reply) {
				var b api.BatchCreateTableVersionsResponse
				r.decode(t, &b)
				if len(b.Versions) != 2 || b.Versions[0].Version != 1 || b.Versions[1].Version != 4 {
					t.Fatalf("batch-create: %s", r)
				}
			}},
		{"BatchCreateTableVersions", "a version another writer took", post, "/v1/table/version/batch-create" + dq, later(func() any {
			return map[string]any{"entries": []map[string]any{
				{"id": itemsID, "version": 1, "manifest_path": s.stage(items, 1, "another items one")},
			}}
		}), 409, 14, nil},
		{"BatchCreateTableVersions", "a missing table", post, "/v1/table/version/batch-create" + dq, map[string]any{"entries": []map[string]any{
			{"id": []string{"prod", "sales", "nope"}, "version": 1, "manifest_path": "x"},
		}}, 404, 4, nil},
		{"BatchCreateTableVersions", "no entries", post, "/v1/table/version/batch-create" + dq, map[string]any{"entries": []any{}}, 400, 13, nil},
		{"BatchCommitTables", "declares, commits and deletes at once", post, "/v1/table/batch-commit" + dq, later(func() any {
			return map[string]any{"operations": []map[string]any{
				{"declare_table": map[string]any{"id": []string{"prod", "sales", "fresh"}}},
				{"create_table_version": map[string]any{"id": itemsID, "version": 2, "manifest_path": s.stage(items, 2, "items two")}},
				{"delete_table_versions": map[string]any{"id": itemsID, "ranges": ranges(1, 2)}},
			}}
		}), 200, 0,
			func(t *testing.T, r reply) {
				var b api.BatchCommitTablesResponse
				r.decode(t, &b)
				if len(b.Results) != 3 || b.Results[0].DeclareTable == nil || b.Results[1].CreateTableVersion == nil ||
					b.Results[1].CreateTableVersion.Version.Version != 2 || b.Results[2].DeleteTableVersions == nil ||
					b.Results[2].DeleteTableVersions.DeletedCount != 1 {
					t.Fatalf("batch-commit: %s", r)
				}
			}},
		{"BatchCommitTables", "a taken version fails the whole batch", post, "/v1/table/batch-commit" + dq, later(func() any {
			return map[string]any{"operations": []map[string]any{
				{"declare_table": map[string]any{"id": []string{"prod", "sales", "never"}}},
				{"create_table_version": map[string]any{"id": itemsID, "version": 2, "manifest_path": s.stage(items, 2, "again")}},
			}}
		}), 409, 14, nil},
		{"BatchCommitTables", "a missing table", post, "/v1/table/batch-commit" + dq, map[string]any{"operations": []map[string]any{
			{"create_table_version": map[string]any{"id": []string{"prod", "sales", "nope"}, "version": 1, "manifest_path": "x"}}}}, 404, 4, nil},
		{"BatchCommitTables", "no operations", post, "/v1/table/batch-commit" + dq, map[string]any{"operations": []any{}}, 400, 13, nil},
		{"TableExists", "nothing of the failed batch happened", post, "/v1/table/prod%24sales%24never/exists" + dq, map[string]any{}, 404, 4, nil},

		// Statistics, from the latest manifest (v4: four rows, one of five
		// deleted, two fragments, one index).
		{"GetTableStats", "statistics of the latest version", post, pOrders + "/stats" + dq, map[string]any{"id": ordersID}, 200, 0,
			func(t *testing.T, r reply) {
				var st api.GetTableStatsResponse
				r.decode(t, &st)
				if st.NumRows != 4 || st.NumIndices != 1 || st.TotalBytes != 6200 || st.FragmentStats.NumFragments != 2 || st.FragmentStats.Lengths.Max == 0 {
					t.Fatalf("stats: %s", r)
				}
			}},
		{"GetTableStats", "a declared-only table has no manifest", post, "/v1/table/prod%24sales%24fresh/stats" + dq, map[string]any{}, 404, 11, nil},
		{"GetTableStats", "a branch that does not exist", post, pOrders + "/stats" + dq, map[string]any{"branch": "ghost"}, 404, 22, nil},
		{"GetTableStats", "a missing table", post, "/v1/table/prod%24sales%24nope/stats" + dq, map[string]any{}, 404, 4, nil},

		// Branches and restore, made as Lance makes them (the manifests
		// are LanceDB's own: package lancemanifest checks them byte for
		// byte against Lance's).
		{"CreateTableBranch", "creates a branch from a version of main", post, pOrders + "/branches/create" + dq, map[string]any{"name": "feature", "from_version": 2}, 200, 0,
			func(t *testing.T, r reply) {
				var d api.DescribeTableVersionResponse
				ok(t, "the branch's first version", s.post(pOrders+"/version/describe"+dq, map[string]any{"branch": "feature"})).decode(t, &d)
				if d.Version == nil || d.Version.Version != 2 {
					t.Fatalf("the branch's latest: %+v", d.Version)
				}
			}},
		{"CreateTableBranch", "a branch of a branch, at its latest", post, pOrders + "/branches/create" + dq, map[string]any{"name": "feature/sub", "from_branch": "feature"}, 200, 0, nil},
		// Lance reads a branch's files, not the catalog's records of it: a
		// branch whose latest record was deleted is a source still.
		{"BatchDeleteTableVersions", "a branch's latest version record", post, pOrders + "/version/delete" + dq, map[string]any{"branch": "feature", "ranges": ranges(2, -1)}, 200, 0, nil},
		{"CreateTableBranch", "from a branch whose latest record was deleted", post, pOrders + "/branches/create" + dq, map[string]any{"name": "again", "from_branch": "feature"}, 200, 0,
			func(t *testing.T, r reply) {
				var d api.DescribeTableVersionResponse
				ok(t, "the new branch's first version", s.post(pOrders+"/version/describe"+dq, map[string]any{"branch": "again"})).decode(t, &d)
				if d.Version == nil || d.Version.Version != 2 {
					t.Fatalf("the branch's latest: %+v", d.Version)
				}
			}},
		{"CreateTableBranch", "an existing branch", post, pOrders + "/branches/create" + dq, map[string]any{"name": "feature", "from_version": 1}, 409, 23, nil},
		{"CreateTableBranch", "a missing source version", post, pOrders + "/branches/create" + dq, map[string]any{"name": "later", "from_version": 99}, 404, 11, nil},
		{"CreateTableBranch", "a source branch that does not exist", post, pOrders + "/branches/create" + dq, map[string]any{"name": "later", "from_branch": "ghost"}, 404, 22, nil},
		{"CreateTableBranch", "a name Lance refuses", post, pOrders + "/branches/create" + dq, map[string]any{"name": "no spaces"}, 400, 13, nil},
		{"CreateTableBranch", "main", post, pOrders + "/branches/create" + dq, map[string]any{"name": "main"}, 400, 13, nil},
		{"CreateTableBranch", "a missing table", post, "/v1/table/prod%24sales%24nope/branches/create" + dq, map[string]any{"name": "b"}, 404, 4, nil},
		{"DeleteTableBranch", "a branch another forks from", post, pOrders + "/branches/delete" + dq, map[string]any{"name": "feature"}, 400, 13, nil},
		{"DeleteTableBranch", "deletes a branch and its files", post, pOrders + "/branches/delete" + dq, map[string]any{"name": "feature/sub"}, 200, 0,
			func(t *testing.T, r reply) {
				for a, err := range s.Objects.List(context.Background(), lancemanifest.Chain{Table: lancemanifest.Dir(key), Branch: "feature/sub"}.Key()+"/") {
					t.Fatalf("left behind: %v %v", a.Key, err)
				}
			}},
		{"DeleteTableBranch", "a second branch of it", post, pOrders + "/branches/delete" + dq, map[string]any{"name": "again"}, 200, 0, nil},
		{"DeleteTableBranch", "then the branch it forked from", post, pOrders + "/branches/delete" + dq, map[string]any{"name": "feature"}, 200, 0, nil},
		{"DeleteTableBranch", "a branch that does not exist", post, pOrders + "/branches/delete" + dq, map[string]any{"name": "feature"}, 404, 22, nil},
		// A deleted branch's versions are gone with it, and its name is free.
		{"ListTableVersions", "of a deleted branch", post, pOrders + "/version/list" + dq + "&branch=feature", nil, 404, 22, nil},
		{"DescribeTableVersion", "of a deleted branch", post, pOrders + "/version/describe" + dq, map[string]any{"branch": "feature", "version": 2}, 404, 22, nil},
		{"CreateTableBranch", "with a deleted branch's name", post, pOrders + "/branches/create" + dq, map[string]any{"name": "feature", "from_version": 1}, 200, 0,
			func(t *testing.T, r reply) {
				var l api.ListTableVersionsResponse
				ok(t, "the new branch's versions", s.post(pOrders+"/version/list"+dq+"&branch=feature", nil)).decode(t, &l)
				if len(l.Versions) != 1 || l.Versions[0].Version != 1 {
					t.Fatalf("the new branch's versions: %+v", l.Versions)
				}
			}},
		{"DeleteTableBranch", "a missing table", post, "/v1/table/prod%24sales%24nope/branches/delete" + dq, map[string]any{"name": "b"}, 404, 4, nil},
		{"RestoreTable", "restores a version as the newest", post, pOrders + "/restore" + dq, map[string]any{"version": 2}, 200, 0,
			func(t *testing.T, r reply) {
				var st api.GetTableStatsResponse
				ok(t, "stats after the restore", s.post(pOrders+"/stats"+dq, map[string]any{})).decode(t, &st)
				if st.NumRows != 5 || st.NumIndices != 0 {
					t.Fatalf("after restoring version 2 (5 rows, no index): %+v", st)
				}
			}},
		{"RestoreTable", "a missing version", post, pOrders + "/restore" + dq, map[string]any{"version": 99}, 404, 11, nil},
		{"RestoreTable", "a branch that does not exist", post, pOrders + "/restore" + dq, map[string]any{"version": 1, "branch": "ghost"}, 404, 22, nil},
		{"RestoreTable", "a version that is not one", post, pOrders + "/restore" + dq, map[string]any{"version": 0}, 400, 13, nil},
		{"RestoreTable", "a missing table", post, "/v1/table/prod%24sales%24nope/restore" + dq, map[string]any{"version": 1}, 404, 4, nil},
		{"BatchDeleteTableVersions", "forgets every version record", post, "/v1/table/prod%24sales%24items/version/delete" + dq, map[string]any{"ranges": ranges(0, -1)}, 200, 0,
			func(t *testing.T, r reply) {
				var d api.BatchDeleteTableVersionsResponse
				r.decode(t, &d)
				if d.DeletedCount != 1 { // version 2; the batch commit forgot version 1
					t.Fatalf("version/delete: %s", r)
				}
			}},
		{"BatchDeleteTableVersions", "a branch that does not exist", post, pOrders + "/version/delete" + dq, map[string]any{"branch": "ghost", "ranges": ranges(0, -1)}, 404, 22, nil},
		{"BatchDeleteTableVersions", "a missing table", post, "/v1/table/prod%24sales%24nope/version/delete" + dq, map[string]any{"ranges": ranges(0, -1)}, 404, 4, nil},

		// Renaming, deregistering, registering again and dropping.
		{"RenameTable", "into another namespace", post, "/v1/table/prod%24sales%24items/rename" + dq,
			map[string]any{"new_table_name": "items2", "new_namespace_id": []string{"prod"}}, 200, 0, nil},
		{"RenameTable", "onto an existing table", post, "/v1/table/prod%24items2/rename" + dq,
			map[string]any{"new_table_name": "orders", "new_namespace_id": []string{"prod", "sales"}}, 409, 5, nil},
		{"RenameTable", "into a missing namespace", post, "/v1/table/prod%24items2/rename" + dq,
			map[string]any{"new_table_name": "x", "new_namespace_id": []string{"nope"}}, 404, 1, nil},
		{"RenameTable", "a missing table", post, "/v1/table/prod%24sales%24nope/rename" + dq, map[string]any{"new_table_name": "x"}, 404, 4, nil},
		{"DeregisterTable", "forgets a table, keeping its data", post, "/v1/table/prod%24items2/deregister" + dq, map[string]any{}, 200, 0,
			func(t *testing.T, r reply) {
				var d api.DeregisterTableResponse
				r.decode(t, &d)
				if !slices.Equal(d.ID, []string{"prod", "items2"}) || d.Location == "" {
					t.Fatalf("deregister: %s", r)
				}
				deregistered = d.Location
			}},
		{"DeregisterTable", "a missing table", post, "/v1/table/prod%24items2/deregister" + dq, map[string]any{}, 404, 4, nil},
		{"RegisterTable", "registers a table's location again", post, "/v1/table/prod%24back/register" + dq, later(func() any { return map[string]any{"location": deregistered} }), 200, 0,
			func(t *testing.T, r reply) {
				var g api.RegisterTableResponse
				r.decode(t, &g)
				if g.Location != deregistered {
					t.Fatalf("register: %s, want location %s", r, deregistered)
				}
			}},
		{"RegisterTable", "onto an existing table", post, pOrders + "/register" + dq, later(func() any { return map[string]any{"location": deregistered} }), 409, 5, nil},
		{"RegisterTable", "in a missing namespace", post, "/v1/table/nope%24t/register" + dq, later(func() any { return map[string]any{"location": deregistered} }), 404, 1, nil},
		{"RegisterTable", "a location without a Lance table", post, "/v1/table/prod%24empty/register" + dq, map[string]any{"location": "file://" + s.Root + "/nowhere"}, 400, 13, nil},
		{"DropTable", "drops a table and its data", post, "/v1/table/prod%24back/drop" + dq, nil, 200, 0,
			func(t *testing.T, r reply) {
				var d api.DropTableResponse
				r.decode(t, &d)
				if !slices.Equal(d.ID, []string{"prod", "back"}) || d.Location != deregistered {
					t.Fatalf("drop: %s", r)
				}
			}},
		{"DropTable", "a missing table", post, "/v1/table/prod%24back/drop" + dq, nil, 404, 4, nil},
	}

	// Every served operation, and only those, has a case that succeeds
	// and one that fails.
	ops := spec.operations()
	type outcome struct{ succeeds, fails bool }
	covered := map[string]*outcome{}
	for _, tc := range cases {
		o := covered[tc.op]
		if o == nil {
			o = &outcome{}
			covered[tc.op] = o
		}
		o.succeeds = o.succeeds || tc.status == http.StatusOK
		o.fails = o.fails || tc.status != http.StatusOK
	}
	for _, op := range servedOperations {
		if _, ok := ops[op]; !ok {
			t.Errorf("%s is served but is no operationId of the spec", op)
		}
		switch o := covered[op]; {
		case o == nil:
			t.Errorf("%s is served but no case exercises it", op)
		case !o.succeeds || !o.fails:
			t.Errorf("%s needs a case that succeeds and one that fails (succeeds %v, fails %v)", op, o.succeeds, o.fails)
		}
	}
	for op := range covered {
		if !slices.Contains(servedOperations, op) {
			t.Errorf("a case exercises %s, which is not in servedOperations", op)
		}
	}

	// Every served operation on tables fails for a table that does not
	// exist (404, TableNotFound) among its cases.
	missing := map[string]bool{}
	for _, tc := range cases {
		if tc.status == http.StatusNotFound && tc.code == int(nserror.TableNotFound) {
			missing[tc.op] = true
		}
	}
	for _, op := range servedOperations {
		if !missing[op] && !noTableToMiss[op] {
			t.Errorf("%s has no missing-table case", op)
		}
	}

	for _, tc := range cases {
		t.Run(tc.op+"/"+tc.name, func(t *testing.T) {
			body := tc.body
			if f, ok := body.(later); ok {
				body = f()
			}
			r, in := spec.send(t, s, tc.op, tc.method, tc.path, body)
			validateReply(t, in, r)
			if tc.status != http.StatusOK {
				wantError(t, tc.name, r, tc.code, tc.status)
				return
			}
			ok(t, tc.name, r)
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

// wantNoBody checks the reply of an operation whose 200 the spec defines
// as "Success, no content" (NamespaceExists, TableExists).
func wantNoBody(t *testing.T, r reply) {
	t.Helper()
	if len(r.body) != 0 {
		t.Fatalf("the spec's reply has no body; got %q", r.body)
	}
}

// wantNamespaces checks a ListNamespaces reply: the names, and an empty
// list as [] (the Lance client cannot parse null).
func wantNamespaces(names ...string) func(*testing.T, reply) {
	return func(t *testing.T, r reply) {
		t.Helper()
		var l api.ListNamespacesResponse
		r.decode(t, &l)
		if l.Namespaces == nil || !slices.Equal(l.Namespaces, names) {
			t.Fatalf("namespaces %s, want %q", r, names)
		}
	}
}

// wantTables checks a ListTables or ListAllTables reply.
func wantTables(names ...string) func(*testing.T, reply) {
	return func(t *testing.T, r reply) {
		t.Helper()
		var l api.ListTablesResponse
		r.decode(t, &l)
		if l.Tables == nil || !slices.Equal(l.Tables, names) {
			t.Fatalf("tables %s, want %q", r, names)
		}
	}
}

// wantVersion checks a DescribeTableVersion reply.
func wantVersion(v int64) func(*testing.T, reply) {
	return func(t *testing.T, r reply) {
		t.Helper()
		var d api.DescribeTableVersionResponse
		r.decode(t, &d)
		if d.Version == nil || d.Version.Version != v || !strings.HasSuffix(d.Version.ManifestPath, lancemanifest.ManifestName(lancemanifest.V2, uint64(v))) {
			t.Fatalf("version/describe %s, want version %d", r, v)
		}
	}
}

// wantTagVersion checks a GetTableTagVersion reply.
func wantTagVersion(v int64) func(*testing.T, reply) {
	return func(t *testing.T, r reply) {
		t.Helper()
		var g api.GetTableTagVersionResponse
		r.decode(t, &g)
		if g.Version != v {
			t.Fatalf("tags/version %s, want version %d", r, v)
		}
	}
}

// TestConformanceUnsupported: operations of the spec flightns does not
// serve (data operations run in the Lance engine; see docs/rest.md), sent
// in the spec's form, answer 406 with code 0 (Unsupported) in the spec's
// error shape. The reply is validated as the operation's response where
// the operation declares a 406; none of these does in 0.11.1 (the spec
// declares 406 only on a few namespace and table operations), so their
// body is validated against the ErrorResponse schema itself.
func TestConformanceUnsupported(t *testing.T) {
	spec := loadSpec(t)
	s := startServer(t)
	s.declareOrders()
	arrow := []string{"Content-Type", "application/vnd.apache.arrow.stream"}
	for _, tc := range []struct {
		op, path string
		body     any
		headers  []string
	}{
		{"CountTableRows", pOrders + "/count_rows" + dq, map[string]any{"predicate": "id > 1"}, nil},
		{"InsertIntoTable", pOrders + "/insert" + dq + "&mode=append", []byte("ARROW1 not really"), arrow},
		{"CreateTable", pOrders + "/create" + dq, []byte("ARROW1 not really"), arrow},
		{"QueryTable", pOrders + "/query" + dq, map[string]any{"k": 10, "vector": map[string]any{"single_vector": []float64{1, 2}}}, nil},
		{"CreateTableIndex", pOrders + "/create_index" + dq, map[string]any{"column": "vec", "index_type": "IVF_PQ"}, nil},
		{"ListTableIndices", pOrders + "/index/list" + dq, map[string]any{}, nil},
		{"DescribeTransaction", "/v1/transaction/tx1/describe" + dq, map[string]any{}, nil},
	} {
		t.Run(tc.op, func(t *testing.T) {
			r, in := spec.send(t, s, tc.op, http.MethodPost, tc.path, tc.body, tc.headers...)
			wantError(t, tc.op, r, int(nserror.Unsupported), http.StatusNotAcceptable)
			if in.Route.Operation.Responses.Status(http.StatusNotAcceptable) != nil {
				validateReply(t, in, r)
				return
			}
			if err := spec.validateError(r); err != nil {
				t.Fatalf("the error body is no ErrorResponse: %s\n%v", r, err)
			}
		})
	}
}

// TestServedOperationsAreTheRoutes: servedOperations is exactly the set of
// the spec's operations flightns routes, each by its operationId; every
// other operation of the spec is Unsupported (code 0). A mutation takes
// POST, which must be the spec's method for it.
func TestServedOperationsAreTheRoutes(t *testing.T) {
	spec := loadSpec(t)
	ops := spec.operations()
	for _, op := range servedOperations {
		if _, ok := ops[op]; !ok {
			t.Errorf("%s is in servedOperations but is no operationId of the spec", op)
		}
	}
	for id, so := range ops {
		path := strings.NewReplacer("{id}", "prod%24sales%24orders", "{index_name}", "idx").Replace(so.path)
		rt, _, err := match(path)
		served := slices.Contains(servedOperations, id)
		switch {
		case err == nil && !served:
			t.Errorf("%s (%s %s) is routed to %s but is not in servedOperations", id, so.method, so.path, rt.name)
		case err == nil && rt.name != id:
			t.Errorf("%s (%s %s) is routed to %s", id, so.method, so.path, rt.name)
		case err == nil && rt.write && so.method != http.MethodPost:
			t.Errorf("%s is a mutation (POST only) but the spec sends it with %s", id, so.method)
		case err != nil && served:
			t.Errorf("%s (%s %s) is in servedOperations but not routed: %v", id, so.method, so.path, err)
		case err != nil && nserror.CodeOf(err) != nserror.Unsupported:
			t.Errorf("%s (%s %s) answers code %d, want 0 (Unsupported)", id, so.method, so.path, nserror.CodeOf(err))
		}
	}
}

// TestConformanceChecksBite: the checks above are only worth their passes
// if they fail on what the spec forbids. Each request or reply here breaks
// the spec in one way, and the check must refuse it.
func TestConformanceChecksBite(t *testing.T) {
	spec := loadSpec(t)
	request := func(method, path, body string) (*openapi3filter.RequestValidationInput, error) {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, "http://flightns.test"+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		return spec.validateRequest(req)
	}
	for _, tc := range []struct{ name, method, path, body string }{
		{"a mutation by GET", http.MethodGet, pProd + "/create" + dq, ""},
		{"a limit that is no integer", http.MethodGet, pRoot + "/list" + dq + "&limit=ten", ""},
		{"a required body left out", http.MethodPost, pOrders + "/describe" + dq, ""},
		{"a required field left out", http.MethodPost, pOrders + "/rename" + dq, `{"new_namespace_id":["prod"]}`},
		{"a field of the wrong type", http.MethodPost, pOrders + "/version/describe" + dq, `{"version":"two"}`},
		{"a negative version", http.MethodPost, pOrders + "/tags/create" + dq, `{"tag":"t","version":-1}`},
		{"no such path", http.MethodPost, pOrders + "/frobnicate" + dq, `{}`},
	} {
		if _, err := request(tc.method, tc.path, tc.body); err == nil {
			t.Errorf("request: %s passed", tc.name)
		}
	}

	// Replies, each to a request in the spec's form (GET for the
	// namespace and table lists, POST without a body for the lists of a
	// table's versions and tags, POST with a body otherwise).
	jsonHeader := http.Header{"Content-Type": []string{"application/json"}}
	for _, tc := range []struct {
		name               string
		method, path, body string
		reply              reply
	}{
		{"a list that is null", http.MethodGet, pRoot + "/list" + dq, "",
			reply{200, jsonHeader, []byte(`{"namespaces":null}`)}},
		{"a required list left out", http.MethodGet, "/v1/table" + dq, "",
			reply{200, jsonHeader, []byte(`{"page_token":"x"}`)}},
		{"a list with a repeated name", http.MethodGet, pSales + "/table/list" + dq, "",
			reply{200, jsonHeader, []byte(`{"tables":["a","a"]}`)}},
		{"a version without its manifest_path", http.MethodPost, pOrders + "/version/list" + dq, "",
			reply{200, jsonHeader, []byte(`{"versions":[{"version":1}]}`)}},
		{"a negative count", http.MethodPost, pOrders + "/stats" + dq, "{}",
			reply{200, jsonHeader, []byte(`{"total_bytes":-1,"num_rows":0,"num_indices":0,` +
				`"fragment_stats":{"num_fragments":0,"num_small_fragments":0,"lengths":{"min":0,"max":0,"mean":0,"p25":0,"p50":0,"p75":0,"p99":0}}}`)}},
		{"a tag without its manifestSize", http.MethodPost, pOrders + "/tags/list" + dq, "",
			reply{200, jsonHeader, []byte(`{"tags":{"t":{"version":1}}}`)}},
		{"another media type", http.MethodGet, pRoot + "/list" + dq, "",
			reply{200, http.Header{"Content-Type": []string{"text/plain"}}, []byte(`{"namespaces":[]}`)}},
		{"an error without its code", http.MethodGet, pRoot + "/list" + dq, "",
			reply{404, jsonHeader, []byte(`{"error":"no"}`)}},
		{"a status the operation does not declare", http.MethodPost, pProd + "/describe" + dq, "{}",
			reply{409, jsonHeader, []byte(`{"code":2}`)}},
	} {
		in, err := request(tc.method, tc.path, tc.body)
		if err != nil {
			t.Fatalf("%s: the request: %v", tc.name, err)
		}
		if err := validateResponse(in, tc.reply); err == nil {
			t.Errorf("reply: %s passed", tc.name)
		}
	}

	// Error bodies checked against ErrorResponse itself.
	for _, body := range []string{`{"error":"no code"}`, `{"code":-1}`, `{"code":"4"}`, `[]`} {
		if err := spec.validateError(reply{406, jsonHeader, []byte(body)}); err == nil {
			t.Errorf("error body %s passed as an ErrorResponse", body)
		}
	}
	if err := spec.validateError(reply{406, jsonHeader, []byte(`{"error":"no","code":0,"detail":"d","instance":"/v1/x"}`)}); err != nil {
		t.Errorf("a well-formed error body was refused: %v", err)
	}
}
