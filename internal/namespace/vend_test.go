package namespace

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/objstore"
)

// Without vending configured nothing secret is answered, even to a
// caller that asks for credentials: the storage options are the root's
// endpoint and region alone.
func TestNoVendingAnswersNoSecret(t *testing.T) {
	ctx := context.Background()
	e := newTenvOn(t, "s3")
	yes := true
	must(e.s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("a")}))
	d := must(e.s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("a", "t"), VendCredentials: &yes}))
	desc := must(e.s.DescribeTable(ctx, api.DescribeTableRequest{ID: id("a", "t"), VendCredentials: &yes}))
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

// Vended credentials are answered again only while a client holding them
// would not yet ask for new ones: more than half their life and more
// than the refresh offset (and a little) left. Else a client renewing
// would get the same ones back, still due, and ask at every request.
func TestVendedCredentialsAreReusedOnlyBeforeTheyAreDue(t *testing.T) {
	now := time.Now()
	cases := []struct {
		issued, expires time.Duration // from now
		refresh         time.Duration
		reused          bool
	}{
		{-time.Minute, 14 * time.Minute, 0, true},               // young: reused
		{-10 * time.Minute, 5 * time.Minute, 0, false},          // past half its life
		{-time.Second, 7 * time.Second, 5 * time.Second, false}, // young, but due within the offset and slack
		{-time.Second, 30 * time.Second, 5 * time.Second, true}, // young and not due
		{-time.Second, 50 * time.Second, 0, false},              // due within Lance's 60 s
		{-time.Second, 9 * time.Minute, 9 * time.Minute, false}, // a refresh offset as long as what is left
	}
	for i, c := range cases {
		var v vendCache
		v.m = map[vendKey]objstore.Credentials{{"t", true}: {AccessKeyID: "old", Issued: now.Add(c.issued), Expires: now.Add(c.expires)}}
		got, err := v.get(context.Background(), "t", true, c.refresh, func(context.Context) (objstore.Credentials, error) {
			return objstore.Credentials{AccessKeyID: "new", Expires: now.Add(time.Hour)}, nil
		})
		if err != nil || (got.AccessKeyID == "old") != c.reused {
			t.Errorf("case %d: %s, %v; want reused %v", i, got.AccessKeyID, err, c.reused)
		}
	}
}

// Whether vended credentials write follows the caller's role on that
// table, grants included: a reader by grant gets the read-only kind, a
// writer by grant the writing kind, as catalog-wide readers and writers
// do.
func TestVendedCredentialsFollowGrants(t *testing.T) {
	ctx := context.Background()
	e := newTenvOn(t, "s3")
	s, err := Open(ctx, Config{Objects: e.objs, Redis: e.rdb, Catalog: e.catalog, Logger: quiet,
		Vend: &objstore.VendOptions{Duration: 15 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("a")}))
	must(s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("a", "t")}))
	must(0, s.Access().Grant(ctx, auth.Grant{Namespace: []string{"a"}, Principal: "ana", Role: auth.Read}))
	must(0, s.Access().Grant(ctx, auth.Grant{Namespace: []string{"a"}, Principal: "bo", Role: auth.Write}))
	key := func(p auth.Principal) string {
		t.Helper()
		d, err := s.DescribeTable(auth.WithPrincipal(ctx, p), api.DescribeTableRequest{ID: id("a", "t")})
		if err != nil || d.StorageOptions["aws_access_key_id"] == "" {
			t.Fatalf("%s: %v, %v", p.Name, d, err)
		}
		return d.StorageOptions["aws_access_key_id"]
	}
	reader, writer := key(auth.Principal{Name: "rita", Role: auth.Read}), key(auth.Principal{Name: "wes", Role: auth.Write})
	if reader == writer {
		t.Fatal("a reader and a writer got the same credentials")
	}
	if got := key(auth.Principal{Name: "ana", Role: auth.None}); got != reader {
		t.Error("a reader by grant did not get the read-only credentials")
	}
	if got := key(auth.Principal{Name: "bo", Role: auth.None}); got != writer {
		t.Error("a writer by grant did not get the writing credentials")
	}
}
