package tlsfiles

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// tlsServer serves l over TLS on loopback.
func tlsServer(t testing.TB, l leaf) *httptest.Server {
	t.Helper()
	cert, err := tls.X509KeyPair(l.certPEM, l.keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func get(t testing.TB, url string, ca *authority) (*http.Response, error) {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool}}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	return c.Get(url)
}

// TestExplain makes each TLS mistake against a real server on loopback
// and checks the sentence Explain gives for the error the client gets.
func TestExplain(t *testing.T) {
	ca := newAuthority(t)
	stranger := newAuthority(t)
	now := time.Now()
	tests := []struct {
		name string
		url  func() string
		want string
	}{
		{"unknown authority", func() string {
			return tlsServer(t, stranger.issue(t, leafSpec{serial: 1})).URL
		}, "the relay's certificate is not signed by an authority this machine trusts (system roots, SSL_CERT_FILE, SSL_CERT_DIR)"},
		{"other host name", func() string {
			return tlsServer(t, ca.issue(t, leafSpec{serial: 2, dns: []string{"relay.example", "bus.example"}})).URL
		}, "the relay's certificate is for relay.example, bus.example, not for 127.0.0.1"},
		{"no name at all", func() string {
			return tlsServer(t, ca.issue(t, leafSpec{serial: 3, dns: []string{}, ips: []net.IP{}})).URL
		}, "the relay's certificate names no host (a common name alone does not count), so it is not valid for 127.0.0.1"},
		{"expired", func() string {
			return tlsServer(t, ca.issue(t, leafSpec{serial: 4,
				notBefore: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), notAfter: time.Date(2021, 3, 4, 5, 6, 0, 0, time.UTC)})).URL
		}, "the relay's certificate expired on 2021-03-04 05:06 UTC"},
		{"not yet valid", func() string {
			return tlsServer(t, ca.issue(t, leafSpec{serial: 5,
				notBefore: now.Add(48 * time.Hour).Truncate(time.Minute), notAfter: now.Add(72 * time.Hour)})).URL
		}, "the relay's certificate is not valid before " + now.Add(48*time.Hour).Truncate(time.Minute).UTC().Format("2006-01-02 15:04 MST") + " (check this machine's clock)"},
		{"tls to a plain port", func() string {
			srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			t.Cleanup(srv.Close)
			return strings.Replace(srv.URL, "http://", "https://", 1)
		}, "the relay answered in plain HTTP, not TLS; use an http:// address, or start the relay with --tls-cert and --tls-key"},
		{"plain to a tls port", func() string {
			return strings.Replace(tlsServer(t, ca.issue(t, leafSpec{serial: 6})).URL, "https://", "http://", 1)
		}, "the relay speaks TLS but its address starts with http://; use https://"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := get(t, tc.url(), ca)
			if err == nil {
				err = CheckResponse(resp)
				resp.Body.Close()
			}
			if err == nil {
				t.Fatal("request succeeded")
			}
			if got := Explain(err); got != tc.want {
				t.Errorf("Explain(%v)\n got %q\nwant %q", err, got, tc.want)
			}
		})
	}
}

// TestExplainLeavesOtherErrors returns nothing for errors that are not
// about TLS, and CheckResponse passes a good answer and an ordinary 400
// through with their bodies intact.
func TestExplainLeavesOtherErrors(t *testing.T) {
	for _, err := range []error{nil, errors.New("connection refused"), io.EOF} {
		if got := Explain(err); got != "" {
			t.Errorf("Explain(%v) = %q, want nothing", err, got)
		}
	}
	for _, tc := range []struct {
		status int
		body   string
	}{{200, "ok"}, {400, "bad route\n"}, {400, strings.Repeat("x", 1000)}} {
		resp := &http.Response{StatusCode: tc.status, Body: io.NopCloser(strings.NewReader(tc.body))}
		if err := CheckResponse(resp); err != nil {
			t.Errorf("%d %q: %v", tc.status, tc.body, err)
		}
		if b, _ := io.ReadAll(resp.Body); string(b) != tc.body {
			t.Errorf("%d: body after the check %q, want %q", tc.status, b, tc.body)
		}
	}
	ca := newAuthority(t)
	srv := tlsServer(t, ca.issue(t, leafSpec{serial: 1}))
	resp, err := get(t, srv.URL, ca)
	if err != nil || Explain(err) != "" || CheckResponse(resp) != nil {
		t.Errorf("a good request: %v", err)
	}
	if resp != nil {
		resp.Body.Close()
	}
}

// TestExplainRawTLSToPlainPort covers a client that is not net/http: a
// TLS handshake answered in plain HTTP is a tls.RecordHeaderError.
func TestExplainRawTLSToPlainPort(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", srv.Listener.Addr().String(), &tls.Config{ServerName: "relay.example"})
	if err == nil {
		c.Close()
		t.Fatal("handshake with a plain server succeeded")
	}
	if got := Explain(err); !strings.HasPrefix(got, "the relay answered in plain HTTP") {
		t.Errorf("Explain(%v) = %q", err, got)
	}
}

// TestExplainKnowsPlainHTTPByItsErrorNotItsText: a relay that answers
// TLS in plain HTTP is recognised by the error the HTTP stack returns,
// however the client got it (through [http.Client], which reports
// [http.ErrSchemeMismatch], or a transport alone, which reports the
// [tls.RecordHeaderError]) and however it was wrapped since, and an
// error that merely carries the same words is not taken for it.
func TestExplainKnowsPlainHTTPByItsErrorNotItsText(t *testing.T) {
	const want = "the relay answered in plain HTTP, not TLS; use an http:// address, or start the relay with --tls-cert and --tls-key"
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(srv.Close)
	url := strings.Replace(srv.URL, "http://", "https://", 1)

	_, viaClient := get(t, url, newAuthority(t))
	if !errors.Is(viaClient, http.ErrSchemeMismatch) {
		t.Fatalf("the client's error %v is not http.ErrSchemeMismatch", viaClient)
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, viaTransport := tr.RoundTrip(req)
	if !errors.As(viaTransport, new(tls.RecordHeaderError)) {
		t.Fatalf("the transport's error %v is not a tls.RecordHeaderError", viaTransport)
	}
	for name, err := range map[string]error{
		"client":            viaClient,
		"transport":         viaTransport,
		"wrapped":           fmt.Errorf("relay: send request failed: %w", viaClient),
		"wrapped twice":     fmt.Errorf("outer: %w", fmt.Errorf("relay: %w", viaTransport)),
		"the sentinel only": http.ErrSchemeMismatch,
	} {
		if got := Explain(err); got != want {
			t.Errorf("%s: Explain(%v) = %q, want %q", name, err, got, want)
		}
	}
	for _, err := range []error{
		errors.New("server gave HTTP response to HTTPS client"),
		fmt.Errorf("relay: %v", http.ErrSchemeMismatch), // its chain cut by %v
	} {
		if got := Explain(err); got != "" {
			t.Errorf("Explain(%q) = %q: an error's words alone must not decide", err, got)
		}
	}
}
