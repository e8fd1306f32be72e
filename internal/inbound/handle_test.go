package inbound_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/inbound"
	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/policy"
	"github.com/interlink-go/interlink/internal/relay"
)

const noRelay = "http://127.0.0.1:1"

func TestHandle(t *testing.T) {
	type want struct {
		ack    bool
		peer   string // petname of the retained record; empty for none
		sticky map[string]string
		log    []string
	}
	for _, tc := range []struct {
		name    string
		payload func(*fixture) []byte
		want    func(*fixture) want
	}{
		{
			name:    "no message",
			payload: func(*fixture) []byte { return nil },
			want:    func(*fixture) want { return want{ack: true} },
		},
		{
			name:    "undecodable",
			payload: func(*fixture) []byte { return []byte(`{"text":"not a message"}`) },
			want:    func(*fixture) want { return want{ack: true, log: []string{"reason=undecodable"}} },
		},
		{
			name: "peer",
			payload: func(f *fixture) []byte {
				return payload(t, f.msg(t, f.alice, nil))
			},
			want: func(f *fixture) want {
				return want{ack: true, peer: "alice", sticky: map[string]string{f.alice.Public().String(): "s-1"}}
			},
		},
		{
			name: "peer with reply_to of another key",
			payload: func(f *fixture) []byte {
				m := f.msg(t, f.alice, nil)
				m.ReplyTo = f.eve.Public().String() + "#s-9" // unsigned: a relay may change it
				return payload(t, m)
			},
			want: func(*fixture) want { return want{ack: true, peer: "alice"} },
		},
		{
			name: "peer with bare reply_to",
			payload: func(f *fixture) []byte {
				return payload(t, f.msg(t, f.alice, func(m *identity.Message) { m.ReplyTo = f.alice.Public().String() }))
			},
			want: func(*fixture) want { return want{ack: true, peer: "alice"} },
		},
		{
			name:    "stranger",
			payload: func(f *fixture) []byte { return payload(t, f.msg(t, f.eve, nil)) },
			want: func(f *fixture) want {
				return want{ack: true, log: []string{"reason=not_allowlisted", "sender=" + f.eve.Public().Fingerprint()}}
			},
		},
		{
			name: "peer with an oversized msg_id",
			payload: func(f *fixture) []byte {
				return payload(t, f.msg(t, f.alice, func(m *identity.Message) {
					m.MsgID = strings.Repeat("a", identity.MaxReceivedMsgID+1)
				}))
			},
			want: func(*fixture) want {
				return want{ack: true, log: []string{"reason=undecodable", fmt.Sprintf("msg_id_bytes=%d", identity.MaxReceivedMsgID+1)}}
			},
		},
		{
			name: "peer with the longest msg_id taken",
			payload: func(f *fixture) []byte {
				return payload(t, f.msg(t, f.alice, func(m *identity.Message) {
					m.MsgID = strings.Repeat("a", identity.MaxReceivedMsgID)
				}))
			},
			want: func(f *fixture) want {
				return want{ack: true, peer: "alice", sticky: map[string]string{f.alice.Public().String(): "s-1"}}
			},
		},
		{
			name: "bad signature",
			payload: func(f *fixture) []byte {
				m := f.msg(t, f.alice, nil)
				m.Text = "changed"
				return payload(t, m)
			},
			want: func(*fixture) want { return want{ack: true, log: []string{"reason=bad_signature"}} },
		},
		{
			name: "stale",
			payload: func(f *fixture) []byte {
				return payload(t, f.msg(t, f.alice, func(m *identity.Message) { m.TS -= 25 * 3600 * 1000 }))
			},
			want: func(*fixture) want { return want{ack: true, log: []string{"reason=stale"}} },
		},
		{
			name: "loopback",
			payload: func(f *fixture) []byte {
				return payload(t, f.msg(t, f.me, func(m *identity.Message) { m.ReplyTo = f.meRoute.String() }))
			},
			want: func(*fixture) want { return want{ack: true} },
		},
		{
			name: "sibling session",
			payload: func(f *fixture) []byte {
				return payload(t, f.msg(t, f.me, func(m *identity.Message) { m.ReplyTo = f.me.Public().String() + "#me-2" }))
			},
			want: func(f *fixture) want {
				return want{ack: true, peer: "self", sticky: map[string]string{f.me.Public().String(): "me-2"}}
			},
		},
		{
			name: "pairing request from own key",
			payload: func(f *fixture) []byte {
				return payload(t, f.msg(t, f.me, func(m *identity.Message) {
					m.Kind = identity.KindPairRequest
					m.ReplyTo = f.me.Public().String() + "#me-2"
				}))
			},
			want: func(*fixture) want { return want{ack: true, log: []string{"reason=unexpected"}} },
		},
		{
			name: "pairing request from peer",
			payload: func(f *fixture) []byte {
				return payload(t, f.msg(t, f.alice, func(m *identity.Message) { m.Kind = identity.KindPairRequest }))
			},
			want: func(*fixture) want { return want{ack: true, log: []string{"reason=unexpected"}} },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			p := tc.payload(f)
			w := tc.want(f)
			handle(t, f.loop(noRelay), p, w.ack)

			recs := f.records(t)
			switch {
			case w.peer == "" && len(recs) != 0:
				t.Errorf("retained %d records, want none", len(recs))
			case w.peer != "" && (len(recs) != 1 || recs[0].Peer != w.peer):
				t.Errorf("records = %+v, want one from %q", recs, w.peer)
			}
			got := make(map[string]string)
			for k, s := range f.sticky.Snapshot() {
				got[k.String()] = s
			}
			if w.sticky == nil {
				w.sticky = map[string]string{}
			}
			if diff := cmp.Diff(w.sticky, got); diff != "" {
				t.Errorf("sticky (-want +got):\n%s", diff)
			}
			f.wantLog(t, w.log...)
			if bytes.Contains(p, []byte(`"hello"`)) && strings.Contains(f.logs.String(), "hello") {
				t.Errorf("log holds a message body:\n%s", f.logs)
			}
			if n := f.gotNotices(); len(n) != 0 {
				t.Errorf("notices = %+v, want none", n)
			}
		})
	}
}

