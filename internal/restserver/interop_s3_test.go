package restserver

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/minioproc"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/testutil/s3test"
	"github.com/flightns/flightns/objstore"
)

// TestLanceDBOnS3 runs the branch and tag scenario with the data on a
// MinIO server: through flightns (an s3:// root), where LanceDB is given
// nothing but the REST URI — where each table is and how to reach the
// store come from DescribeTable and DeclareTable, the keys from the
// environment as for any AWS client — and through Lance's own directory
// namespace on the same bucket, given the storage options a Lance user
// writes. LanceDB must observe the same at every step. Then plain LanceDB
// (lancedb.connect, no namespace) reads the table flightns committed, with
// the options the catalog handed out, and sees the same branches, tags
// and rows; and the catalog hands out no secret.
func TestLanceDBOnS3(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t, "lake")
	objs, err := objstore.Open(ctx, srv.URI("lake", "cat"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = objs.Close() })
	s := startServer(t, withConfig(func(c *namespace.Config) { c.Objects = objs }))

	dirOptions, _ := json.Marshal(map[string]string{
		"aws_endpoint": srv.URL, "aws_region": minioproc.Region, "aws_allow_http": "true",
		"aws_virtual_hosted_style_request": "false",
		"aws_access_key_id":                minioproc.AccessKey, "aws_secret_access_key": minioproc.SecretKey,
	})
	var dir, rest branchesReport
	node(t, nil, &dir, "branches.mjs", "dir", "s3://lake/dir", string(dirOptions))
	node(t, nil, &rest, "branches.mjs", "rest", s.url())
	sameObservations(t, rest, dir)

	// What the catalog told LanceDB: the table's s3:// location in the
	// bucket, and how to reach the store, and nothing secret.
	var d api.DescribeTableResponse
	ok(t, "describe items", s.post("/v1/table/items/describe", nil)).decode(t, &d)
	want := map[string]string{"aws_endpoint": srv.URL, "aws_region": minioproc.Region, "aws_allow_http": "true",
		"aws_virtual_hosted_style_request": "false"}
	if len(d.StorageOptions) != len(want) {
		t.Errorf("storage options %v, want exactly %v", d.StorageOptions, want)
	}
	for k, v := range want {
		if d.StorageOptions[k] != v {
			t.Errorf("storage option %s = %q, want %q (all: %v)", k, d.StorageOptions[k], v, d.StorageOptions)
		}
	}
	u, err := url.Parse(d.Location)
	if err != nil || u.Scheme != "s3" || u.Host != "lake" || !strings.HasPrefix(u.Path, "/cat/") {
		t.Fatalf("location %q is not in s3://lake/cat/", d.Location)
	}
	tableKey := strings.TrimPrefix(u.Path, "/")
	if n := countObjects(t, srv, tableKey+"/_versions/"); n < 4 {
		t.Fatalf("%d objects under %s/_versions/ in the bucket", n, tableKey)
	}

	// Plain LanceDB opens <db>/<name>.lance only: the table's objects are
	// copied, byte for byte, to plain/items.lance in the same bucket (Lance
	// tables refer to their files relative to their own directory).
	copyPrefix(t, srv, tableKey+"/", "plain/items.lance/")
	plainOptions := map[string]string{"aws_access_key_id": minioproc.AccessKey, "aws_secret_access_key": minioproc.SecretKey}
	for k, v := range d.StorageOptions {
		plainOptions[k] = v
	}
	po, _ := json.Marshal(plainOptions)
	var plain branchesReport
	node(t, nil, &plain, "branches.mjs", "plain", "s3://lake/plain/items.lance", string(po))
	if !plain.OK || !jsonEqual(t, plain.Final, rest.Final) {
		t.Fatalf("plain LanceDB reading the table on S3 (%v):\n%s\nthrough flightns:\n%s", plain.Failures, plain.Final, rest.Final)
	}
}

// countObjects counts the objects under prefix in the bucket "lake".
func countObjects(t *testing.T, srv *s3test.Server, prefix string) int {
	t.Helper()
	n := 0
	p := s3.NewListObjectsV2Paginator(srv.Client(), &s3.ListObjectsV2Input{Bucket: aws.String("lake"), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Contents)
	}
	return n
}

// copyPrefix copies every object under from to the same name under to,
// in the bucket "lake", server-side.
func copyPrefix(t *testing.T, srv *s3test.Server, from, to string) {
	t.Helper()
	ctx := context.Background()
	p := s3.NewListObjectsV2Paginator(srv.Client(), &s3.ListObjectsV2Input{Bucket: aws.String("lake"), Prefix: aws.String(from)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			if strings.Contains(key, ".manifest-") {
				continue // a staging manifest, being deleted: no reader opens it
			}
			src := (&url.URL{Path: "lake/" + key}).EscapedPath()
			if _, err := srv.Client().CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("lake"),
				Key: aws.String(to + strings.TrimPrefix(key, from)), CopySource: aws.String(src)}); err != nil {
				t.Fatalf("copying %s: %v", key, err)
			}
		}
	}
}

