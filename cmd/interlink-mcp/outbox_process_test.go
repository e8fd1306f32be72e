//go:build unix

package main

// Process tests of the durable outbox: the server is stopped by SIGTERM or
// killed with SIGKILL while no relay is reachable, and what it queued
// reaches the peer through the next process of the session, or through the
// stopping process itself when the relay comes back during its grace
// period. The relay is an in-process bus on a fixed loopback port, stopped
// and started again with its queues kept.

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/testutil"
)

// switchBus is an in-memory bus on one loopback port that can be stopped
// and started again; its queues live on across restarts.
type switchBus struct {
	t    testing.TB
	addr string
	bus  *bus.Server
	st   *store.Memory

	mu  sync.Mutex
	srv *http.Server // nil while stopped; guarded by mu
	ln  net.Listener // guarded by mu
}

// newSwitchBus reserves a loopback port for a bus that is not started yet.
func newSwitchBus(t testing.TB) *switchBus {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	st := store.NewMemory(nil)
	b := &switchBus{t: t, addr: addr, st: st, bus: bus.New(st, nil)}
	t.Cleanup(func() {
		b.stop()
		b.bus.Shutdown()
		_ = st.Close()
	})
	return b
}

func (b *switchBus) url() string { return "http://" + b.addr }

// start serves the bus on its port.
func (b *switchBus) start() {
	b.t.Helper()
	var ln net.Listener
	// The port may linger for a moment after a stop.
	testutil.EventuallyNil(b.t, 5*time.Second, "a listener on "+b.addr, func() (err error) {
		ln, err = net.Listen("tcp", b.addr)
		return err
	})
	srv := &http.Server{Handler: b.bus, ReadHeaderTimeout: 10 * time.Second}
	b.mu.Lock()
	b.srv, b.ln = srv, ln
	b.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// stop closes the listener and every connection; queued messages stay.
func (b *switchBus) stop() {
	b.mu.Lock()
	srv := b.srv
	b.srv = nil
	b.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// drain takes every message queued for rt off the bus and returns them in
// queue order.
func (b *switchBus) drain(t testing.TB, rt string) []identity.Message {
	t.Helper()
	c := relay.New(b.url(), nil)
	var out []identity.Message
	for {
		d, err := c.Recv(context.Background(), rt, 0)
		if err != nil {
			t.Fatalf("recv %s: %v", rt, err)
		}
		if !d.HasMessage {
			return out
		}
		m, err := identity.DecodeMessage(d.Payload)
		if err != nil {
			t.Fatalf("payload on the bus: %v", err)
		}
		out = append(out, m)
		if err := c.Ack(context.Background(), rt, d.Ack); err != nil {
			t.Fatal(err)
		}
	}
}

// sendThree sends "one", "two" and "three" to bob's session b1 and returns
// their msg_ids.
func sendThree(t testing.TB, p *mcpProc) []string {
	t.Helper()
	var ids []string
	for _, text := range []string{"one", "two", "three"} {
		got := p.ok("send_message", map[string]any{"to": "bob", "session": "b1", "text": text})
		_, rest, ok := strings.Cut(got, "(msg_id ")
		if !ok {
			t.Fatalf("send_message = %q", got)
		}
		id, _, _ := strings.Cut(rest, ")")
		ids = append(ids, id)
	}
	if got := p.ok("list_pending", nil); !strings.HasPrefix(got, "3 pending:") {
		t.Fatalf("list_pending with the bus down = %q", got)
	}
	return ids
}

// wantDelivered checks that the bus holds exactly the messages ids, in
// order, each once, with the texts sendThree gave them.
func wantDelivered(t testing.TB, got []identity.Message, ids []string) {
	t.Helper()
	texts := []string{"one", "two", "three"}
	if len(got) != len(ids) {
		var seen []string
		for _, m := range got {
			seen = append(seen, m.MsgID+" "+m.Text)
		}
		t.Fatalf("the peer's queue holds %d messages %v, want %d", len(got), seen, len(ids))
	}
	for i, m := range got {
		if m.MsgID != ids[i] || m.Text != texts[i] {
			t.Errorf("message %d = %s %q, want %s %q", i+1, m.MsgID, m.Text, ids[i], texts[i])
		}
	}
}

// A server stopped (by SIGTERM) or killed (by SIGKILL) while the bus is
// down keeps what it queued; the next server of the session sends it once
// the bus is back: all three messages, once each, in order.
func TestOutboxSurvivesTheProcess(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, p *mcpProc)
	}{
		{"SIGTERM", func(t *testing.T, p *mcpProc) {
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := p.wait(); code != 0 {
				t.Errorf("exit status %d after SIGTERM", code)
			}
			if !strings.Contains(p.stderr.String(), "the next process of this session sends them") {
				t.Errorf("no note about the messages kept for the next process:\n%s", p.stderr.String())
			}
		}},
		{"SIGKILL", func(t *testing.T, p *mcpProc) {
			if err := p.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			p.wait()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newSwitchBus(t) // not started: the bus is down
			alice, bob := newAgentFiles(t), newAgentFiles(t)
			alice.admit(t, "bob", bob)
			p := launchMCP(t, alice.env(b.url(), "INTERLINK_SESSION=a1"))
			p.initialize()
			ids := sendThree(t, p)
			tc.end(t, p)

			// The next server of the session, still without a bus, lists
			// what the last one left, under the same msg_ids.
			next := launchMCP(t, alice.env(b.url(), "INTERLINK_SESSION=a1"))
			next.initialize()
			listed := next.ok("list_pending", nil)
			if !strings.HasPrefix(listed, "3 pending:") {
				t.Fatalf("list_pending in the next server = %q", listed)
			}
			for _, id := range ids {
				if !strings.Contains(listed, id) {
					t.Errorf("list_pending in the next server lacks %s:\n%s", id, listed)
				}
				if got := next.ok("message_status", map[string]any{"msg_id": id}); !strings.Contains(got, "[pending]") {
					t.Errorf("message_status(%s) in the next server = %q", id, got)
				}
			}

			b.start()
			next.waitText("list_pending", nil, "Nothing is waiting")
			for _, id := range ids {
				if got := next.ok("message_status", map[string]any{"msg_id": id}); !strings.Contains(got, "[bus_accepted]") {
					t.Errorf("message_status(%s) in the next process = %q", id, got)
				}
			}
			if code := next.closeAndWait(); code != 0 {
				t.Errorf("next server exit status %d", code)
			}
			wantDelivered(t, b.drain(t, bob.pubkey()+"#b1"), ids)
		})
	}
}

