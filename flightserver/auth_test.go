package flightserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/nserror"
)

// every Flight RPC, called without credentials.
var everyRPC = map[string]func(ctx context.Context, c flight.Client) error{
	"Handshake": func(ctx context.Context, c flight.Client) error {
		s, err := c.Handshake(ctx)
		if err != nil {
			return err
		}
		_ = s.CloseSend()
		_, err = s.Recv()
		return err
	},
	"ListFlights": func(ctx context.Context, c flight.Client) error {
		s, err := c.ListFlights(ctx, &flight.Criteria{})
		if err != nil {
			return err
		}
		_, err = s.Recv()
		return err
	},
	"GetFlightInfo": func(ctx context.Context, c flight.Client) error {
		_, err := c.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte("x")})
		return err
	},
	"PollFlightInfo": func(ctx context.Context, c flight.Client) error {
		_, err := c.PollFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte("x")})
		return err
	},
	"GetSchema": func(ctx context.Context, c flight.Client) error {
		_, err := c.GetSchema(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte("x")})
		return err
	},
	"DoGet": func(ctx context.Context, c flight.Client) error {
		s, err := c.DoGet(ctx, &flight.Ticket{Ticket: []byte("x")})
		if err != nil {
			return err
		}
		_, err = s.Recv()
		return err
	},
	"DoPut": func(ctx context.Context, c flight.Client) error {
		s, err := c.DoPut(ctx)
		if err != nil {
			return err
		}
		_ = s.CloseSend()
		_, err = s.Recv()
		return err
	},
	"DoExchange": func(ctx context.Context, c flight.Client) error {
		s, err := c.DoExchange(ctx)
		if err != nil {
			return err
		}
		_ = s.CloseSend()
		_, err = s.Recv()
		return err
	},
	"DoAction": func(ctx context.Context, c flight.Client) error {
		s, err := c.DoAction(ctx, &flight.Action{Type: "ListNamespaces", Body: []byte(`{"id":[]}`)})
		if err != nil {
			return err
		}
		_, err = s.Recv()
		return err
	},
	"ListActions": func(ctx context.Context, c flight.Client) error {
		s, err := c.ListActions(ctx, &flight.Empty{})
		if err != nil {
			return err
		}
		_, err = s.Recv()
		return err
	},
}

func TestEveryRPCWithoutCredentialsIsRefused(t *testing.T) {
	e := start(t, withAuth)
	c := e.client()
	ctx := context.Background()
	for name, call := range everyRPC {
		st := wantStatus(t, name, call(ctx, c.Client), codes.Unauthenticated)
		if name != "Handshake" {
			wantLanceCode(t, name, st.Err(), nserror.Unauthenticated)
		}
	}
	// And with wrong ones.
	for _, hdr := range [][]string{
		{"authorization", "Bearer nope"},
		{"authorization", "Basic YW5hOndyb25n"}, // ana:wrong
		{"x-api-key", "nope"},
		{"authorization", "Digest x"},
	} {
		bad := metadata.AppendToOutgoingContext(ctx, hdr...)
		for name, call := range everyRPC {
			wantStatus(t, name+" with "+hdr[1], call(bad, c.Client), codes.Unauthenticated)
		}
	}
}

func TestEveryRPCIsOpenWhenAuthIsOff(t *testing.T) {
	e := start(t)
	c := e.client()
	ctx, err := c.Client.AuthenticateBasicToken(context.Background(), "anyone", "anything")
	if err != nil {
		t.Fatalf("handshake with auth off: %v", err)
	}
	info, err := c.Execute(ctx, "SELECT 1 AS one")
	_, recs := fetch(t, ctx, c, info, err)
	if got := column(t, recs, "one"); !slices.Equal(got, []string{"1"}) {
		t.Fatal(got)
	}
	if err := doAction(context.Background(), c.Client, "CreateNamespace", map[string]any{"id": []string{"x"}}, nil); err != nil {
		t.Fatalf("anonymous mutation with auth off: %v", err)
	}
}

