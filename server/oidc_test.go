package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/go-jose/go-jose/v4"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/flightns/flightns/internal/testutil/oidctest"
	"github.com/flightns/flightns/server"
)

// With --oidc-issuer a bearer JWT of that issuer is a principal on REST
// and Flight alike, with the role its groups map to; a token of another
// key is refused on both.
func TestOIDCTokensOnEverySurface(t *testing.T) {
	ctx := context.Background()
	is := oidctest.Start(t)
	key := oidctest.NewKey(t, "k1")
	is.Publish(key)
	cfg := config(t, t.TempDir())
	cfg.OIDC = server.OIDC{Issuer: is.URL, Audience: "flightns", Roles: "catalog-writers=write,*=read"}
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	token := func(k oidctest.Key, groups ...string) string {
		return oidctest.Sign(t, jose.RS256, k.RSA, k.ID, map[string]any{"iss": is.URL, "aud": "flightns", "sub": "ana",
			"groups": groups, "exp": time.Now().Add(time.Hour).Unix()})
	}
	writer, reader, forged := token(key, "catalog-writers"), token(key), token(oidctest.NewKey(t, "k1"), "catalog-writers")
	for _, c := range []struct {
		what, token, path string
		want              int
	}{
		{"a writer creates", writer, "/v1/namespace/sales/create", 200},
		{"a reader creates", reader, "/v1/namespace/ops/create", 403},
		{"a reader describes", reader, "/v1/namespace/sales/describe", 200},
		{"a forged token describes", forged, "/v1/namespace/sales/describe", 401},
	} {
		if got := restStatus(t, srv, http.MethodPost, c.path, bearer(c.token)); got != c.want {
			t.Errorf("REST, %s: %d, want %d", c.what, got, c.want)
		}
	}
	fc, err := flightsql.NewClient(srv.FlightAddr().String(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fc.Close() }()
	if err := flightAction(ctx, fc, writer, "CreateNamespace", `{"id": ["hr"]}`); err != nil {
		t.Errorf("Flight, a writer creates: %v", err)
	}
	if err := flightAction(ctx, fc, reader, "CreateNamespace", `{"id": ["fin"]}`); status.Code(err) != codes.PermissionDenied {
		t.Errorf("Flight, a reader creates: %v", err)
	}
	if err := flightAction(ctx, fc, forged, "DescribeNamespace", `{"id": ["hr"]}`); status.Code(err) != codes.Unauthenticated {
		t.Errorf("Flight, a forged token: %v", err)
	}
	if _, err := fc.GetCatalogs(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+reader)); err != nil {
		t.Errorf("Flight SQL, a reader: %v", err)
	}
}
