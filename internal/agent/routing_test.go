package agent_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/relay"
)

// announce puts session on the roster of url as id, without a name.
func announce(t testing.TB, url string, id *ident, session string) {
	t.Helper()
	announceAs(t, url, id, "", session)
}

// announceAs puts session on the roster of url as id, claiming name.
func announceAs(t testing.TB, url string, id *ident, name, session string) {
	t.Helper()
	a := id.signer.Announce(name, identity.SessionInfo{SessionID: session}, identity.Millis(time.Now()))
	if err := relay.New(url, nil).Announce(context.Background(), a); err != nil {
		t.Fatal(err)
	}
}

// sendAs posts a signed message from id (session from) to the route of n.
func sendAs(t testing.TB, url string, id *ident, replyTo string, n *node, text string) identity.Message {
	t.Helper()
	mid, err := identity.NewMsgID(nil)
	if err != nil {
		t.Fatal(err)
	}
	m := identity.Message{From: id.key(), To: n.id.key(), Text: text, TS: identity.Millis(time.Now()),
		MsgID: mid, Kind: identity.KindMessage, ReplyTo: replyTo}
	if err := id.signer.SignMessage(&m); err != nil {
		t.Fatal(err)
	}
	p, err := m.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := relay.New(url, nil).Send(context.Background(), n.a.Route().String(), p); err != nil {
		t.Fatal(err)
	}
	return m
}

// Item 11, and wire-and-trust item 22 (stickiness only from the signer's
// own route).
func TestRouting(t *testing.T) {
	clk := bustest.NewClock()
	url := bustest.Start(t, &bustest.Options{Now: clk.Now})
	alice := newIdent(t)
	names := []string{"bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan"}
	ids := map[string]*ident{}
	var pairs []any
	for _, n := range names {
		ids[n] = newIdent(t)
		pairs = append(pairs, n, ids[n])
	}
	alice.admit(t, pairs...)

	// Announced, then left to age: dave's lone session, erin's two, and
	// grace's g1.
	announce(t, url, ids["dave"], "d1")
	announce(t, url, ids["erin"], "e1")
	announce(t, url, ids["erin"], "e2")
	announce(t, url, ids["grace"], "g1")
	clk.Advance(120 * time.Second)
	for _, s := range []struct{ who, session string }{
		{"bob", "b1"}, {"bob", "b2"},
		{"carol", "cat-1"}, {"carol", "cat-2"}, {"carol", "dog-1"},
		{"grace", "g2"}, {"ivan", "i1"}, {"ivan", "i2"},
	} {
		announce(t, url, ids[s.who], s.session)
	}
	a := start(t, alice, "a1", []string{url}, nil)

	sent := []struct {
		args       map[string]any
		wantPrefix string
		wantNote   string
	}{
		{map[string]any{"to": "bob", "session": "b2"}, "queued for bob (b2)", "delivering"},
		{map[string]any{"to": "carol", "session": "dog"}, "queued for carol (dog-1)", "delivering"},
		{map[string]any{"to": "carol", "session": "cat-2"}, "queued for carol (cat-2)", "delivering"},
		{map[string]any{"to": "carol", "session": "zzz"}, "queued for carol (zzz)", "not on the roster"},
		{map[string]any{"to": "dave"}, "queued for dave (d1)", "away (last seen 2m ago)"},
		{map[string]any{"to": "grace"}, "queued for grace (g2)", "delivering"},
	}
	for _, s := range sent {
		s.args["text"] = "hi"
		got := a.ok("send_message", s.args)
		if !strings.HasPrefix(got, s.wantPrefix) || !strings.Contains(got, s.wantNote) {
			t.Errorf("send_message(%v) = %q, want prefix %q and %q", s.args, got, s.wantPrefix, s.wantNote)
		}
	}
	errs := []struct {
		args map[string]any
		want []string
	}{
		{map[string]any{"to": "bob"}, []string{"bob has more than one live session", "  b1", "  b2"}},
		{map[string]any{"to": "carol", "session": "cat-"}, []string{`session "cat-" matches several sessions`, "  cat-1", "  cat-2"}},
		{map[string]any{"to": "erin"}, []string{"erin has several sessions, all away", "  e1 (away, last seen 2m)", "  e2"}},
		{map[string]any{"to": "frank"}, []string{"frank has no session on the roster"}},
	}
	for _, e := range errs {
		e.args["text"] = "hi"
		got := a.rpcErr("send_message", e.args)
		for _, w := range e.want {
			if !strings.Contains(got, w) {
				t.Errorf("send_message(%v) error %q lacks %q", e.args, got, w)
			}
		}
	}

	// Stickiness: grace writes from g1 (away); replies go there, with the
	// live sibling g2 named.
	m := sendAs(t, url, ids["grace"], ids["grace"].key()+"#g1", a, "from g1")
	a.waitText("message_status", map[string]any{"msg_id": m.MsgID}, "Receipt")
	a.waitSticky(ids["grace"], "g1")
	got := a.ok("send_message", map[string]any{"to": "grace", "text": "reply"})
	if !strings.HasPrefix(got, "queued for grace (g1)") || !strings.Contains(got, `pass session="g2"`) {
		t.Errorf("sticky reply = %q", got)
	}
	// heidi is not on the roster but wrote from h7: that guess is used.
	m = sendAs(t, url, ids["heidi"], ids["heidi"].key()+"#h7", a, "from h7")
	a.waitText("message_status", map[string]any{"msg_id": m.MsgID}, "Receipt")
	a.waitSticky(ids["heidi"], "h7")
	got = a.ok("send_message", map[string]any{"to": "heidi", "text": "reply"})
	if !strings.HasPrefix(got, "queued for heidi (h7)") || !strings.Contains(got, "not on the roster") {
		t.Errorf("speculative sticky reply = %q", got)
	}
	// ivan's message names grace's route: not a hint about ivan, and never
	// about grace either.
	m = sendAs(t, url, ids["ivan"], ids["grace"].key()+"#g2", a, "forged hint")
	a.waitText("message_status", map[string]any{"msg_id": m.MsgID}, "Receipt")
	if got := a.rpcErr("send_message", map[string]any{"to": "ivan", "text": "x"}); !strings.Contains(got, "more than one live session") {
		t.Errorf("ivan after a foreign reply_to: %q", got)
	}
	if got := a.ok("send_message", map[string]any{"to": "grace", "text": "x"}); !strings.HasPrefix(got, "queued for grace (g1)") {
		t.Errorf("grace's sticky session changed by ivan's hint: %q", got)
	}

	// A day later every session is away; dave's may be gone.
	clk.Advance(25 * time.Hour)
	got = a.ok("send_message", map[string]any{"to": "dave", "text": "still there?"})
	if !strings.Contains(got, "may be gone rather than asleep") {
		t.Errorf("day-old session = %q", got)
	}
}

