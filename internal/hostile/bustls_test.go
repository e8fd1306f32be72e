//go:build unix

package hostile

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/tlsfiles/tlstest"
)

// startTLSBus serves a bus over TLS whose header and request deadlines
// are a second, and returns its address and a client configuration that
// trusts its certificate.
func startTLSBus(t *testing.T) (addr string, client *tls.Config) {
	t.Helper()
	ca := tlstest.NewAuthority(t, "interlink test authority")
	base := bustest.Start(t, &bustest.Options{TLS: ca.ServerConfig(t, "127.0.0.1"),
		HeaderTimeout: time.Second, RequestTimeout: time.Second})
	return strings.TrimPrefix(base, "https://"), ca.ClientConfig()
}

// dialTLS opens a TLS connection to addr and finishes its handshake.
func dialTLS(t *testing.T, addr string, cfg *tls.Config) *tls.Conn {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedWithoutAnswer waits, up to a guard far beyond the bus's
// deadlines, for the bus to close c without writing anything.
func closedWithoutAnswer(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	b := make([]byte, 1)
	n, err := c.Read(b)
	var ne net.Error
	switch {
	case n > 0:
		t.Errorf("read %q; want the connection closed without an answer", b[:n])
	case errors.As(err, &ne) && ne.Timeout():
		t.Errorf("the connection is still open after 30 s: %v", err)
	case !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET):
		t.Errorf("read: %v; want the connection closed", err)
	}
}

// TestTLSConnectionsStalledBeforeTheirHeadersAreCutOff: a TLS connection
// is not screened, so Go's HTTP server alone bounds what comes before its
// first request: a client that never starts its handshake, and one that
// finishes it and stalls in its headers, are both closed at the header
// deadline.
func TestTLSConnectionsStalledBeforeTheirHeadersAreCutOff(t *testing.T) {
	addr, cfg := startTLSBus(t)
	t.Run("before its handshake", func(t *testing.T) {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		closedWithoutAnswer(t, c)
	})
	t.Run("in the middle of its handshake", func(t *testing.T) {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// The first bytes of a TLS record header: a handshake record of
		// TLS 1.2 whose length never comes.
		if _, err := c.Write([]byte{0x16, 0x03, 0x03}); err != nil {
			t.Fatal(err)
		}
		closedWithoutAnswer(t, c)
	})
	t.Run("in its headers", func(t *testing.T) {
		c := dialTLS(t, addr, cfg)
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: bus\r\n"); err != nil {
			t.Fatal(err)
		}
		closedWithoutAnswer(t, c)
	})
}

// TestTLSConnectionsKeepTheHeaderBound: over TLS, where the header screen
// cannot read, a first request's headers are held to the same bound as on
// a plain connection: headers of [bus.MaxHeaderBytes] are served, one byte
// more, or one header line of a mebibyte, get 431.
func TestTLSConnectionsKeepTheHeaderBound(t *testing.T) {
	addr, cfg := startTLSBus(t)
	for _, tc := range []struct {
		name string
		req  string
		want int
	}{
		{"headers of the bound", headersOfSize(bus.MaxHeaderBytes), http.StatusOK},
		{"headers a byte over the bound", headersOfSize(bus.MaxHeaderBytes + 1), http.StatusRequestHeaderFieldsTooLarge},
		{"a 1 MiB header line", "GET /healthz HTTP/1.1\r\nHost: bus\r\nX-Long: " + strings.Repeat("a", 1<<20) + "\r\n\r\n",
			http.StatusRequestHeaderFieldsTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialTLS(t, addr, cfg)
			c.SetDeadline(time.Now().Add(30 * time.Second))
			// The bus may answer before the client is done sending.
			go io.WriteString(c, tc.req)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("answered %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}
