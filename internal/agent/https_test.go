package agent_test

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/doctor"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/tlsfiles/tlstest"
)

const httpsChildEnv = "INTERLINK_AGENT_HTTPS_CHILD"

// wireTap is a TCP proxy on loopback that records every byte it forwards
// both ways, as anyone on the path between an agent and a relay could.
type wireTap struct {
	ln    net.Listener
	mu    sync.Mutex
	seen  bytes.Buffer          // guarded by mu
	conns map[net.Conn]struct{} // open, both sides; guarded by mu; nil once closed
	wg    sync.WaitGroup
}

func startWireTap(tb testing.TB, target string) *wireTap {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tp := &wireTap{ln: ln, conns: map[net.Conn]struct{}{}}
	tp.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			if !tp.track(c, up) {
				return
			}
			var pair sync.WaitGroup
			pair.Go(func() { tp.copy(up, c) })
			pair.Go(func() { tp.copy(c, up) })
			tp.wg.Go(func() { pair.Wait(); c.Close(); up.Close() })
		}
	})
	// Idle keep-alive connections of clients in this process would
	// otherwise hold the cleanup until the server drops them.
	tb.Cleanup(func() {
		ln.Close()
		tp.mu.Lock()
		for c := range tp.conns {
			c.Close()
		}
		tp.conns = nil
		tp.mu.Unlock()
		tp.wg.Wait()
	})
	return tp
}

// track records the two sides of a new connection, or closes them and
// reports false once the tap is closed.
func (tp *wireTap) track(cs ...net.Conn) bool {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.conns == nil {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		tp.conns[c] = struct{}{}
	}
	return true
}

func (tp *wireTap) copy(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			tp.mu.Lock()
			tp.seen.Write(buf[:n])
			tp.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				src.Close()
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

func (tp *wireTap) bytes() []byte {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return bytes.Clone(tp.seen.Bytes())
}

// Two agents trusting a test authority through SSL_CERT_FILE exchange and
// acknowledge messages through a bus that serves HTTPS and requires
// signatures, one of them through a tap that sees no text, msg_id or key
// in the clear. An agent that does not trust the relay's certificate
// logs the plain sentence saying so, and doctor reports it.
func TestAgentsExchangeOverHTTPS(t *testing.T) {
	if os.Getenv(httpsChildEnv) != "" {
		return
	}
	ca := tlstest.NewAuthority(t, "interlink test authority")
	base := bustest.Start(t, &bustest.Options{Auth: bus.AuthRequired, TLS: ca.ServerConfig(t, "127.0.0.1")})
	tp := startWireTap(t, strings.TrimPrefix(base, "https://"))
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHTTPSChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), httpsChildEnv+"=1", "SSL_CERT_FILE="+ca.WriteCA(t, dir), "SSL_CERT_DIR="+dir,
		"RELAY_DIRECT="+base, "RELAY_TAPPED=https://"+tp.ln.Addr().String())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "https child done") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var secrets []string
	for line := range strings.Lines(string(out)) {
		if _, s, ok := strings.Cut(strings.TrimSpace(line), "secret: "); ok {
			secrets = append(secrets, s)
		}
	}
	seen := tp.bytes()
	if len(secrets) < 6 || len(seen) < 5000 {
		t.Fatalf("%d secrets named, %d bytes tapped", len(secrets), len(seen))
	}
	for _, s := range append(secrets, "/recv", "/send", "Interlink-") {
		if bytes.Contains(seen, []byte(s)) {
			t.Errorf("the tap saw %q", s)
		}
	}

	// In this process the test authority is not trusted.
	const sentence = "not signed by an authority this machine trusts"
	id := agenttest.NewIdent(t)
	n := agenttest.Start(t, id, "u1", []string{base}, nil)
	agenttest.Eventually(t, "the agent to log why the relay is refused", func() bool {
		return strings.Contains(n.Logs.String(), sentence)
	})
	checks := doctor.Run(t.Context(), doctor.Config{KeyPath: id.KeyPath, PeersPath: id.PeersPath, URLs: []string{base},
		StateRoot: t.TempDir()})
	found := false
	for _, c := range checks {
		if c.ID == "relay" && c.Status == doctor.Fail && strings.Contains(c.Detail, sentence) {
			found = true
		}
	}
	if !found {
		t.Errorf("doctor does not say the relay's certificate is untrusted: %+v", checks)
	}
}

// TestHTTPSChild is the agents' half of TestAgentsExchangeOverHTTPS, in a
// process of its own because Go reads SSL_CERT_FILE once per process.
func TestHTTPSChild(t *testing.T) {
	if os.Getenv(httpsChildEnv) == "" {
		t.Skip("runs as a child of TestAgentsExchangeOverHTTPS")
	}
	direct, tapped := os.Getenv("RELAY_DIRECT"), os.Getenv("RELAY_TAPPED")
	alice, bob := agenttest.Pair(t)
	a := agenttest.Start(t, alice, "a1", []string{tapped}, nil)
	b := agenttest.Start(t, bob, "b1", []string{direct}, nil)
	agenttest.OnRoster(t, direct, alice.Key(), "a1")
	agenttest.OnRoster(t, direct, bob.Key(), "b1")
	textAB, textBA := "alice over a tapped https link", "bob answers over https"
	idAB := agenttest.MsgID(t, a.OK("send_message", map[string]any{"to": "bob", "session": "b1", "text": textAB}))
	b.WaitText("receive_messages", nil, textAB)
	idBA := agenttest.MsgID(t, b.OK("send_message", map[string]any{"to": "alice", "session": "a1", "text": textBA}))
	a.WaitText("receive_messages", nil, textBA)
	for _, q := range []struct {
		id  *agenttest.Ident
		url string
		rt  string
	}{{alice, tapped, alice.Key() + "#a1"}, {bob, direct, bob.Key() + "#b1"}} {
		c := relay.New(q.url, &relay.Options{Signer: q.id.Signer})
		agenttest.Eventually(t, q.rt+" acknowledged", func() bool {
			d, err := c.Recv(t.Context(), q.rt, 0)
			return err == nil && !d.HasMessage
		})
	}
	for _, s := range []string{textAB, textBA, idAB, idBA, alice.Key(), bob.Key()} {
		t.Logf("secret: %s", s)
	}
	t.Log("https child done")
}
