package namespace

import (
	"context"
	"maps"
	"net/url"
	"testing"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/testutil/redistest"
	"github.com/flightns/flightns/internal/testutil/s3test"
	"github.com/flightns/flightns/objstore"
)

// The endpoint answered to engines is the root's client_endpoint when it
// names one, and aws_allow_http follows that endpoint's scheme alone;
// without it, endpoint (and disable_https) as before.
func TestStorageOptionsAnswerTheClientEndpoint(t *testing.T) {
	cases := []struct {
		query string
		want  map[string]string
	}{
		{"endpoint=http://minio:9000&region=us-east-1&use_path_style=true&disable_https=true",
			map[string]string{"aws_endpoint": "http://minio:9000", "aws_allow_http": "true", "aws_region": "us-east-1", "aws_virtual_hosted_style_request": "false"}},
		{"endpoint=http://minio:9000&region=us-east-1&disable_https=true&client_endpoint=http://127.0.0.1:9000",
			map[string]string{"aws_endpoint": "http://127.0.0.1:9000", "aws_allow_http": "true", "aws_region": "us-east-1"}},
		{"endpoint=http://minio:9000&disable_https=true&client_endpoint=https://s3.example.com",
			map[string]string{"aws_endpoint": "https://s3.example.com"}},
		{"region=eu-west-1&client_endpoint=https://bucket.vpce.example.com",
			map[string]string{"aws_endpoint": "https://bucket.vpce.example.com", "aws_region": "eu-west-1"}},
	}
	for _, c := range cases {
		q, err := url.ParseQuery(c.query)
		if err != nil {
			t.Fatal(err)
		}
		if got := s3Options(q); !maps.Equal(got, c.want) {
			t.Errorf("%s:\n got %v\nwant %v", c.query, got, c.want)
		}
	}
}

// A root with a client_endpoint that flightns itself cannot reach serves
// as any other: its objects and STS are reached at endpoint, and every
// answer — plain, declared, described with vended credentials — names
// the client endpoint.
func TestTheClientEndpointIsAnsweredNeverUsed(t *testing.T) {
	ctx := context.Background()
	const engines = "http://engines.invalid:9000"
	objs, err := objstore.Open(ctx, s3test.Start(t, "cat").URI("cat", "root")+"&"+objstore.ParamClientEndpoint+"="+url.QueryEscape(engines))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = objs.Close() })
	s, err := Open(ctx, Config{Objects: objs, Redis: redistest.Start(t).Client(), Catalog: "engines", Logger: quiet,
		Vend: &objstore.VendOptions{Duration: 15 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	no, yes := false, true
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("a")}))
	d := must(s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("a", "t"), VendCredentials: &no}))
	vended := must(s.DescribeTable(ctx, api.DescribeTableRequest{ID: id("a", "t"), VendCredentials: &yes}))
	for what, opts := range map[string]map[string]string{"declared": d.StorageOptions, "described with credentials": vended.StorageOptions} {
		if opts["aws_endpoint"] != engines || opts["aws_allow_http"] != "true" {
			t.Errorf("%s: %v; want aws_endpoint %s", what, opts, engines)
		}
	}
	if vended.StorageOptions["aws_session_token"] == "" {
		t.Errorf("no credentials vended: %v", vended.StorageOptions)
	}
}
