package namespace

import (
	"context"
	"strings"
	"testing"
)

// Without vending configured nothing secret is answered, even to a
// caller that asks for credentials: the storage options are the root's
// endpoint and region alone.
func TestNoVendingAnswersNoSecret(t *testing.T) {
	ctx := context.Background()
	e := newTenvOn(t, "s3")
	yes := true
	must(e.s.CreateNamespace(ctx, CreateNamespaceRequest{ID: id("a")}))
	d := must(e.s.DeclareTable(ctx, DeclareTableRequest{ID: id("a", "t"), VendCredentials: &yes}))
	desc := must(e.s.DescribeTable(ctx, DescribeTableRequest{ID: id("a", "t"), VendCredentials: &yes}))
	for what, opts := range map[string]map[string]string{"declare": d.StorageOptions, "describe": desc.StorageOptions} {
		if opts["aws_endpoint"] == "" {
			t.Errorf("%s: no endpoint in %v", what, opts)
		}
		for k := range opts {
			if strings.Contains(k, "key") || strings.Contains(k, "token") || strings.Contains(k, "secret") {
				t.Errorf("%s answered %s without vending configured", what, k)
			}
		}
	}
}