func TestBasicHandshakeHandsOutABearerToken(t *testing.T) {
	e := start(t, withAuth)
	c := e.client()
	ctx, err := c.Client.AuthenticateBasicToken(context.Background(), "ana", "ana-pw")
	if err != nil {
		t.Fatal(err)
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	tok := md.Get("authorization")
	if len(tok) != 1 || len(tok[0]) < len("Bearer ")+16 || tok[0][:7] != "Bearer " {
		t.Fatalf("token header %v", tok)
	}
	info, err := c.Execute(ctx, "SELECT 1 AS one")
	fetch(t, ctx, c, info, err)
	// The token alone (no basic header) works on a fresh context, as a
	// bearer token and as an x-api-key.
	for _, h := range [][]string{{"authorization", tok[0]}, {"x-api-key", tok[0][7:]}} {
		ctx2 := metadata.AppendToOutgoingContext(context.Background(), h...)
		if err := doAction(ctx2, c.Client, "CreateNamespace", map[string]any{"id": []string{"n-" + h[0]}}, nil); err != nil {
			t.Fatalf("%s: %v", h[0], err)
		}
	}
	// A Bearer handshake is checked and echoed.
	hs := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer write-token")
	s, err := c.Client.Handshake(hs)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.CloseSend()
	resp, err := s.Recv()
	if err != nil || string(resp.GetPayload()) != "write-token" {
		t.Fatalf("bearer handshake: %v %q", err, resp.GetPayload())
	}
	// A handshake with a live session renews it: a fresh session token,
	// good as the first.
	s, err = c.Client.Handshake(metadata.AppendToOutgoingContext(context.Background(), "authorization", tok[0]))
	if err != nil {
		t.Fatal(err)
	}
	_ = s.CloseSend()
	resp, err = s.Recv()
	renewed := string(resp.GetPayload())
	if err != nil || !auth.IsSession(renewed) || "Bearer "+renewed == tok[0] {
		t.Fatalf("a session's handshake: %v %q, want a fresh session token", err, renewed)
	}
	ctx3 := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+renewed)
	if err := doAction(ctx3, c.Client, "CreateNamespace", map[string]any{"id": []string{"n-renewed"}}, nil); err != nil {
		t.Fatalf("the renewed session: %v", err)
	}
	// Wrong passwords get nothing.
	_, err = c.Client.AuthenticateBasicToken(context.Background(), "ana", "nope")
	wantStatus(t, "wrong password", err, codes.Unauthenticated)
}

