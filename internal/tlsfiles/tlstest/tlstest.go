// Package tlstest makes certificate authorities and server certificates
// for tests that serve or reach a bus over TLS. No binary links it.
package tlstest

import (
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
	"sync/atomic"
	"testing"
	"time"
)

// Authority is a test certificate authority (ECDSA P-256), valid from an
// hour ago for a day.
type Authority struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// Pool holds Cert alone, for clients that are given their roots.
	Pool   *x509.CertPool
	serial atomic.Int64
}

// NewAuthority returns a new authority named name.
func NewAuthority(tb testing.TB, name string) *Authority {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	a := &Authority{Cert: cert, key: key, Pool: pool}
	a.serial.Store(1)
	return a
}

// PEM returns the authority's certificate in PEM, as SSL_CERT_FILE holds it.
func (a *Authority) PEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.Cert.Raw})
}

// WriteCA writes the authority's certificate into dir and returns the
// file's path.
func (a *Authority) WriteCA(tb testing.TB, dir string) string {
	tb.Helper()
	path := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(path, a.PEM(), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// Leaf returns a server certificate for hosts (IP addresses or DNS
// names) and its key, both in PEM, and its serial number.
func (a *Authority) Leaf(tb testing.TB, hosts ...string) (certPEM, keyPEM []byte, serial int64) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	serial = a.serial.Add(1)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: "interlink test relay"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.Cert, &key.PublicKey, a.key)
	if err != nil {
		tb.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), serial
}

// WriteLeaf writes a server certificate for hosts and its key into dir as
// cert.pem and key.pem, replacing what is there, and returns their paths
// and the certificate's serial number.
func (a *Authority) WriteLeaf(tb testing.TB, dir string, hosts ...string) (certFile, keyFile string, serial int64) {
	tb.Helper()
	c, k, serial := a.Leaf(tb, hosts...)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for path, data := range map[string][]byte{certFile: c, keyFile: k} {
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			tb.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			tb.Fatal(err)
		}
	}
	return certFile, keyFile, serial
}

// ServerConfig returns a TLS configuration that serves a certificate of
// the authority for hosts.
func (a *Authority) ServerConfig(tb testing.TB, hosts ...string) *tls.Config {
	tb.Helper()
	c, k, _ := a.Leaf(tb, hosts...)
	pair, err := tls.X509KeyPair(c, k)
	if err != nil {
		tb.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
}

// ClientConfig returns a TLS configuration that trusts the authority
// alone.
func (a *Authority) ClientConfig() *tls.Config {
	return &tls.Config{RootCAs: a.Pool, MinVersion: tls.VersionTLS12}
}