// TestHandleWithoutMessage: a poll that ended without a message has nothing
// to acknowledge.
func TestHandleWithoutMessage(t *testing.T) {
	f := newFixture(t)
	ack, err := f.loop(noRelay).Handle(context.Background(), relay.Delivery{})
	if ack || err != nil {
		t.Fatalf("Handle = %v, %v; want false, nil", ack, err)
	}
}

// TestHandleLoopbackUsesNoReplaySlot: the guard runs before the gate, so a
// message dropped as loopback leaves the replay set alone.
func TestHandleLoopbackUsesNoReplaySlot(t *testing.T) {
	f := newFixture(t)
	m := f.msg(t, f.me, func(m *identity.Message) { m.ReplyTo = f.meRoute.String() })
	handle(t, f.loop(noRelay), payload(t, m), true)
	pol, err := f.peers.Load()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.gate.Decide(&m, pol); err != nil {
		t.Errorf("gate after loopback drop: %v", err)
	}
}

// TestHandleBadPeers: while peers.json cannot be read the message is not
// acknowledged; once it is repaired the same delivery goes through.
func TestHandleBadPeers(t *testing.T) {
	for name, breakIt := range map[string]func(*fixture){
		"corrupt": func(f *fixture) { f.writePeers(t, `{"alice": `) },
		"missing": func(f *fixture) {
			if err := os.Remove(f.peersPath); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			l := f.loop(noRelay)
			p := payload(t, f.msg(t, f.alice, nil))
			breakIt(f)
			ack, err := l.Handle(context.Background(), delivery(p))
			if ack || err == nil {
				t.Fatalf("Handle = %v, %v; want no ack and an error", ack, err)
			}
			if !errors.Is(err, policy.ErrInvalid) && !errors.Is(err, policy.ErrMissing) {
				t.Errorf("err = %v, want a peers.json error", err)
			}
			if n := len(f.records(t)); n != 0 {
				t.Fatalf("retained %d records while peers.json is bad", n)
			}
			f.writePeers(t, fmt.Sprintf(`{"alice": {"key": %q}}`, f.alice.Public()))
			handle(t, l, p, true)
			if recs := f.records(t); len(recs) != 1 || recs[0].Peer != "alice" {
				t.Errorf("records = %+v, want one from alice", recs)
			}
		})
	}
}

