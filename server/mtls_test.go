package server_test

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
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightns/flightns/server"
)

// pki is a CA of a test's own.
type pki struct {
	t    *testing.T
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

var serial int64 = 100

func newCA(t *testing.T, name string) *pki {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &pki{t: t, cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a certificate for cn (a server's for 127.0.0.1 when server)
// and returns it and its key, PEM.
func (p *pki) issue(cn string, server bool) (certPEM, keyPEM []byte) {
	p.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage, tmpl.IPAddresses = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.cert, &key.PublicKey, p.key)
	if err != nil {
		p.t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		p.t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// With --tls-client-ca every Flight and REST client must present a
// certificate the CA signed; a certificate whose subject the auth file
// names is that principal (with its role), any other needs credentials
// besides; a certificate of another CA, or none, gets no connection.
// Proven with ADBC (Flight) and Go's HTTP client (REST).
func TestMutualTLS(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ca, rogue := newCA(t, "flightns test CA"), newCA(t, "rogue CA")
	srvCert, srvKey := ca.issue("flightns", true)
	etlCert, etlKey := ca.issue("etl", false)
	strangerCert, strangerKey := ca.issue("stranger", false)
	rogueCert, rogueKey := rogue.issue("etl", false) // the right name, the wrong CA
	cfg := config(t, t.TempDir())
	cfg.TLSCert, cfg.TLSKey = writeFile(t, dir, "server.pem", srvCert), writeFile(t, dir, "server.key", srvKey)
	cfg.TLSClientCA = writeFile(t, dir, "ca.pem", ca.pem)
	cfg.AuthFile = writeFile(t, dir, "auth.json", []byte(`{"users": [{"name": "ana", "password": "pw-ana", "role": "write"}],
		"certificates": [{"subject": "CN=etl", "name": "etl", "role": "read"}]}`))
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()

	// REST.
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.pem)
	rest := func(certPEM, keyPEM []byte, method, path, basic string) (int, error) {
		t.Helper()
		tc := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		if certPEM != nil {
			c, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				t.Fatal(err)
			}
			tc.Certificates = []tls.Certificate{c}
		}
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}
		defer hc.CloseIdleConnections()
		req, _ := http.NewRequest(method, "https://"+srv.RESTAddr().String()+path, strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		if basic != "" {
			req.SetBasicAuth(basic, "pw-"+basic)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}
	if _, err := rest(nil, nil, http.MethodGet, "/v1/namespace/by-ana/list", ""); err == nil {
		t.Fatal("a REST client without a certificate got an answer")
	}
	if _, err := rest(rogueCert, rogueKey, http.MethodGet, "/v1/namespace/by-ana/list", ""); err == nil {
		t.Fatal("a REST client with another CA's certificate got an answer")
	}
	for _, c := range []struct {
		what, method, path, basic string
		cert, key                 []byte
		want                      int
	}{
		{"a stranger with ana's password creates", http.MethodPost, "/v1/namespace/by-ana/create", "ana", strangerCert, strangerKey, http.StatusOK},
		{"etl lists", http.MethodGet, "/v1/namespace/by-ana/list", "", etlCert, etlKey, http.StatusOK},
		{"etl (a reader) creates", http.MethodPost, "/v1/namespace/by-etl/create", "", etlCert, etlKey, http.StatusForbidden},
		{"a stranger lists", http.MethodGet, "/v1/namespace/by-ana/list", "", strangerCert, strangerKey, http.StatusUnauthorized},
	} {
		code, err := rest(c.cert, c.key, c.method, c.path, c.basic)
		if err != nil || code != c.want {
			t.Errorf("REST, %s: %d %v, want %d", c.what, code, err, c.want)
		}
	}

	// Flight, through ADBC.
	adbcQuery := func(opts map[string]string) error {
		t.Helper()
		all := map[string]string{adbc.OptionKeyURI: "grpc+tls://" + srv.FlightAddr().String(), adbcflight.OptionSSLRootCerts: string(ca.pem)}
		for k, v := range opts {
			all[k] = v
		}
		db, err := adbcflight.NewDriver(memory.DefaultAllocator).NewDatabase(all)
		if err != nil {
			return err
		}
		defer func() { _ = db.Close() }()
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		cn, err := db.Open(cctx)
		if err != nil {
			return err
		}
		defer func() { _ = cn.Close() }()
		st, err := cn.NewStatement()
		if err != nil {
			return err
		}
		defer func() { _ = st.Close() }()
		if err := st.SetSqlQuery("SELECT count(*) AS n FROM namespaces"); err != nil {
			return err
		}
		rdr, _, err := st.ExecuteQuery(cctx)
		if err != nil {
			return err
		}
		defer rdr.Release()
		for rdr.Next() {
		}
		return rdr.Err()
	}
	mtls := func(certPEM, keyPEM []byte) map[string]string {
		return map[string]string{adbcflight.OptionMTLSCertChain: string(certPEM), adbcflight.OptionMTLSPrivateKey: string(keyPEM)}
	}
	if err := adbcQuery(mtls(etlCert, etlKey)); err != nil {
		t.Fatalf("ADBC with etl's certificate: %v", err)
	}
	withAna := mtls(strangerCert, strangerKey)
	withAna[adbc.OptionKeyUsername], withAna[adbc.OptionKeyPassword] = "ana", "pw-ana"
	if err := adbcQuery(withAna); err != nil {
		t.Fatalf("ADBC with a stranger's certificate and ana's password: %v", err)
	}
	for what, opts := range map[string]map[string]string{
		"no certificate":             nil,
		"another CA's certificate":   mtls(rogueCert, rogueKey),
		"a certificate of no one":    mtls(strangerCert, strangerKey),
		"no certificate, a password": {adbc.OptionKeyUsername: "ana", adbc.OptionKeyPassword: "pw-ana"},
	} {
		if err := adbcQuery(opts); err == nil {
			t.Errorf("ADBC with %s ran a query", what)
		}
	}
}