func TestHandshakeWithABasicAuthPayload(t *testing.T) {
	e := start(t, withAuth)
	c := e.client()
	s, err := c.Client.Handshake(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := proto.Marshal(&flight.BasicAuth{Username: "rita", Password: "rita-pw"})
	if err := s.Send(&flight.HandshakeRequest{Payload: payload}); err != nil {
		t.Fatal(err)
	}
	_ = s.CloseSend()
	resp, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	ctx := metadata.AppendToOutgoingContext(context.Background(), "auth-token-bin", string(resp.GetPayload()))
	var list api.ListNamespacesResponse
	if err := doAction(ctx, c.Client, "ListNamespaces", map[string]any{"id": []string{}}, &list); err != nil {
		t.Fatalf("with the handshake's token: %v", err)
	}
}

func TestReadersCannotMutate(t *testing.T) {
	e := start(t, withAuth)
	e.seed()
	orders := api.ID{"sales", "orders"}
	must(e.svc.Branches().CreateTableTag(context.Background(), api.CreateTableTagRequest{ID: orders, Tag: "first", Version: 1}))
	c := e.client()
	basic, err := c.Client.AuthenticateBasicToken(context.Background(), "rita", "rita-pw")
	if err != nil {
		t.Fatal(err)
	}
	for what, ctx := range map[string]context.Context{
		"read token": metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer read-token"),
		"read user":  basic,
	} {
		// Reading is fine.
		info, err := c.Execute(ctx, "SELECT count(*) AS n FROM namespaces")
		fetch(t, ctx, c, info, err)
		for _, a := range []struct {
			name string
			body any
		}{
			{"DescribeNamespace", map[string]any{"id": []string{"sales"}}},
			{"ListTableTags", map[string]any{"id": orders}},
			{"GetTableTagVersion", map[string]any{"id": orders, "tag": "first"}},
			{"ListTableBranches", map[string]any{"id": orders}},
			{"ListTableVersions", map[string]any{"id": orders}},
		} {
			if err := doAction(ctx, c.Client, a.name, a.body, nil); err != nil {
				t.Fatalf("%s %s: %v", what, a.name, err)
			}
		}
		for _, a := range []struct{ name, body string }{
			{"CreateNamespace", `{"id":["x"]}`},
			{"DropNamespace", `{"id":["ops"]}`},
			{"DeclareTable", `{"id":["sales","t"]}`},
			{"DropTable", `{"id":["sales","orders"]}`},
			{"CreateTableVersion", `{"id":["sales","orders"],"version":4,"manifest_path":"x"}`},
			{"BatchCommitTables", `{"operations":[]}`},
			{"BatchCreateTableVersions", `{"entries":[]}`},
			{"BatchDeleteTableVersions", `{"id":["sales","orders"],"ranges":[{"start_version":1,"end_version":3}]}`},
			{"RenameTable", `{"id":["sales","orders"],"new_table_name":"o2"}`},
			{"RegisterTable", `{"id":["sales","r"],"location":"x"}`},
			{"DeregisterTable", `{"id":["sales","orders"]}`},
			{"CreateTableTag", `{"id":["sales","orders"],"tag":"second","version":2}`},
			{"UpdateTableTag", `{"id":["sales","orders"],"tag":"first","version":3}`},
			{"DeleteTableTag", `{"id":["sales","orders"],"tag":"first"}`},
		} {
			s, err := c.Client.DoAction(ctx, &flight.Action{Type: a.name, Body: []byte(a.body)})
			if err == nil {
				_, err = s.Recv()
			}
			wantStatus(t, what+" "+a.name, err, codes.PermissionDenied)
			wantLanceCode(t, what+" "+a.name, err, nserror.PermissionDenied)
		}
	}
	// Nothing changed.
	list, err := e.svc.ListNamespaces(context.Background(), api.ListNamespacesRequest{})
	if err != nil || !slices.Equal(list.Namespaces, []string{"ops", "sales"}) {
		t.Fatalf("namespaces %v %v", list, err)
	}
	tags, err := e.svc.Branches().ListTableTags(context.Background(), api.ListTableTagsRequest{ID: orders})
	if err != nil || len(tags.Tags) != 1 || tags.Tags["first"].Version != 1 {
		t.Fatalf("tags %+v %v", tags, err)
	}
	versions, err := e.svc.Versions().ListTableVersions(context.Background(), api.ListTableVersionsRequest{ID: orders})
	if err != nil || len(versions.Versions) != 3 {
		t.Fatalf("versions %+v %v", versions, err)
	}
}

func TestTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	e := start(t, func(c *Config) { c.TLSCertFile, c.TLSKeyFile = certFile, keyFile })

	c, err := flightsql.NewClient(e.addr, nil, nil, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	ctx := context.Background()
	info, err := c.Execute(ctx, "SELECT 42 AS answer")
	_, recs := fetch(t, ctx, c, info, err)
	if got := column(t, recs, "answer"); !slices.Equal(got, []string{"42"}) {
		t.Fatal(got)
	}
	plain, err := flightsql.NewClient(e.addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = plain.Close() }()
	if _, err := plain.Execute(ctx, "SELECT 1"); err == nil {
		t.Fatal("a plaintext client talked to a TLS server")
	}

	if _, err := New(Config{Service: e.svc, TLSCertFile: certFile}); err == nil {
		t.Fatal("a certificate without a key was accepted")
	}
	if _, err := New(Config{Service: e.svc, TLSCertFile: filepath.Join(dir, "nope"), TLSKeyFile: keyFile}); err == nil {
		t.Fatal("a missing certificate was accepted")
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "flightns test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
