package inbound_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/inbound"
	"github.com/interlink-go/interlink/internal/relay"
)

// TestRunDelivers: a peer's message posted to the bus ends up in the mailbox
// and is acknowledged, leaving the queue empty.
func TestRunDelivers(t *testing.T) {
	f := newFixture(t)
	url := startBus(t)
	own := f.meRoute.String()
	m := f.msg(t, f.alice, nil)
	post(t, url, own, payload(t, m))
	stop := start(t, f.loop(url))
	eventually(t, "the message to be retained", func() bool { return len(f.records(t)) == 1 })
	eventually(t, "the queue to drain", func() bool { return !queued(t, url, own) })
	stop()
	recs := f.records(t)
	if recs[0].Peer != "alice" || recs[0].Message.MsgID != m.MsgID {
		t.Errorf("record = %+v", recs[0])
	}
	if s, _ := f.sticky.Get(f.alice.Public()); s != "s-1" {
		t.Errorf("sticky = %q, want s-1", s)
	}
}

// TestRunStranger: a stranger's message is acknowledged and dropped.
func TestRunStranger(t *testing.T) {
	f := newFixture(t)
	url := startBus(t)
	own := f.meRoute.String()
	post(t, url, own, payload(t, f.msg(t, f.eve, nil)))
	start(t, f.loop(url))
	eventually(t, "the queue to drain", func() bool { return !queued(t, url, own) })
	if n := len(f.records(t)); n != 0 {
		t.Errorf("retained %d records from a stranger", n)
	}
	f.wantLog(t, "reason=not_allowlisted")
}

// TestRunRetriesBadPeers: while peers.json is corrupt the message stays on
// the bus; once it is repaired Run delivers it.
func TestRunRetriesBadPeers(t *testing.T) {
	f := newFixture(t)
	url := startBus(t)
	own := f.meRoute.String()
	f.writePeers(t, "{")
	post(t, url, own, payload(t, f.msg(t, f.alice, nil)))
	start(t, f.loop(url))
	eventually(t, "three failed attempts", func() bool { return strings.Count(f.logs.String(), "will retry") >= 3 })
	if !queued(t, url, own) {
		t.Fatal("message left the bus while peers.json was corrupt")
	}
	if n := len(f.records(t)); n != 0 {
		t.Fatalf("retained %d records while peers.json was corrupt", n)
	}
	if c := strings.Count(f.logs.String(), "level=WARN msg=\"message kept"); c != 1 {
		t.Errorf("the same failure was logged %d times at warn level, want once", c)
	}
	f.writePeers(t, fmt.Sprintf(`{"alice": {"key": %q}}`, f.alice.Public()))
	eventually(t, "the message to be retained", func() bool { return len(f.records(t)) == 1 })
	eventually(t, "the queue to drain", func() bool { return !queued(t, url, own) })
}

// TestRunTwoRelays: the same message through two relays is retained once and
// acknowledged on both.
func TestRunTwoRelays(t *testing.T) {
	f := newFixture(t)
	url1, url2 := startBus(t), startBus(t)
	own := f.meRoute.String()
	p := payload(t, f.msg(t, f.alice, nil))
	post(t, url1, own, p)
	post(t, url2, own, p)
	start(t, f.loop(url1))
	start(t, f.loop(url2))
	eventually(t, "both queues to drain", func() bool { return !queued(t, url1, own) && !queued(t, url2, own) })
	if n := len(f.records(t)); n != 1 {
		t.Errorf("retained %d records, want 1", n)
	}
	f.wantLog(t, "reason=replay")
}

// TestRunRelayDown: a relay that hangs up on every request is retried, and
// the outage is logged once.
func TestRunRelayDown(t *testing.T) {
	f := newFixture(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var tries atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed by the cleanup
			}
			tries.Add(1)
			_ = c.Close()
		}
	}()
	start(t, f.loop("http://"+ln.Addr().String()))
	eventually(t, "three attempts", func() bool { return tries.Load() >= 3 })
	if c := strings.Count(f.logs.String(), "relay unreachable"); c != 1 {
		t.Errorf("outage logged %d times in %d attempts, want once", c, tries.Load())
	}
}

// TestRunStops: cancelling the context ends a parked long-poll at once: Run
// returns and the relay sees the request end.
func TestRunStops(t *testing.T) {
	f := newFixture(t)
	var polls atomic.Int32 // /recv requests the relay is serving
	url := bustest.Start(t, &bustest.Options{Wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/recv" {
				polls.Add(1)
				defer polls.Add(-1)
			}
			h.ServeHTTP(w, r)
		})
	}})
	l := inbound.New(inbound.Config{
		Relay: relay.New(url, nil), Route: f.meRoute, Own: f.me.Public(), Gate: f.gate,
		Peers: f.peers, Mailbox: f.mb, Pairing: f.pair, Sticky: f.sticky,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	eventually(t, "a long-poll parked on the relay", func() bool { return polls.Load() == 1 })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	eventually(t, "the long-poll to end on the relay", func() bool { return polls.Load() == 0 })
}