// TestLanceDBOnVendedCredentials: LanceDB, given the REST URI and no
// storage keys at all, creates a table, appends to it and reads it back on
// MinIO with nothing but the credentials DescribeTable and DeclareTable
// vend, on a catalog under a prefix and on one that is a whole bucket;
// the same client against a catalog that vends nothing cannot reach the
// store (so the keys were the vended ones).
func TestLanceDBOnVendedCredentials(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t, "lake", "whole")
	open := func(bucket, prefix string) *objstore.Store {
		objs, err := objstore.Open(ctx, srv.URI(bucket, prefix))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = objs.Close() })
		return objs
	}
	keyless := []string{"-AWS_ACCESS_KEY_ID", "-AWS_SECRET_ACCESS_KEY", "-AWS_SESSION_TOKEN", "-AWS_PROFILE"}
	run := func(s *server, cfg map[string]any) appendReport {
		t.Helper()
		c := map[string]any{"impl": "rest", "uri": s.url(), "namespace": []string{"lake"}, "table": "events"}
		for k, v := range cfg {
			c[k] = v
		}
		b, _ := json.Marshal(c)
		var r appendReport
		node(t, keyless, &r, "append.mjs", string(b))
		return r
	}
	// A catalog under a prefix, and one that is a whole bucket.
	for _, root := range []struct{ name, bucket, prefix string }{{"under a prefix", "lake", "vend"}, {"a whole bucket", "whole", ""}} {
		t.Run(root.name, func(t *testing.T) {
			vending := startServer(t, withConfig(func(c *namespace.Config) {
				c.Objects, c.Vend = open(root.bucket, root.prefix), &objstore.VendOptions{Duration: 15 * time.Minute}
			}))
			if r := run(vending, map[string]any{"setup": true}); !r.OK || r.Version != 1 {
				t.Fatalf("LanceDB creating a table on vended credentials: %+v", r)
			}
			if r := run(vending, map[string]any{"worker": 1, "count": 3}); !r.OK || r.Added != 3 || len(r.Errors) != 0 {
				t.Fatalf("LanceDB appending on vended credentials: %+v", r)
			}
			var d api.DescribeTableResponse
			ok(t, "describe events", vending.post("/v1/table/lake%24events/describe", nil)).decode(t, &d)
			if d.Version == nil || *d.Version != 4 {
				t.Fatalf("after a create and 3 appends the table is at version %v, want 4", d.Version)
			}
			if want := "s3://" + strings.TrimSuffix(root.bucket+"/"+root.prefix, "/") + "/"; !strings.HasPrefix(d.Location, want) {
				t.Fatalf("the table is at %q, not under %s", d.Location, want)
			}
		})
	}

	plain := startServer(t, withConfig(func(c *namespace.Config) { c.Objects = open("lake", "plain") }))
	r := run(plain, map[string]any{"setup": true})
	if r.OK || !strings.Contains(strings.ToLower(strings.Join(r.Errors, " ")), "credential") {
		t.Fatalf("LanceDB without keys, on a catalog that vends nothing: %+v; want a failure for want of credentials", r)
	}
}

// TestLanceDBRefreshesVendedCredentials: with vended credentials due for
// renewal a few seconds after they are issued (RenewAfter, RefreshOffset),
// LanceDB (on no keys of its own) describes the table again while it
// reads, and reads on; each renewal answers new credentials (not the ones
// it holds, which would have it ask again at every request), so the
// describes stay one per renewal.
func TestLanceDBRefreshesVendedCredentials(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t, "lake")
	objs, err := objstore.Open(ctx, srv.URI("lake", "vend"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = objs.Close() })
	// Renewed 5 s after issuing, asked for 1 s before: due after 4 s.
	s := startServer(t, withConfig(func(c *namespace.Config) {
		c.Objects, c.Vend = objs, &objstore.VendOptions{Duration: 15 * time.Minute, RenewAfter: 5 * time.Second, RefreshOffset: time.Second}
	}))
	keyless := []string{"-AWS_ACCESS_KEY_ID", "-AWS_SECRET_ACCESS_KEY", "-AWS_SESSION_TOKEN", "-AWS_PROFILE"}
	cfg, _ := json.Marshal(map[string]any{"impl": "rest", "uri": s.url(), "namespace": []string{"lake"}, "table": "events", "setup": true})
	var setup appendReport
	node(t, keyless, &setup, "append.mjs", string(cfg))
	if !setup.OK {
		t.Fatalf("setup: %+v", setup)
	}
	describes := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		n := 0
		for _, l := range s.log {
			if strings.Contains(l, "/v1/table/lake%24events/describe") || strings.Contains(l, "/v1/table/lake$events/describe") {
				n++
			}
		}
		return n
	}
	before := describes()
	var r struct {
		OK     bool   `json:"ok"`
		Counts []int  `json:"counts"`
		Error  string `json:"error"`
	}
	const reads = 3
	node(t, keyless, &r, "refresh.mjs", s.url(), `["lake"]`, "events", strconv.Itoa(reads), "4500")
	if !r.OK || len(r.Counts) != reads || r.Counts[reads-1] != r.Counts[0]+reads-1 {
		t.Fatalf("LanceDB writing and reading across renewals: %+v", r)
	}
	// One describe to open, one per renewal (a read after each pause);
	// credentials answered back would have made it one per request.
	if n := describes() - before; n < reads || n > 2*reads {
		t.Errorf("%d describes for an open and %d rounds %v apart, want %d to %d:\n%s", n, reads, 4500*time.Millisecond, reads, 2*reads, strings.Join(s.log, "\n"))
	}
}
