package gate

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/protocol"
)

// peerMap is a fixed peer policy: key to petname.
type peerMap map[identity.PublicKey]string

func (p peerMap) Petname(k identity.PublicKey) (string, bool) {
	n, ok := p[k]
	return n, ok
}

var baseTime = time.UnixMilli(1_700_000_000_000)

type fixture struct {
	me, alice, eve *identity.Signer
	peers          peerMap
	now            time.Time
	gate           *Gate
}

func signer(tb testing.TB, b byte) *identity.Signer {
	tb.Helper()
	seed := make([]byte, identity.SeedSize)
	seed[0] = b
	s, err := identity.NewSigner(seed)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func newFixture(tb testing.TB, replayCap int) *fixture {
	f := &fixture{me: signer(tb, 1), alice: signer(tb, 2), eve: signer(tb, 3), now: baseTime}
	f.peers = peerMap{f.alice.Public(): "alice"}
	f.gate = New(f.me.Public(), &Options{Now: func() time.Time { return f.now }, ReplayCap: replayCap})
	return f
}

// msg signs a message from s to me at the fixture's current time.
func (f *fixture) msg(tb testing.TB, s *identity.Signer, id string, edit func(*identity.Message)) identity.Message {
	tb.Helper()
	m := identity.Message{
		To: f.me.Public().String(), Text: "hello", TS: identity.Millis(f.now), MsgID: id,
		ReplyTo: s.Public().String() + "#sess-1",
	}
	if edit != nil {
		edit(&m)
	}
	if err := s.SignMessage(&m); err != nil {
		tb.Fatal(err)
	}
	return m
}

func (f *fixture) decide(m identity.Message) (Decision, error) {
	return f.gate.Decide(&m, f.peers)
}

func wantErr(tb testing.TB, err, want error) {
	tb.Helper()
	if !errors.Is(err, want) {
		tb.Fatalf("err = %v, want %v", err, want)
	}
}

func TestDeliverFromPeer(t *testing.T) {
	f := newFixture(t, 0)
	m := f.msg(t, f.alice, "m1", func(m *identity.Message) {
		m.TaskID, m.Status, m.InReplyTo = "t1", identity.StatusNeedsInput, "q0"
	})
	d, err := f.decide(m)
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != Deliver || d.Petname != "alice" || d.Sender != f.alice.Public() {
		t.Errorf("decision %v %q %s", d.Outcome, d.Petname, d.Sender)
	}
	if d.Message.TaskID != "t1" || d.Message.Status != identity.StatusNeedsInput || d.Message.InReplyTo != "q0" {
		t.Errorf("task fields lost: %+v", d.Message)
	}
	if !d.HasReplyTo() || d.ReplyTo.Session != "sess-1" {
		t.Errorf("reply route = %+v", d.ReplyTo)
	}
}

func TestBadSignature(t *testing.T) {
	f := newFixture(t, 0)
	for name, edit := range map[string]func(*identity.Message){
		"text":           func(m *identity.Message) { m.Text = "changed" },
		"forged from":    func(m *identity.Message) { m.From = f.alice.Public().String() },
		"to not a point": func(m *identity.Message) { m.To = "_____________________________________________w"[:43] },
		"from garbage":   func(m *identity.Message) { m.From = "x" },
	} {
		t.Run(name, func(t *testing.T) {
			m := f.msg(t, f.eve, "id-"+name, nil)
			edit(&m)
			_, err := f.decide(m)
			wantErr(t, err, ErrBadSignature)
			if f.gate.replay.Len() != 0 {
				t.Error("a rejected message used a replay slot")
			}
		})
	}
}

// TestBadToIsSignatureFailure: a "to" that does not parse is reported as a
// signature failure, never as a wrong recipient.
func TestBadToIsSignatureFailure(t *testing.T) {
	f := newFixture(t, 0)
	m := f.msg(t, f.alice, "x", nil)
	m.To = m.To[:42] + "A" // still 43 characters, different bytes
	_, err := f.decide(m)
	if errors.Is(err, ErrWrongRecipient) {
		t.Fatalf("got WrongRecipient for a broken to: %v", err)
	}
	wantErr(t, err, ErrBadSignature)
}

func TestWrongRecipient(t *testing.T) {
	f := newFixture(t, 0)
	m := f.msg(t, f.alice, "m1", func(m *identity.Message) { m.To = f.eve.Public().String() })
	_, err := f.decide(m)
	wantErr(t, err, ErrWrongRecipient)
}

func TestStrangerMessage(t *testing.T) {
	f := newFixture(t, 0)
	m := f.msg(t, f.eve, "X", nil)
	_, err := f.decide(m)
	wantErr(t, err, ErrNotAllowlisted)
	if f.gate.replay.Contains(f.eve.Public(), "X") || f.gate.replay.Len() != 0 {
		t.Fatal("a stranger's message changed the replay set")
	}
	// Once the operator admits the key, the very same message is accepted.
	f.peers[f.eve.Public()] = "eve"
	d, err := f.decide(m)
	if err != nil || d.Outcome != Deliver || d.Petname != "eve" {
		t.Fatalf("after admission: %v %v", d.Outcome, err)
	}
}

func TestOwnKey(t *testing.T) {
	f := newFixture(t, 0)
	d, err := f.decide(f.msg(t, f.me, "s1", nil))
	if err != nil || d.Outcome != Deliver || d.Petname != protocol.SelfSender {
		t.Fatalf("own key without entry: %v %q %v", d.Outcome, d.Petname, err)
	}
	f.peers[f.me.Public()] = "laptop"
	d, err = f.decide(f.msg(t, f.me, "s2", nil))
	if err != nil || d.Petname != "laptop" {
		t.Fatalf("own key listed: %q %v", d.Petname, err)
	}
}

func TestFreshness(t *testing.T) {
	const day, minute = 86_400_000, 60_000
	now := identity.Millis(baseTime)
	for _, tc := range []struct {
		name string
		ts   uint64
		ok   bool
	}{
		{"now", now, true},
		{"exactly a day old", now - day, true},
		{"a day and 1 ms old", now - day - 1, false},
		{"exactly 60 s ahead", now + minute, true},
		{"60 s and 1 ms ahead", now + minute + 1, false},
		{"five minutes late", now - 5*minute, true},
		{"zero", 0, false},
		{"max uint64", ^uint64(0), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 0)
			m := f.msg(t, f.alice, "m", func(m *identity.Message) { m.TS = tc.ts })
			_, err := f.decide(m)
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantErr(t, err, ErrStale)
			if f.gate.replay.Len() != 0 {
				t.Error("stale message used a replay slot")
			}
		})
	}
}