// TestHandleCorruptMailbox: a mailbox that cannot be written keeps the
// message on the relay; when the relay hands it back after the repair it is
// retained, although the gate has already seen it once.
func TestHandleCorruptMailbox(t *testing.T) {
	f := newFixture(t)
	l := f.loop(noRelay)
	writeFile(t, f.mb.Path(), []byte("not json"))
	p := payload(t, f.msg(t, f.alice, nil))
	for range 2 {
		ack, err := l.Handle(context.Background(), delivery(p))
		if ack || !errors.Is(err, mailbox.ErrCorrupt) {
			t.Fatalf("Handle = %v, %v; want no ack and ErrCorrupt", ack, err)
		}
	}
	if len(f.sticky.Snapshot()) != 0 {
		t.Error("sticky updated before the commit")
	}
	if err := os.Remove(f.mb.Path()); err != nil {
		t.Fatal(err)
	}
	handle(t, l, p, true)
	if recs := f.records(t); len(recs) != 1 || recs[0].Peer != "alice" {
		t.Fatalf("records = %+v, want one from alice", recs)
	}
	if s, _ := f.sticky.Get(f.alice.Public()); s != "s-1" {
		t.Errorf("sticky = %q, want s-1", s)
	}
	// Done now: a further copy is a replay.
	handle(t, l, p, true)
	f.wantLog(t, "reason=replay")
	if n := len(f.records(t)); n != 1 {
		t.Errorf("%d records after a replay, want 1", n)
	}
}

// TestHandleFullMailbox: a full mailbox refuses the message, which stays on
// the relay.
func TestHandleFullMailbox(t *testing.T) {
	f := newFixture(t)
	fillMailbox(t, f)
	before, err := os.ReadFile(f.mb.Path())
	if err != nil {
		t.Fatal(err)
	}
	ack, err := f.loop(noRelay).Handle(context.Background(), delivery(payload(t, f.msg(t, f.alice, nil))))
	if ack || !errors.Is(err, mailbox.ErrFull) {
		t.Fatalf("Handle = %v, %v; want no ack and ErrFull", ack, err)
	}
	after, err := os.ReadFile(f.mb.Path())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("a full mailbox was changed")
	}
}

// A peer that holds its whole share of the mailbox has its next message
// dropped and acknowledged, with a reason, so that it holds up nothing
// queued behind it on the relay; a message from this identity's sibling
// session that follows it is stored.
func TestHandleOverShareDropsOnlyThatSendersMessage(t *testing.T) {
	f := newFixture(t)
	var dropped []string
	l := inbound.New(inbound.Config{
		Relay: relay.New(noRelay, nil), Route: f.meRoute, Own: f.me.Public(), Gate: f.gate, Peers: f.peers,
		Mailbox: f.mb, Pairing: f.pair, Sticky: f.sticky, Knocks: f.knocks, Logger: f.logger,
		Dropped: func(m *identity.Message, reason string) { dropped = append(dropped, reason+":"+m.MsgID) },
	})
	fillMailboxWith(t, f, mailbox.MaxRecords/2)
	before, err := os.ReadFile(f.mb.Path())
	if err != nil {
		t.Fatal(err)
	}
	m := f.msg(t, f.alice, nil)
	handle(t, l, payload(t, m), true)
	f.wantLog(t, "reason=over_share")
	if want := []string{"over_share:" + m.MsgID}; !slices.Equal(dropped, want) {
		t.Errorf("dropped %v, want %v", dropped, want)
	}
	if after, _ := os.ReadFile(f.mb.Path()); !bytes.Equal(before, after) {
		t.Error("the refused message changed the mailbox")
	}
	sib := f.msg(t, f.me, func(m *identity.Message) { m.ReplyTo = f.me.Public().String() + "#me-2" })
	handle(t, l, payload(t, sib), true)
	if n := len(f.records(t)); n != mailbox.MaxRecords/2+1 {
		t.Errorf("%d records, want the sibling's message stored", n)
	}
}

// fillMailbox writes a mailbox holding mailbox.MaxRecords unread records.
func fillMailbox(tb testing.TB, f *fixture) {
	tb.Helper()
	fillMailboxWith(tb, f, mailbox.MaxRecords)
}

// fillMailboxWith writes a mailbox holding n unread records from alice.
func fillMailboxWith(tb testing.TB, f *fixture, n int) {
	tb.Helper()
	m := f.msg(tb, f.alice, nil)
	var b bytes.Buffer
	b.WriteString(`{"records":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		m.MsgID = fmt.Sprintf("fill-%d", i) // the mailbox does not verify what it stores
		fmt.Fprintf(&b, `{"message":%s,"peer":"alice","state":"receiver_stored","superseded_by":null}`, payload(tb, m))
	}
	b.WriteString(`],"notice":null}`)
	writeFile(tb, f.mb.Path(), b.Bytes())
	if got := len(f.records(tb)); got != n {
		tb.Fatalf("filled mailbox holds %d records", got)
	}
}

// writeFile writes data to path, creating its directory.
func writeFile(tb testing.TB, path string, data []byte) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		tb.Fatal(err)
	}
}
