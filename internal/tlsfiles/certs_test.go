package tlsfiles

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// authority is a test certificate authority (ECDSA P-256).
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newAuthority(t testing.TB) *authority {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "interlink test authority"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &authority{cert, key, pool}
}

// leaf is a server certificate's PEM files' contents.
type leaf struct {
	certPEM, keyPEM []byte
	serial          int64
}

type leafSpec struct {
	serial              int64
	dns                 []string
	ips                 []net.IP
	notBefore, notAfter time.Time
}

func (a *authority) issue(t testing.TB, sp leafSpec) leaf {
	t.Helper()
	if sp.notBefore.IsZero() {
		sp.notBefore = time.Now().Add(-time.Hour)
	}
	if sp.notAfter.IsZero() {
		sp.notAfter = time.Now().Add(time.Hour)
	}
	if sp.dns == nil && sp.ips == nil {
		sp.ips = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(sp.serial),
		Subject:      pkix.Name{CommonName: "relay"},
		NotBefore:    sp.notBefore,
		NotAfter:     sp.notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     sp.dns,
		IPAddresses:  sp.ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return leaf{
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
		serial:  sp.serial,
	}
}

// replace writes data to path as a renewal tool does: a temporary file
// renamed into place.
func replace(t testing.TB, path string, data []byte) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// writePair writes l to cert.pem and key.pem in dir and returns the paths.
func writePair(t testing.TB, dir string, l leaf) (string, string) {
	t.Helper()
	cf, kf := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	replace(t, cf, l.certPEM)
	replace(t, kf, l.keyPEM)
	return cf, kf
}