// TestStaleDoesNotConsumeID: a stale copy is refused without remembering its
// id, so a fresh signing of the same id still gets through.
func TestStaleDoesNotConsumeID(t *testing.T) {
	f := newFixture(t, 0)
	old := f.msg(t, f.alice, "same", func(m *identity.Message) { m.TS -= 86_400_001 })
	_, err := f.decide(old)
	wantErr(t, err, ErrStale)
	if _, err := f.decide(f.msg(t, f.alice, "same", nil)); err != nil {
		t.Fatalf("fresh message with the stale one's id: %v", err)
	}
}

func TestClockBefore1970(t *testing.T) {
	f := newFixture(t, 0)
	m := f.msg(t, f.alice, "m", nil)
	f.now = time.Unix(-10, 0)
	_, err := f.decide(m)
	wantErr(t, err, ErrStale)
}

func TestReplay(t *testing.T) {
	f := newFixture(t, 0)
	bob := signer(t, 4)
	f.peers[bob.Public()] = "bob"
	m := f.msg(t, f.alice, "dup", nil)
	if _, err := f.decide(m); err != nil {
		t.Fatal(err)
	}
	_, err := f.decide(m)
	wantErr(t, err, ErrReplay)
	// Through another relay the same message may come with a different
	// reply_to: still the same message.
	m.ReplyTo = ""
	_, err = f.decide(m)
	wantErr(t, err, ErrReplay)
	// The same id from a different peer is a different message.
	if _, err := f.decide(f.msg(t, bob, "dup", nil)); err != nil {
		t.Fatalf("same msg_id from another peer: %v", err)
	}
}

func TestReplayEvictionFIFO(t *testing.T) {
	f := newFixture(t, 2)
	a := f.msg(t, f.alice, "a", nil)
	b := f.msg(t, f.alice, "b", nil)
	c := f.msg(t, f.alice, "c", nil)
	for _, m := range []identity.Message{a, b, c} {
		if _, err := f.decide(m); err != nil {
			t.Fatal(err)
		}
	}
	// c is a replay; the hit must not refresh it or change the order.
	_, err := f.decide(c)
	wantErr(t, err, ErrReplay)
	// a was evicted when c came in, so it is accepted again (evicting b).
	if _, err := f.decide(a); err != nil {
		t.Fatalf("evicted id not accepted again: %v", err)
	}
	_, err = f.decide(c)
	wantErr(t, err, ErrReplay)
	if _, err := f.decide(b); err != nil {
		t.Fatalf("b should have been evicted by a: %v", err)
	}
}

