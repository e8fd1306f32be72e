package tlsfiles

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// ErrPlainHTTPToTLS reports a request sent as plain HTTP to a port that
// speaks TLS; [CheckResponse] returns it.
var ErrPlainHTTPToTLS = errors.New("tlsfiles: the relay speaks TLS but the request was plain HTTP")

// plainToTLS is the start of the body Go's HTTP server answers a plain
// request on a TLS port with (400 Bad Request).
const plainToTLS = "Client sent an HTTP request to an HTTPS server."

// CheckResponse returns [ErrPlainHTTPToTLS] when resp is the answer a TLS
// server gives a plain HTTP request, and nil otherwise. It leaves the body
// readable as it was.
func CheckResponse(resp *http.Response) error {
	if resp == nil || resp.StatusCode != http.StatusBadRequest || resp.Body == nil {
		return nil
	}
	head, err := io.ReadAll(io.LimitReader(resp.Body, 256))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	if err == nil && bytes.HasPrefix(head, []byte(plainToTLS)) {
		return ErrPlainHTTPToTLS
	}
	return nil
}

// Explain returns one sentence saying what a TLS error from a request to a
// relay means and what to do, or "" when err is not one it knows.
func Explain(err error) string {
	if err == nil {
		return ""
	}
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		record   tls.RecordHeaderError
		verify   *tls.CertificateVerificationError
	)
	switch {
	case errors.Is(err, ErrPlainHTTPToTLS):
		return "the relay speaks TLS but its address starts with http://; use https://"
	case errors.As(err, &unknown):
		return "the relay's certificate is not signed by an authority this machine trusts (system roots, SSL_CERT_FILE, SSL_CERT_DIR)"
	case errors.As(err, &hostname):
		return explainHostname(hostname)
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired && invalid.Cert != nil:
		const layout = "2006-01-02 15:04 MST"
		if now := time.Now(); now.Before(invalid.Cert.NotBefore) {
			return fmt.Sprintf("the relay's certificate is not valid before %s (check this machine's clock)",
				invalid.Cert.NotBefore.UTC().Format(layout))
		}
		return fmt.Sprintf("the relay's certificate expired on %s", invalid.Cert.NotAfter.UTC().Format(layout))
	case errors.As(err, &invalid):
		return fmt.Sprintf("the relay's certificate was refused: %v", invalid)
	case errors.As(err, &record) || errors.Is(err, http.ErrSchemeMismatch):
		// A server that answers a TLS handshake in plain HTTP: a
		// transport reports the record it could not read, and
		// [http.Client] replaces that error with its sentinel.
		return "the relay answered in plain HTTP, not TLS; use an http:// address, or start the relay with --tls-cert and --tls-key"
	case errors.As(err, &verify):
		return fmt.Sprintf("the relay's certificate could not be verified: %v", verify.Err)
	}
	return ""
}

func explainHostname(h x509.HostnameError) string {
	var names []string
	if h.Certificate != nil {
		names = append(names, h.Certificate.DNSNames...)
		for _, ip := range h.Certificate.IPAddresses {
			names = append(names, ip.String())
		}
	}
	if len(names) == 0 {
		return fmt.Sprintf("the relay's certificate names no host (a common name alone does not count), so it is not valid for %s", h.Host)
	}
	return fmt.Sprintf("the relay's certificate is for %s, not for %s", strings.Join(names, ", "), h.Host)
}
