package inbound_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/gate"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/inbound"
	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/pairing"
	"github.com/interlink-go/interlink/internal/policy"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/testutil"
)

// mySession is the session of the identity under test.
const mySession = "me-1"

// clock is a wall clock that moves only when told to.
type clock struct{ *bustest.Clock }

func newClock() *clock          { return &clock{bustest.NewClock()} }
func (c *clock) now() time.Time { return c.Now() }

// fixture is one identity ("me", session me-1) with its stores in a temporary
// state root, a peer alice listed in peers.json, and a stranger eve.
type fixture struct {
	root      string
	clk       *clock
	me        *identity.Signer
	alice     *identity.Signer
	eve       *identity.Signer
	meRoute   route.Route
	peersPath string
	peers     *policy.Store
	mb        *mailbox.Mailbox
	pair      *pairing.Store
	gate      *gate.Gate
	sticky    *inbound.Sticky
	knocks    *inbound.Knocks
	logs      *testutil.LockedBuffer
	logger    *slog.Logger

	mu      sync.Mutex
	notices []inbound.Notice // guarded by mu
}

func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	f := &fixture{
		root:  tb.TempDir(),
		clk:   newClock(),
		me:    testutil.Signer(tb, 1),
		alice: testutil.Signer(tb, 2),
		eve:   testutil.Signer(tb, 3),
		logs:  &testutil.LockedBuffer{},
	}
	f.logger = slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f.meRoute = route.New(f.me.Public().String(), mySession)
	f.peersPath = filepath.Join(f.root, "peers.json")
	f.writePeers(tb, fmt.Sprintf(`{"alice": {"key": %q}}`, f.alice.Public()))
	var err error
	if f.peers, err = policy.Open(f.peersPath); err != nil {
		tb.Fatal(err)
	}
	if f.mb, err = mailbox.Open(f.root, f.me.Public(), mySession, &mailbox.Options{Now: f.clk.now}); err != nil {
		tb.Fatal(err)
	}
	if f.pair, err = pairing.Open(f.root, f.me.Public(), mySession, nil); err != nil {
		tb.Fatal(err)
	}
	f.gate = gate.New(f.me.Public(), &gate.Options{Now: f.clk.now})
	f.sticky = inbound.NewSticky()
	f.knocks = inbound.NewKnocks(&inbound.KnockOptions{Now: f.clk.now})
	return f
}

// writePeers replaces peers.json with data.
func (f *fixture) writePeers(tb testing.TB, data string) {
	tb.Helper()
	if err := os.WriteFile(f.peersPath, []byte(data), 0o600); err != nil {
		tb.Fatal(err)
	}
}

// loop returns a loop on the relay at url (which Handle never contacts).
func (f *fixture) loop(url string) *inbound.Loop {
	return inbound.New(inbound.Config{
		Relay:      relay.New(url, nil),
		Route:      f.meRoute,
		Own:        f.me.Public(),
		Gate:       f.gate,
		Peers:      f.peers,
		Mailbox:    f.mb,
		Pairing:    f.pair,
		Sticky:     f.sticky,
		Knocks:     f.knocks,
		Notify:     f.notify,
		Logger:     f.logger,
		RetryDelay: 10 * time.Millisecond,
	})
}

func (f *fixture) notify(_ context.Context, n inbound.Notice) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notices = append(f.notices, n)
	return nil
}

func (f *fixture) gotNotices() []inbound.Notice {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]inbound.Notice(nil), f.notices...)
}

// msgCount numbers the test messages, so every msg_id is new.
var msgCount atomic.Uint64

// msg returns a message from s to me, signed at the fixture's time, with
// reply_to naming s's session s-1; edit runs before signing.
func (f *fixture) msg(tb testing.TB, s *identity.Signer, edit func(*identity.Message)) identity.Message {
	tb.Helper()
	m := identity.Message{
		To:      f.me.Public().String(),
		Text:    "hello",
		TS:      identity.Millis(f.clk.now()),
		MsgID:   fmt.Sprintf("%032x", msgCount.Add(1)),
		ReplyTo: s.Public().String() + "#s-1",
	}
	if edit != nil {
		edit(&m)
	}
	if err := s.SignMessage(&m); err != nil {
		tb.Fatal(err)
	}
	return m
}

// payload returns the JSON text of m.
func payload(tb testing.TB, m identity.Message) []byte {
	tb.Helper()
	b, err := m.MarshalJSON()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// delivery wraps payload as a relay would hand it over.
func delivery(p []byte) relay.Delivery {
	return relay.Delivery{HasMessage: true, Ack: "1\x00k", Payload: p}
}

// records returns the mailbox's records.
func (f *fixture) records(tb testing.TB) []mailbox.Record {
	tb.Helper()
	recs, err := f.mb.Records()
	if err != nil {
		tb.Fatal(err)
	}
	return recs
}

// handle runs l.Handle on p and fails unless it returns wantAck and no
// error.
func handle(tb testing.TB, l *inbound.Loop, p []byte, wantAck bool) {
	tb.Helper()
	ack, err := l.Handle(context.Background(), delivery(p))
	if err != nil || ack != wantAck {
		tb.Fatalf("Handle = %v, %v; want %v, nil", ack, err, wantAck)
	}
}

// wantLog fails unless the log holds every one of parts.
func (f *fixture) wantLog(tb testing.TB, parts ...string) {
	tb.Helper()
	out := f.logs.String()
	for _, p := range parts {
		if !strings.Contains(out, p) {
			tb.Errorf("log lacks %q:\n%s", p, out)
		}
	}
}

// startBus serves a real in-memory bus on loopback and returns its URL.
func startBus(tb testing.TB) string {
	tb.Helper()
	return bustest.Start(tb, nil)
}

// start runs l until the returned stop function is called or the test ends;
// stop waits for Run to return.
func start(tb testing.TB, l *inbound.Loop) (stop func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	stop = sync.OnceFunc(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				tb.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			tb.Fatal("Run did not return after cancel")
		}
	})
	tb.Cleanup(stop)
	return stop
}

// eventually polls cond until it holds, failing the test after 10 s.
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	testutil.Eventually(tb, 10*time.Second, what, cond)
}

// queued reports whether the relay at url holds a message for route. It
// does not consume it.
func queued(tb testing.TB, url, rt string) bool {
	tb.Helper()
	d, err := relay.New(url, nil).Recv(context.Background(), rt, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return d.HasMessage
}

// post sends p to route on the relay at url.
func post(tb testing.TB, url, rt string, p []byte) {
	tb.Helper()
	if err := relay.New(url, nil).Send(context.Background(), rt, p); err != nil {
		tb.Fatal(err)
	}
}
