package relay

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/testutil"
	"github.com/interlink-go/interlink/internal/tlsfiles/tlstest"
)

// tap is a TCP proxy on loopback that records every byte it forwards in
// both directions, as anyone on the path between an agent and a relay
// could.
type tap struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	seen   bytes.Buffer // guarded by mu
	wg     sync.WaitGroup
}

func startTap(tb testing.TB, target string) *tap {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	t := &tap{ln: ln, target: target}
	t.wg.Go(t.accept)
	tb.Cleanup(func() { ln.Close(); t.wg.Wait() })
	return t
}

func (t *tap) accept() {
	for {
		c, err := t.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", t.target)
		if err != nil {
			c.Close()
			continue
		}
		var pair sync.WaitGroup
		pair.Go(func() { t.copy(up, c) })
		pair.Go(func() { t.copy(c, up) })
		t.wg.Go(func() { pair.Wait(); c.Close(); up.Close() })
	}
}

func (t *tap) copy(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			t.mu.Lock()
			t.seen.Write(buf[:n])
			t.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

func (t *tap) bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return bytes.Clone(t.seen.Bytes())
}

// The child half of the TLS tests runs in a process of its own, since Go
// reads SSL_CERT_FILE once per process.
const childEnv = "INTERLINK_RELAY_TLS_CHILD"

// runChild runs the test named name in a new process of this test binary
// with env added, and returns its output; it fails the test when the child
// fails.
func runChild(t *testing.T, name string, env ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), append(env, childEnv+"=1")...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child %s: %v\n%s", name, err, out)
	}
	return string(out)
}

// secretText is what the TLS tests send; it must never cross the tap in
// the clear.
const secretText = "the launch code is 0000 and must stay between us"

// An agent's client trusts the authority SSL_CERT_FILE names, signs its
// requests and exchanges a message with a relay that requires signatures
// over https; a tap on the way sees neither the text nor the route's
// key. Trusting another authority, the same relay is refused with a
// sentence that says why.
func TestClientTrustsSSLCertFileOverHTTPS(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		return // only the children below run in a child
	}
	ca := tlstest.NewAuthority(t, "interlink test authority")
	base := bustest.Start(t, &bustest.Options{Auth: bus.AuthRequired, TLS: ca.ServerConfig(t, "127.0.0.1")})
	tp := startTap(t, strings.TrimPrefix(base, "https://"))
	dir := t.TempDir()
	out := runChild(t, "TestChildExchangesOverHTTPS",
		"SSL_CERT_FILE="+ca.WriteCA(t, dir), "SSL_CERT_DIR="+dir, "RELAY_URL=https://"+tp.ln.Addr().String())
	if !strings.Contains(out, "exchanged over https") {
		t.Fatalf("child did not exchange:\n%s", out)
	}
	seen := tp.bytes()
	if len(seen) < 1000 {
		t.Fatalf("the tap saw %d bytes; it is not on the path", len(seen))
	}
	for _, secret := range []string{secretText, "launch code", testutil.Signer(t, 1).Public().String(), "/recv", "Interlink-Key"} {
		if bytes.Contains(seen, []byte(secret)) {
			t.Errorf("the tap saw %q", secret)
		}
	}

	other := tlstest.NewAuthority(t, "another authority")
	otherDir := t.TempDir()
	out = runChild(t, "TestChildDistrustsTheRelay",
		"SSL_CERT_FILE="+other.WriteCA(t, otherDir), "SSL_CERT_DIR="+otherDir, "RELAY_URL="+base)
	if !strings.Contains(out, "refused as untrusted") {
		t.Fatalf("child did not see the refusal:\n%s", out)
	}
}

func TestChildExchangesOverHTTPS(t *testing.T) {
	if os.Getenv(childEnv) != "1" {
		t.Skip("runs as a child of TestClientTrustsSSLCertFileOverHTTPS")
	}
	a, b := testutil.Signer(t, 1), testutil.Signer(t, 2)
	url := os.Getenv("RELAY_URL")
	ca, cb := New(url, &Options{Signer: a}), New(url, &Options{Signer: b})
	to := a.Public().String() + "#s1"
	m := identity.Message{From: b.Public().String(), To: a.Public().String(), Text: secretText,
		TS: uint64(time.Now().UnixMilli()), MsgID: strings.Repeat("cd", 16), Kind: identity.KindMessage}
	if err := b.SignMessage(&m); err != nil {
		t.Fatal(err)
	}
	payload, err := identity.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := cb.Send(ctx, to, payload); err != nil {
		t.Fatal(err)
	}
	d, err := ca.Recv(ctx, to, 0)
	if err != nil || !d.HasMessage || !bytes.Contains(d.Payload, []byte(secretText)) {
		t.Fatalf("recv: %+v %v", d, err)
	}
	if err := ca.Ack(ctx, to, d.Ack); err != nil {
		t.Fatal(err)
	}
	if err := ca.Announce(ctx, a.Announce("a", identity.SessionInfo{SessionID: "s1"}, uint64(time.Now().UnixMilli()))); err != nil {
		t.Fatal(err)
	}
	t.Log("exchanged over https")
}

