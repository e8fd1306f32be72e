package inbound_test

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

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
	eventually(t, "a failed attempt", func() bool { return strings.Contains(f.logs.String(), "will retry") })
	time.Sleep(50 * time.Millisecond) // several more attempts
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

// TestRunRelayDown: an unreachable relay is retried, and the outage is
// logged once.
func TestRunRelayDown(t *testing.T) {
	f := newFixture(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	start(t, f.loop(url))
	eventually(t, "the outage to be logged", func() bool { return strings.Contains(f.logs.String(), "relay unreachable") })
	time.Sleep(50 * time.Millisecond) // several more attempts
	if c := strings.Count(f.logs.String(), "relay unreachable"); c != 1 {
		t.Errorf("outage logged %d times, want once", c)
	}
}

// TestRunStops: cancelling the context ends a parked long-poll at once, and
// Run leaves no goroutine behind.
func TestRunStops(t *testing.T) {
	f := newFixture(t)
	url := startBus(t)
	before := runtime.NumGoroutine()
	l := inbound.New(inbound.Config{
		Relay: relay.New(url, nil), Route: f.meRoute, Own: f.me.Public(), Gate: f.gate,
		Peers: f.peers, Mailbox: f.mb, Pairing: f.pair, Sticky: f.sticky,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	time.Sleep(50 * time.Millisecond) // let it park in a 25 s long-poll
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	eventually(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}