// A relay that comes back within a second of SIGTERM gets the message
// from the stopping process, which then exits normally.
func TestStoppingProcessDeliversWhenTheRelayReturns(t *testing.T) {
	b := newSwitchBus(t)
	alice, bob := newAgentFiles(t), newAgentFiles(t)
	alice.admit(t, "bob", bob)
	p := launchMCP(t, alice.env(b.url(), "INTERLINK_SESSION=a1"))
	p.initialize()
	ids := sendThree(t, p)
	// Each message was tried once and failed; the next try of a running
	// process comes only after its retry period, much later.
	waitFor(t, "the first try of each message to fail", func() bool { return sendsFailed(p) >= len(ids) })
	tried := sendsFailed(p)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The relay returns once the stopping process has tried it in vain.
	waitFor(t, "the stopping process to try the relay", func() bool { return sendsFailed(p) > tried })
	b.start()
	if code := p.wait(); code != 0 {
		t.Errorf("exit status %d", code)
	}
	// No other process of the session ran: the stopping one sent them.
	wantDelivered(t, b.drain(t, bob.pubkey()+"#b1"), ids)
	data, err := os.ReadFile(filepath.Join(alice.state, "outbox", alice.pubkey(), "a1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), `"state":"pending"`) {
		t.Errorf("the outbox file still lists a pending message:\n%s", data)
	}
}

// sendsFailed returns how many failed sends p has logged.
func sendsFailed(p *mcpProc) int {
	return strings.Count(p.stderr.String(), `msg="send failed"`)
}

// The 1,025th message waiting for a relay is refused with a clear error;
// the 1,024 before it are kept.
func TestOutboxFullProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 1,025 messages")
	}
	b := newSwitchBus(t) // down for the whole test
	alice, bob := newAgentFiles(t), newAgentFiles(t)
	alice.admit(t, "bob", bob)
	// The send budget would stop this long before the outbox's bound.
	p := launchMCP(t, alice.env(b.url(), "INTERLINK_SESSION=a1", "INTERLINK_LOG_LEVEL=warn", "INTERLINK_SEND_BUDGET=off"))
	p.initialize()
	for i := range 1024 {
		if _, isErr, rpcErr := p.call("send_message", map[string]any{"to": "bob", "session": "b1", "text": "waiting"}); isErr || rpcErr != "" {
			t.Fatalf("message %d refused: %s", i+1, rpcErr)
		}
	}
	_, _, rpcErr := p.call("send_message", map[string]any{"to": "bob", "session": "b1", "text": "one too many"})
	if !strings.Contains(rpcErr, "1024 messages are already waiting for a relay") || !strings.Contains(rpcErr, "list_pending") {
		t.Errorf("the 1,025th message: %q; want a clear refusal", rpcErr)
	}
	if got := p.ok("list_pending", nil); !strings.HasPrefix(got, "1024 pending:") {
		t.Errorf("list_pending starts %q", got[:min(len(got), 40)])
	}
	if code := p.closeAndWait(); code != 0 {
		t.Errorf("exit status %d", code)
	}
}
