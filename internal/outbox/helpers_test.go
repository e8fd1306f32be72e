package outbox_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofrs/flock"

	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/outbox"
	"github.com/interlink-go/interlink/internal/relay"
)

// testEpoch is where the fake clocks start.
var testEpoch = bustest.Epoch

// clock is a wall clock that moves only when told to.
type clock struct{ *bustest.Clock }

func newClock() *clock                   { return &clock{bustest.NewClock()} }
func (c *clock) now() time.Time          { return c.Now() }
func (c *clock) advance(d time.Duration) { c.Advance(d) }

// newSigner returns a deterministic signer whose seed is 32 copies of b.
func newSigner(b byte) *identity.Signer {
	s, err := identity.NewSigner(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		panic(err)
	}
	return s
}

var (
	sender    = newSigner(1)
	recipient = newSigner(2).Public()
	// msgCount numbers the test messages, so every msg_id is new.
	msgCount atomic.Uint64
)

// routeTo returns the route of the recipient's session s.
func routeTo(s string) string { return recipient.String() + "#" + s }

// newMessage returns a message to the recipient, signed by sender at ts.
func newMessage(tb testing.TB, text string, ts time.Time) identity.Message {
	tb.Helper()
	m := identity.Message{
		To:      recipient.String(),
		Text:    text,
		TS:      identity.Millis(ts),
		MsgID:   fmt.Sprintf("%032x", msgCount.Add(1)),
		TaskID:  "t1",
		Status:  identity.StatusUpdate,
		ReplyTo: sender.Public().String() + "#me",
	}
	if err := sender.SignMessage(&m); err != nil {
		tb.Fatal(err)
	}
	return m
}

// bg is the context of calls that a test does not cancel.
var bg = context.Background()

// newOutbox opens the outbox of the sender's session "me" in a new state
// folder.
func newOutbox(tb testing.TB, relays []outbox.Sender, opts *outbox.Options) *outbox.Outbox {
	tb.Helper()
	return openAt(tb, tb.TempDir(), relays, opts)
}

// openAt opens the outbox of the sender's session "me" under root.
func openAt(tb testing.TB, root string, relays []outbox.Sender, opts *outbox.Options) *outbox.Outbox {
	tb.Helper()
	o, err := outbox.Open(root, sender.Public(), "me", relays, sender, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return o
}

// lookup returns the entry of id, failing the test when the file cannot be
// read.
func lookup(tb testing.TB, o *outbox.Outbox, id string) (outbox.Entry, bool) {
	tb.Helper()
	e, ok, err := o.Status(id)
	if err != nil {
		tb.Fatalf("Status(%s): %v", id, err)
	}
	return e, ok
}

// pending returns what list_pending shows, failing the test on error.
func pending(tb testing.TB, o *outbox.Outbox) []outbox.Entry {
	tb.Helper()
	p, err := o.Pending()
	if err != nil {
		tb.Fatalf("Pending: %v", err)
	}
	return p
}

// logOf returns the log of peer, failing the test on error.
func logOf(tb testing.TB, o *outbox.Outbox, peer string, limit int) []outbox.Entry {
	tb.Helper()
	l, err := o.Log(peer, limit)
	if err != nil {
		tb.Fatalf("Log: %v", err)
	}
	return l
}

// enqueue queues m for route and peer "bob", failing the test on error.
func enqueue(tb testing.TB, o *outbox.Outbox, route string, m identity.Message) {
	tb.Helper()
	if err := o.Enqueue(bg, route, "bob", m); err != nil {
		tb.Fatalf("Enqueue(%s): %v", m.MsgID, err)
	}
}

// start runs o until the returned stop function is called or the test
// ends; stop waits for Run to return.
func start(tb testing.TB, o *outbox.Outbox) (stop func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx) }()
	stop = sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("Run: %v", err)
		}
	})
	tb.Cleanup(stop)
	return stop
}

// status returns the entry of id, failing the test when there is none.
func status(tb testing.TB, o *outbox.Outbox, id string) outbox.Entry {
	tb.Helper()
	e, ok := lookup(tb, o, id)
	if !ok {
		tb.Fatalf("Status(%s): not found", id)
	}
	return e
}

// wantState fails the test unless the entry of id has state s.
func wantState(tb testing.TB, o *outbox.Outbox, id string, s outbox.State) outbox.Entry {
	tb.Helper()
	e := status(tb, o, id)
	if e.State != s {
		tb.Fatalf("Status(%s).State = %s, want %s (attempts %d, last error %q)", id, e.State, s, e.Attempts, e.LastError)
	}
	return e
}

// statusErr returns the error a relay client gives for an HTTP reply code.
func statusErr(code int) error {
	return &relay.StatusError{URL: "http://relay/send", Op: "send", Code: code}
}

// sent is one call to a fake relay.
type sent struct {
	route   string
	msg     identity.Message
	payload []byte
}

// tracker sees the sends in flight across fake relays and counts sends of
// one msg_id to one relay that overlap. The relays of one attempt are asked
// at once, so one msg_id may be in flight on several relays.
type tracker struct {
	mu       sync.Mutex
	inflight map[string]bool // guarded by mu
	overlaps int             // guarded by mu
}

func (t *tracker) begin(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.inflight == nil {
		t.inflight = make(map[string]bool)
	}
	if t.inflight[id] {
		t.overlaps++
	}
	t.inflight[id] = true
}

func (t *tracker) end(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.inflight, id)
}

func (t *tracker) overlapCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.overlaps
}

// fakeRelay is a [outbox.Sender] that records what it is sent and answers
// as told. Its delay runs on the clock of the caller, so tests in a
// synctest bubble wait in fake time.
type fakeRelay struct {
	url   string
	delay time.Duration
	track *tracker

	mu    sync.Mutex
	reply func(route string, m identity.Message) error // nil accepts; guarded by mu
	sends []sent                                       // guarded by mu
}

func newFake(url string) *fakeRelay { return &fakeRelay{url: url, track: &tracker{}} }

func (f *fakeRelay) URL() string { return f.url }

func (f *fakeRelay) Send(ctx context.Context, route string, payload []byte) error {
	m, err := identity.DecodeMessage(payload)
	if err != nil {
		return fmt.Errorf("fake relay: undecodable payload: %v", err)
	}
	f.track.begin(f.url + " " + m.MsgID)
	defer f.track.end(f.url + " " + m.MsgID)
	f.mu.Lock()
	f.sends = append(f.sends, sent{route, m, bytes.Clone(payload)})
	reply := f.reply
	f.mu.Unlock()
	if f.delay > 0 {
		t := time.NewTimer(f.delay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	if reply == nil {
		return nil
	}
	return reply(route, m)
}

// setReply changes how the relay answers.
func (f *fakeRelay) setReply(fn func(route string, m identity.Message) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reply = fn
}

// refuse makes the relay answer every send with err.
func (f *fakeRelay) refuse(err error) {
	f.setReply(func(string, identity.Message) error { return err })
}

// calls returns the sends of msg_id id.
func (f *fakeRelay) calls(id string) []sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []sent
	for _, s := range f.sends {
		if s.msg.MsgID == id {
			out = append(out, s)
		}
	}
	return out
}

// order returns the msg_ids sent to route, in the order they arrived.
func (f *fakeRelay) order(route string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, s := range f.sends {
		if s.route == route {
			out = append(out, s.msg.MsgID)
		}
	}
	return out
}

// lockFile holds the lock at path as another process would.
func lockFile(path string) (unlock func(), err error) {
	l := flock.New(path)
	if err := l.Lock(); err != nil {
		return nil, err
	}
	return func() { _ = l.Unlock() }, nil
}
