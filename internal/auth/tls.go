package auth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TLSConfig is the TLS of Flight and REST alike: the server's certificate
// and key (PEM files) and, with clientCAFile, mutual TLS: every client
// must present a certificate that a CA of that file (PEM) signed, and its
// subject may name a principal (Config.Certificates).
func TLSConfig(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("TLS needs both a certificate and a key")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate and key: %w", err)
	}
	c := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCAFile != "" {
		pem, err := os.ReadFile(clientCAFile)
		if err != nil {
			return nil, fmt.Errorf("client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client CA %s holds no PEM certificate", clientCAFile)
		}
		c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return c, nil
}

// Certificate is the principal a verified client certificate names: the
// subject of its leaf, as Go writes it (RFC 2253, "CN=etl,O=Acme"), looked
// up in Config.Certificates. ok is false without a verified chain or when
// the subject names nobody; the caller then needs other credentials.
func (a *Authenticator) Certificate(chains [][]*x509.Certificate) (p Principal, ok bool) {
	if len(chains) == 0 || len(chains[0]) == 0 {
		return Principal{}, false
	}
	p, ok = a.certs[chains[0][0].Subject.String()]
	return p, ok
}