func TestChildDistrustsTheRelay(t *testing.T) {
	if os.Getenv(childEnv) != "1" {
		t.Skip("runs as a child of TestClientTrustsSSLCertFileOverHTTPS")
	}
	c := New(os.Getenv("RELAY_URL"), &Options{Signer: testutil.Signer(t, 1)})
	_, err := c.Recv(context.Background(), testutil.Signer(t, 1).Public().String(), 0)
	var te *TLSError
	if !errors.As(err, &te) || !strings.Contains(te.Sentence, "not signed by an authority this machine trusts") {
		t.Fatalf("recv from an untrusted relay: %v", err)
	}
	if strings.Count(err.Error(), "\n") != 0 || !strings.Contains(err.Error(), "SSL_CERT_FILE") {
		t.Errorf("error is not one plain sentence: %q", err)
	}
	t.Log("refused as untrusted")
}

// Speaking the wrong protocol to a relay, either way round, is explained
// in one sentence that says what to change.
func TestWrongSchemeIsExplained(t *testing.T) {
	ca := tlstest.NewAuthority(t, "interlink test authority")
	tlsBase := bustest.Start(t, &bustest.Options{TLS: ca.ServerConfig(t, "127.0.0.1")})
	plainBase := bustest.Start(t, nil)
	tests := []struct {
		name, url, want string
	}{
		{"http to a TLS relay", "http://" + strings.TrimPrefix(tlsBase, "https://"), "use https://"},
		{"https to a plain relay", "https://" + strings.TrimPrefix(plainBase, "http://"), "answered in plain HTTP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(tt.url, &Options{HTTPClient: &http.Client{Transport: &http.Transport{TLSClientConfig: ca.ClientConfig()}}})
			for op, call := range map[string]func() error{
				"send":   func() error { return c.Send(context.Background(), "r", []byte(`{}`)) },
				"health": func() error { _, err := c.Health(context.Background()); return err },
			} {
				err := call()
				var te *TLSError
				if !errors.As(err, &te) || !strings.Contains(te.Sentence, tt.want) {
					t.Errorf("%s: %v, want a TLS error saying %q", op, err, tt.want)
				}
			}
		})
	}
}

// A relay's Retry-After reaches the caller with its refusal.
func TestStatusErrorCarriesRetryAfter(t *testing.T) {
	tests := []struct {
		header string
		want   time.Duration
	}{
		{"7", 7 * time.Second},
		{"", 0},
		{"Wed, 21 Oct 2015 07:28:00 GMT", 0},
		{"-3", 0},
		{"99999999", 10 * time.Minute},
	}
	for _, tt := range tests {
		url := startFake(t, func(w http.ResponseWriter, _ *http.Request) {
			if tt.header != "" {
				w.Header().Set("Retry-After", tt.header)
			}
			w.WriteHeader(http.StatusTooManyRequests)
		})
		err := New(url, nil).Send(context.Background(), "r", []byte(`{}`))
		var se *StatusError
		if !errors.As(err, &se) || se.Code != http.StatusTooManyRequests || se.RetryAfter != tt.want || se.Permanent() {
			t.Errorf("Retry-After %q: %#v, want 429 waiting %v, not permanent", tt.header, err, tt.want)
		}
	}
}

// A client for a relay reached over plain HTTP across a network warns
// once, when it is made; loopback and https do not.
func TestPlainHTTPAcrossANetworkWarnsOnce(t *testing.T) {
	tests := []struct {
		url  string
		warn bool
	}{
		{"http://192.0.2.10:9440", true},
		{"http://relay.example:9440/prefix", true},
		{"http://127.0.0.1:9440", false},
		{"http://[::1]:9440", false},
		{"http://LOCALHOST:9440", false},
		{"https://relay.example", false},
	}
	for _, tt := range tests {
		logs := &testutil.LockedBuffer{}
		c := New(tt.url, &Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
		_, _ = c.Roster(context.Background()) // no second warning
		if got := strings.Count(logs.String(), "plain HTTP across a network"); got != map[bool]int{true: 1}[tt.warn] {
			t.Errorf("%s: %d warnings:\n%s", tt.url, got, logs)
		}
	}
}