// A flood of distinct messages from one sender, admitted by the gate,
// never pushes another sender's message out of the replay set: a peer's
// flood, a flood from this identity's sibling sessions, and a flood of
// knocks from strangers, each under as many keys as they like, all leave a
// peer's earlier message a replay.
func TestReplayFloodKeepsOtherSendersEntries(t *testing.T) {
	const capacity = 64
	f := newFixture(t, capacity)
	bob := signer(t, 4)
	f.peers[bob.Public()] = "bob"
	floods := map[string]func(i int) identity.Message{
		"peer": func(i int) identity.Message { return f.msg(t, f.alice, fmt.Sprint("flood-", i), nil) },
		"own identity": func(i int) identity.Message {
			return f.msg(t, f.me, fmt.Sprint("flood-", i), func(m *identity.Message) {
				m.ReplyTo = f.me.Public().String() + "#sess-2"
			})
		},
		"knocks from many keys": func(i int) identity.Message {
			return f.msg(t, signer(t, byte(100+i%100)), fmt.Sprint("knock-", i), func(m *identity.Message) {
				m.Kind, m.Text = identity.KindPairRequest, "stranger"
			})
		},
		"acceptances from strangers": func(i int) identity.Message {
			return f.msg(t, signer(t, byte(100+i%100)), fmt.Sprint("accept-", i), func(m *identity.Message) {
				m.Kind, m.InReplyTo = identity.KindPairAccept, "req"
			})
		},
	}
	for name, next := range floods {
		t.Run(name, func(t *testing.T) {
			kept := f.msg(t, bob, "bob-"+name, nil)
			if _, err := f.decide(kept); err != nil {
				t.Fatal(err)
			}
			for i := range 3 * capacity {
				if _, err := f.decide(next(i)); err != nil {
					t.Fatalf("flood message %d: %v", i, err)
				}
			}
			_, err := f.decide(kept)
			wantErr(t, err, ErrReplay)
		})
	}
}

func TestReplaySetBound(t *testing.T) {
	s := NewReplaySet(0)
	k := signer(t, 9).Public()
	for i := range ReplayCap + 10 {
		if !s.Insert(k, fmt.Sprint(i)) {
			t.Fatalf("insert %d reported a replay", i)
		}
	}
	if s.Len() != ReplayCap {
		t.Fatalf("Len = %d, want %d", s.Len(), ReplayCap)
	}
	for i := range 10 {
		if s.Contains(k, fmt.Sprint(i)) {
			t.Errorf("entry %d not evicted", i)
		}
	}
	if !s.Contains(k, fmt.Sprint(ReplayCap+9)) || !s.Contains(k, "10") {
		t.Error("recent entries missing")
	}
	// Another share is bounded on its own and evicts nothing of k's.
	share, sender := signer(t, 10).Public(), signer(t, 11).Public()
	for i := range ReplayCap + 10 {
		s.InsertInto(share, sender, fmt.Sprint(i))
	}
	if s.Len() != 2*ReplayCap {
		t.Fatalf("Len = %d, want %d", s.Len(), 2*ReplayCap)
	}
	if !s.Contains(k, "10") {
		t.Error("an entry of one share was evicted by another")
	}
}

func TestPairRequest(t *testing.T) {
	f := newFixture(t, 0)
	m := f.msg(t, f.eve, "k1", func(m *identity.Message) {
		m.Kind, m.Text = identity.KindPairRequest, "eve's laptop"
	})
	d, err := f.decide(m)
	if err != nil || d.Outcome != Knock {
		t.Fatalf("stranger knock: %v %v", d.Outcome, err)
	}
	if d.Message.Text != "eve's laptop" || d.Sender != f.eve.Public() || d.Petname != "" {
		t.Errorf("knock decision %+v", d)
	}

	fromPeer := f.msg(t, f.alice, "k2", func(m *identity.Message) { m.Kind = identity.KindPairRequest })
	_, err = f.decide(fromPeer)
	wantErr(t, err, ErrUnexpected)
	if !f.gate.replay.Contains(f.alice.Public(), "k2") {
		t.Error("an unexpected message must consume its replay slot")
	}
	_, err = f.decide(fromPeer)
	wantErr(t, err, ErrReplay)

	fromSelf := f.msg(t, f.me, "k3", func(m *identity.Message) { m.Kind = identity.KindPairRequest })
	_, err = f.decide(fromSelf)
	wantErr(t, err, ErrUnexpected)
	if !f.gate.replay.Contains(f.me.Public(), "k3") {
		t.Error("own-key pairing request not recorded")
	}
}

