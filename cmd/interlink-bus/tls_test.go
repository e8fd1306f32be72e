package main

import (
	"crypto/tls"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/testutil"
	"github.com/interlink-go/interlink/internal/tlsfiles/tlstest"
)

// servedSerial returns the serial number of the certificate the bus at
// base serves to a new connection.
func servedSerial(t *testing.T, ca *tlstest.Authority, base string) int64 {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: ca.ClientConfig(), DisableKeepAlives: true}}
	resp, err := hc.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
		t.Fatalf("healthz over https: %d %+v", resp.StatusCode, resp.TLS)
	}
	return resp.TLS.PeerCertificates[0].SerialNumber.Int64()
}

// --tls-cert and --tls-key serve HTTPS, and a certificate renewed in
// place is served to new connections without a restart.
func TestTLSServesAndReloadsTheCertificate(t *testing.T) {
	ca := tlstest.NewAuthority(t, "interlink test authority")
	dir := t.TempDir()
	certFile, keyFile, first := ca.WriteLeaf(t, dir, "127.0.0.1")
	p := startBus(t, busEnv(), "--addr", "127.0.0.1:0", "--tls-cert", certFile, "--tls-key", keyFile)
	base := strings.Replace(p.base, "http://", "https://", 1)
	if got := servedSerial(t, ca, base); got != first {
		t.Fatalf("served serial %d, want %d", got, first)
	}
	if l := logLines(p.logs.String(), "access rules"); len(l) != 1 || !strings.Contains(l[0], "tls=true") {
		t.Errorf("access line %q", l)
	}
	// Plain HTTP to the TLS port is refused.
	if code, _ := get(t, p.base, "/healthz"); code != http.StatusBadRequest {
		t.Errorf("plain HTTP to the TLS port: %d", code)
	}

	_, _, second := ca.WriteLeaf(t, dir, "127.0.0.1")
	testutil.Eventually(t, 30*time.Second, "the renewed certificate to be served", func() bool {
		return servedSerial(t, ca, base) == second
	})
	if l := logLines(p.logs.String(), "tls certificate reloaded"); len(l) == 0 {
		t.Errorf("no reload logged:\n%s", p.logs)
	}
}

// Certificate flags that cannot work stop the bus with one line saying
// what is wrong.
func TestTLSAndAuthFlagErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--tls-cert", filepath.Join(dir, "c.pem")}, exitUsage, "--tls-cert without --tls-key"},
		{[]string{"--tls-key", filepath.Join(dir, "k.pem")}, exitUsage, "--tls-key without --tls-cert"},
		// The line names the problem in the command's words, without
		// the prefix of the package that found it.
		{[]string{"--tls-cert", filepath.Join(dir, "c.pem"), "--tls-key", filepath.Join(dir, "k.pem")}, exitError,
			"interlink-bus: certificate " + filepath.Join(dir, "c.pem") + " with key " + filepath.Join(dir, "k.pem") + ": open " +
				filepath.Join(dir, "c.pem") + ": no such file or directory\n"},
		{[]string{"--auth", "sometimes"}, exitUsage, `--auth "sometimes": want off, optional or required`},
		{[]string{"--path-prefix", "interlink/"}, exitUsage, "interlink-bus: path prefix \"interlink/\" must start with / and not end with it\n"},
	}
	for _, tt := range tests {
		p := launch(t, busEnv(), append([]string{"--addr", "127.0.0.1:0"}, tt.args...)...)
		if code := p.wait(t, startTimeout); code != tt.code || !strings.Contains(p.logs.String(), tt.want) {
			t.Errorf("%v: status %d, want %d, output %q does not say %q", tt.args, code, tt.code, p.logs, tt.want)
		}
	}
}