// An explicit session is used as given when no relay answers; without one,
// the answer says that no roster could be read, not that the peer has no
// session.
func TestRoutingAllRelaysDown(t *testing.T) {
	alice, _ := pair(t)
	a := start(t, alice, "a1", []string{"http://127.0.0.1:1"}, nil)
	got := a.ok("send_message", map[string]any{"to": "bob", "session": "b1", "text": "x"})
	if !strings.HasPrefix(got, "queued for bob (b1)") || !strings.Contains(got, "no relay's roster could be read") {
		t.Errorf("send = %q", got)
	}
	got = a.rpcErr("send_message", map[string]any{"to": "bob", "text": "x"})
	if !strings.Contains(got, "could not read a roster from any relay") || !strings.Contains(got, "http://127.0.0.1:1: relay: roster request failed") ||
		strings.Contains(got, "no session on the roster") {
		t.Errorf("without session: %q", got)
	}
	if got := a.ok("list_pending", nil); !strings.HasPrefix(got, "1 pending:\n→ bob (msg_id ") {
		t.Errorf("list_pending = %q", got)
	}
}

// A relay whose roster does not decode is named in the answer when the
// peer has no session on the rosters that could be read.
func TestRoutingNamesUnreadableRosters(t *testing.T) {
	good := startBus(t)
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("<html>not a roster</html>"))
	}))
	t.Cleanup(garbage.Close)
	alice, _ := pair(t)
	a := start(t, alice, "a1", []string{good, garbage.URL}, nil)
	got := a.rpcErr("send_message", map[string]any{"to": "bob", "text": "x"})
	if !strings.Contains(got, "bob has no session on the roster") ||
		!strings.Contains(got, "the roster of 1 relay(s) could not be read") || !strings.Contains(got, garbage.URL+": relay: malformed reply") {
		t.Errorf("send = %q", got)
	}
	onlyGarbage := start(t, alice, "a2", []string{garbage.URL}, nil)
	got = onlyGarbage.rpcErr("send_message", map[string]any{"to": "bob", "text": "x"})
	if !strings.Contains(got, "could not read a roster from any relay") || !strings.Contains(got, "invalid roster JSON") {
		t.Errorf("send with only an undecodable roster = %q", got)
	}
}

// Item 12: to "self".
func TestSelf(t *testing.T) {
	url := startBus(t)
	me := newIdent(t) // peers.json stays empty: no pairing needed
	one := start(t, me, "alpha-1", []string{url}, nil)
	if got := one.rpcErr("send_message", map[string]any{"to": "self", "text": "x"}); !strings.Contains(got, "no other session of this identity") {
		t.Errorf("alone: %q", got)
	}
	two := start(t, me, "alpha-2", []string{url}, nil)
	onRoster(t, url, me.key(), "alpha-2")
	onRoster(t, url, me.key(), "alpha-1")
	// Without a session the other one is chosen, never this one.
	got := one.ok("send_message", map[string]any{"to": "self", "text": "to my sibling"})
	if !strings.HasPrefix(got, "queued for self (alpha-2)") {
		t.Errorf("self without session = %q", got)
	}
	// A prefix of the own id expands to the sibling only.
	got = one.ok("send_message", map[string]any{"to": "SELF ", "session": "alpha", "text": "by prefix"})
	if !strings.HasPrefix(got, "queued for SELF  (alpha-2)") {
		t.Errorf("self by prefix = %q", got)
	}
	recv := two.waitText("receive_messages", nil, "by prefix")
	if !strings.Contains(recv, "to my sibling") || !strings.Contains(recv, `sender="self"`) {
		t.Errorf("sibling received %q", recv)
	}
	time.Sleep(300 * time.Millisecond) // a loop-back would have arrived by now
	if got := one.ok("receive_messages", nil); !strings.HasPrefix(got, "No unread messages") {
		t.Errorf("the sender received its own message: %q", got)
	}
}