// TestKnockReplyTo: only a reply_to that points back at the signer and names
// a session is usable; the pairing side discards knocks without one.
func TestKnockReplyTo(t *testing.T) {
	f := newFixture(t, 0)
	eve := f.eve.Public().String()
	for _, tc := range []struct {
		name, replyTo string
		usable        bool
	}{
		{"own route", eve + "#s7", true},
		{"missing", "", false},
		{"other key", f.alice.Public().String() + "#s7", false},
		{"bare key", eve, false},
		{"empty session", eve + "#", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := f.msg(t, f.eve, "k-"+tc.name, func(m *identity.Message) {
				m.Kind, m.ReplyTo = identity.KindPairRequest, tc.replyTo
			})
			d, err := f.decide(m)
			if err != nil || d.Outcome != Knock {
				t.Fatalf("%v %v", d.Outcome, err)
			}
			if d.HasReplyTo() != tc.usable {
				t.Fatalf("HasReplyTo = %v, want %v (%+v)", d.HasReplyTo(), tc.usable, d.ReplyTo)
			}
			if tc.usable && d.ReplyTo.String() != tc.replyTo {
				t.Errorf("route %s, want %s", d.ReplyTo, tc.replyTo)
			}
		})
	}
}

// TestReplyToNeverChangesAttribution: a reply_to naming someone else leaves
// attribution and outcome as they were and is simply not used.
func TestReplyToNeverChangesAttribution(t *testing.T) {
	f := newFixture(t, 0)
	m := f.msg(t, f.alice, "m", func(m *identity.Message) { m.ReplyTo = f.me.Public().String() + "#mine" })
	d, err := f.decide(m)
	if err != nil || d.Petname != "alice" || d.Sender != f.alice.Public() {
		t.Fatalf("%q %v", d.Petname, err)
	}
	if d.HasReplyTo() {
		t.Errorf("a reply_to for another key was used: %+v", d.ReplyTo)
	}
}

func TestPairAccept(t *testing.T) {
	f := newFixture(t, 0)
	accept := func(s *identity.Signer, id string) identity.Message {
		return f.msg(t, s, id, func(m *identity.Message) {
			m.Kind, m.Text, m.InReplyTo = identity.KindPairAccept, "claimed", "k1"
		})
	}
	d, err := f.decide(accept(f.eve, "a1"))
	if err != nil || d.Outcome != PairAccept || d.Petname != "" {
		t.Fatalf("from stranger: %v %q %v", d.Outcome, d.Petname, err)
	}
	d, err = f.decide(accept(f.alice, "a2"))
	if err != nil || d.Outcome != PairAccept || d.Petname != "alice" {
		t.Fatalf("from peer: %v %q %v", d.Outcome, d.Petname, err)
	}
}

func TestReason(t *testing.T) {
	for err, want := range map[error]string{
		fmt.Errorf("%w: x", ErrBadSignature):   "bad_signature",
		fmt.Errorf("%w: x", ErrWrongRecipient): "wrong_recipient",
		ErrNotAllowlisted:                      "not_allowlisted",
		ErrStale:                               "stale",
		ErrReplay:                              "replay",
		ErrUnexpected:                          "unexpected",
		errors.New("disk"):                     "error",
	} {
		if got := Reason(err); got != want {
			t.Errorf("Reason(%v) = %s, want %s", err, got, want)
		}
	}
}

// TestConcurrentDecide: relay loops share one gate; of many goroutines
// deciding the same message exactly one admits it.
func TestConcurrentDecide(t *testing.T) {
	f := newFixture(t, 0)
	m := f.msg(t, f.alice, "race", nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for range 16 {
		wg.Go(func() {
			mm := m
			if _, err := f.gate.Decide(&mm, f.peers); err == nil {
				mu.Lock()
				admitted++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if admitted != 1 {
		t.Fatalf("admitted %d times, want 1", admitted)
	}
}
