package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/render"
	"github.com/interlink-go/interlink/internal/testutil"
)

// queueDepth reports whether the relay holds a message for rt, without
// taking it.
func queued(t testing.TB, url, rt string) bool {
	t.Helper()
	d, err := relay.New(url, nil).Recv(context.Background(), rt, 0)
	if err != nil {
		t.Fatal(err)
	}
	return d.HasMessage
}

// Item 9: the bus is down at send time.
func TestSendWhileBusDown(t *testing.T) {
	url, sw := startSwitchableBus(t)
	alice, bob := pair(t)
	b := start(t, bob, "b1", []string{url}, nil)
	onRoster(t, url, bob.key(), "b1")
	a := start(t, alice, "a1", []string{url}, nil)

	sw.set("/send", true)
	res := a.ok("send_message", map[string]any{"to": "bob", "text": "while down"})
	id := msgID(t, res)
	if got := a.ok("list_pending", nil); !strings.Contains(got, "1 pending:") || !strings.Contains(got, id) {
		t.Errorf("list_pending = %q", got)
	}
	if got := a.ok("message_status", map[string]any{"msg_id": id}); !strings.Contains(got, "[pending]") {
		t.Errorf("status = %q", got)
	}
	eventually(t, "a few retries", func() bool { return sw.count("/send") >= 3 })
	sw.set("/send", false)
	a.waitText("message_status", map[string]any{"msg_id": id}, "[bus_accepted]")
	if got := a.ok("list_pending", nil); !strings.HasPrefix(got, "Nothing is waiting") {
		t.Errorf("list_pending after = %q", got)
	}
	b.waitText("receive_messages", nil, "while down")
}

// Item 9 (two relays) and item 3: every relay is announced to, polled and
// sent to; a relay that failed a send is not tried again once another took
// the message.
func TestSeveralRelays(t *testing.T) {
	url1, sw1 := startSwitchableBus(t)
	url2, sw2 := startSwitchableBus(t)
	alice, bob := pair(t)
	a := start(t, alice, "a1", []string{url1, url2}, nil)
	b := start(t, bob, "b1", []string{url2}, nil) // bob uses the second relay only
	onRoster(t, url1, alice.key(), "a1")
	onRoster(t, url2, alice.key(), "a1")
	onRoster(t, url2, bob.key(), "b1")
	eventually(t, "polls on both relays", func() bool { return sw1.count("/recv") > 0 && sw2.count("/recv") > 0 })

	// bob → alice through relay 2 only: alice polls it.
	b.ok("send_message", map[string]any{"to": "alice", "session": "a1", "text": "via relay 2"})
	a.waitText("receive_messages", nil, "via relay 2")

	// alice → bob: both relays get the message.
	a.ok("send_message", map[string]any{"to": "bob", "text": "to both"})
	b.waitText("receive_messages", nil, "to both")
	eventually(t, "a send on each relay", func() bool { return sw1.count("/send") == 1 && sw2.count("/send") >= 1 })

	// Relay 1 failing: relay 2 takes the message, relay 1 is not retried.
	sw1.set("/send", true)
	before := sw1.count("/send")
	id := msgID(t, a.ok("send_message", map[string]any{"to": "bob", "text": "one relay down"}))
	a.waitText("message_status", map[string]any{"msg_id": id}, "[bus_accepted]")
	time.Sleep(300 * time.Millisecond) // several retry periods
	if got := sw1.count("/send") - before; got != 1 {
		t.Errorf("failing relay got %d sends, want 1", got)
	}
	b.waitText("receive_messages", nil, "one relay down")
}

// Items 15, 16 and 19: strangers, forgeries, wrong recipients, stale and
// future messages and loop-backs are dropped and acknowledged, never stored
// or notified.
func TestInboundRejections(t *testing.T) {
	url := startBus(t)
	alice, bob := pair(t)
	eve := newIdent(t)
	b := start(t, bob, "b1", []string{url}, nil)
	rt := b.a.Route().String()
	now := time.Now()

	msg := func(from *ident, edit func(*identity.Message)) identity.Message {
		mid, _ := identity.NewMsgID(nil)
		m := identity.Message{From: from.key(), To: bob.key(), Text: "drop me", TS: identity.Millis(now), MsgID: mid,
			Kind: identity.KindMessage, ReplyTo: from.key() + "#x1"}
		if edit != nil {
			edit(&m)
		}
		if err := from.signer.SignMessage(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	forged := msg(eve, nil)
	forged.From = alice.key() // eve's signature under alice's name
	tests := []struct {
		name   string
		m      identity.Message
		reason string
	}{
		{"stranger", msg(eve, nil), "not_allowlisted"},
		{"forged sender", forged, "bad_signature"},
		{"wrong recipient", msg(alice, func(m *identity.Message) { m.To = eve.key() }), "wrong_recipient"},
		{"stale", msg(alice, func(m *identity.Message) { m.TS = identity.Millis(now.Add(-25 * time.Hour)) }), "stale"},
		{"future", msg(alice, func(m *identity.Message) { m.TS = identity.Millis(now.Add(2 * time.Minute)) }), "stale"},
	}
	for _, tt := range tests {
		p, _ := tt.m.MarshalJSON()
		if err := relay.New(url, nil).Send(context.Background(), rt, p); err != nil {
			t.Fatal(err)
		}
		eventually(t, tt.name+" dropped", func() bool {
			for _, d := range b.drops.list() {
				if d == tt.reason+":"+tt.m.MsgID {
					return true
				}
			}
			return false
		})
	}
	// A loop-back: bob's own message naming this session as its origin.
	own := msg(bob, func(m *identity.Message) { m.ReplyTo = rt })
	p, _ := own.MarshalJSON()
	if err := relay.New(url, nil).Send(context.Background(), rt, p); err != nil {
		t.Fatal(err)
	}
	// Then a good message, which arrives behind all of them.
	good := msg(alice, func(m *identity.Message) { m.Text = "keep me" })
	p, _ = good.MarshalJSON()
	if err := relay.New(url, nil).Send(context.Background(), rt, p); err != nil {
		t.Fatal(err)
	}
	b.waitText("receive_messages", nil, "keep me")
	if recs := b.records(); len(recs) != 1 || recs[0].Message.MsgID != good.MsgID {
		t.Errorf("mailbox holds %d records, want only the good one", len(recs))
	}
	// The relay is acknowledged after the mailbox commit, so the good
	// message may still be queued for a moment after it shows.
	eventually(t, "every message acknowledged on the relay", func() bool { return !queued(t, url, rt) })
	for _, r := range b.sink.Records() {
		if strings.Contains(r.Content, "drop me") {
			t.Errorf("a rejected body reached the host: %+v", r)
		}
	}
	if got := b.ok("message_status", map[string]any{"msg_id": own.MsgID}); !strings.Contains(got, "no message") {
		t.Errorf("loop-back stored: %q", got)
	}
}

// Item 17: the same message through two relays, and again after a
// restart, is stored once.
func TestDuplicatesStoredOnce(t *testing.T) {
	url1, url2 := startBus(t), startBus(t)
	alice, bob := pair(t)
	b := start(t, bob, "b1", []string{url1, url2}, nil)
	m := sendAs(t, url1, alice, alice.key()+"#a1", b, "twice")
	p, _ := m.MarshalJSON()
	if err := relay.New(url2, nil).Send(context.Background(), b.a.Route().String(), p); err != nil {
		t.Fatal(err)
	}
	b.waitText("receive_messages", nil, "twice")
	eventually(t, "both relays drained", func() bool {
		return !queued(t, url1, b.a.Route().String()) && !queued(t, url2, b.a.Route().String())
	})
	root := b.root
	b.stop()

	// A new process (fresh replay set) gets the same message again.
	b2 := start(t, bob, "b1", []string{url1}, &nodeOpts{root: root})
	if err := relay.New(url1, nil).Send(context.Background(), b2.a.Route().String(), p); err != nil {
		t.Fatal(err)
	}
	eventually(t, "redelivery consumed", func() bool { return !queued(t, url1, b2.a.Route().String()) })
	if recs := b2.records(); len(recs) != 1 {
		t.Errorf("%d records after redelivery, want 1", len(recs))
	}
}

// Item 18: an unwritable mailbox keeps the message on the relay until it
// can be stored.
func TestUnwritableMailboxKeepsMessageOnRelay(t *testing.T) {
	url := startBus(t)
	alice, bob := pair(t)
	b := start(t, bob, "b1", []string{url}, nil)
	// A directory where the mailbox file belongs.
	path := filepath.Join(b.root, "mailbox", bob.key(), "b1.json")
	if err := os.MkdirAll(path, 0o700); err != nil {
		t.Fatal(err)
	}
	m := sendAs(t, url, alice, alice.key()+"#a1", b, "wait for me")
	eventually(t, "a failed commit", func() bool { return strings.Contains(b.logs.String(), "message kept on the relay") })
	time.Sleep(100 * time.Millisecond)
	if !queued(t, url, b.a.Route().String()) {
		t.Fatal("message acknowledged although it could not be stored")
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	got := b.waitText("receive_messages", nil, "wait for me")
	if !strings.Contains(got, m.MsgID) {
		t.Errorf("receive = %q", got)
	}
	eventually(t, "ack after the commit", func() bool { return !queued(t, url, b.a.Route().String()) })
}

// Item 25: progress alone never wakes the host; a question does.
func TestProgressOnlyBacklogNoNotice(t *testing.T) {
	url := startBus(t)
	alice, bob := pair(t)
	a := start(t, alice, "a1", []string{url}, nil)
	b := start(t, bob, "b1", []string{url}, nil)
	onRoster(t, url, bob.key(), "b1")
	a.ok("send_message", map[string]any{"to": "bob", "text": "10%", "task_id": "t", "status": "update"})
	a.ok("send_message", map[string]any{"to": "bob", "text": "20%", "task_id": "t", "status": "update"})
	eventually(t, "two updates stored", func() bool { return b.known() == 2 })
	time.Sleep(200 * time.Millisecond) // ten notification ticks
	if got := b.sink.Records(); len(got) != 0 {
		t.Fatalf("progress produced notices: %+v", got)
	}
	a.ok("send_message", map[string]any{"to": "bob", "text": "which branch?", "task_id": "t", "status": "needs_input"})
	eventually(t, "a notice for the question", func() bool { return len(b.sink.Records()) == 1 })
	got := b.ok("receive_messages", nil)
	if i, j := strings.Index(got, "which branch?"), strings.Index(got, "20%"); i < 0 || j < 0 || i > j {
		t.Errorf("question not before progress: %q", got)
	}
	if strings.Contains(got, "10%") {
		t.Errorf("superseded update listed as unread: %q", got)
	}
}

// Item 42: two processes with the same identity and session: one issues
// notices, both read and acknowledge the same mailbox.
func TestSameSessionTwice(t *testing.T) {
	url := startBus(t)
	alice, bob := pair(t)
	root := t.TempDir()
	b1 := start(t, bob, "b1", []string{url}, &nodeOpts{root: root})
	b2 := start(t, bob, "b1", []string{url}, &nodeOpts{root: root})
	a := start(t, alice, "a1", []string{url}, nil)
	onRoster(t, url, bob.key(), "b1")
	a.ok("send_message", map[string]any{"to": "bob", "text": "one"})
	eventually(t, "a notice", func() bool { return len(b1.sink.Records())+len(b2.sink.Records()) > 0 })
	time.Sleep(100 * time.Millisecond)
	if n1, n2 := len(b1.sink.Records()), len(b2.sink.Records()); n1 > 0 && n2 > 0 {
		t.Errorf("both processes issued notices: %d and %d", n1, n2)
	}
	got1 := b1.waitText("receive_messages", nil, "one")
	got2 := b2.ok("receive_messages", nil)
	if got1 != got2 {
		t.Errorf("the two views differ:\n%s\n---\n%s", got1, got2)
	}
	r := testutil.Receipts(t, got1)
	if got := b2.ok("acknowledge_messages", map[string]any{"messages": []any{r[0]}}); !strings.HasPrefix(got, "Acknowledged 1 ") {
		t.Errorf("ack = %q", got)
	}
	if got := b1.ok("acknowledge_messages", map[string]any{"messages": []any{r[0]}}); !strings.HasPrefix(got, "Acknowledged 0 ") {
		t.Errorf("ack in the other process = %q", got)
	}
	if got := b1.ok("receive_messages", nil); !strings.HasPrefix(got, "No unread") {
		t.Errorf("after ack = %q", got)
	}
}

// Item 43 (mailbox part): two sessions of one identity keep separate
// mailboxes.
func TestSiblingSessionsSeparateMailboxes(t *testing.T) {
	url := startBus(t)
	alice, bob := pair(t)
	root := t.TempDir()
	s1 := start(t, bob, "b1", []string{url}, &nodeOpts{root: root})
	s2 := start(t, bob, "b2", []string{url}, &nodeOpts{root: root})
	a := start(t, alice, "a1", []string{url}, nil)
	onRoster(t, url, bob.key(), "b1")
	onRoster(t, url, bob.key(), "b2")
	a.ok("send_message", map[string]any{"to": "bob", "session": "b1", "text": "for b1"})
	a.ok("send_message", map[string]any{"to": "bob", "session": "b2", "text": "for b2"})
	g1 := s1.waitText("receive_messages", nil, "for b1")
	g2 := s2.waitText("receive_messages", nil, "for b2")
	if strings.Contains(g1, "for b2") || strings.Contains(g2, "for b1") {
		t.Errorf("mailboxes mixed:\n%s\n---\n%s", g1, g2)
	}
}

// A long message is shown in parts of at most render.MaxText bytes; the
// note of each part gives the offset read_message continues from, and the
// parts put together are the text as sent.
func TestLongMessageIsReadInParts(t *testing.T) {
	url := startBus(t)
	alice, bob := pair(t)
	a := start(t, alice, "a1", []string{url}, nil)
	b := start(t, bob, "b1", []string{url}, nil)
	onRoster(t, url, bob.key(), "b1")

	var sb strings.Builder
	for i := 0; sb.Len() < 2*render.MaxText+1000; i++ {
		fmt.Fprintf(&sb, "line %d of a long report, ü\n", i)
	}
	text := sb.String()
	id := msgID(t, a.ok("send_message", map[string]any{"to": "bob", "text": text}))

	first := b.waitText("receive_messages", nil, id)
	receipt := testutil.Receipts(t, first)
	if len(receipt) != 1 {
		t.Fatalf("receipts = %v", receipt)
	}
	var got strings.Builder
	offset, parts := 0, 0
	res := first
	for {
		parts++
		body := res[strings.Index(res, `msg_id="`+id+`">`)+len(`msg_id="`+id+`">`)+1 : strings.LastIndex(res, "\n</interlink>")]
		if len(body) > render.MaxText {
			t.Fatalf("part %d shows %d bytes, more than %d", parts, len(body), render.MaxText)
		}
		got.WriteString(body)
		_, note, ok := strings.Cut(res, "\n[interlink] ")
		if !ok {
			t.Fatalf("part %d has no note:\n…%s", parts, res[len(res)-300:])
		}
		if !strings.Contains(note, fmt.Sprintf("is %d bytes", len(text))) {
			t.Errorf("note does not give the full size %d: %q", len(text), note)
		}
		if strings.HasSuffix(note, "the end of the text.") {
			break
		}
		_, after, _ := strings.Cut(note, "offset=")
		next, err := strconv.Atoi(strings.TrimSuffix(after, "."))
		if err != nil || next <= offset {
			t.Fatalf("note %q gives no offset past %d", note, offset)
		}
		offset = next
		res = b.ok("read_message", map[string]any{"sender": receipt[0]["sender"], "msg_id": receipt[0]["msg_id"], "offset": offset})
	}
	if got.String() != text {
		t.Errorf("the %d parts put together differ from the text sent (%d of %d bytes)", parts, got.Len(), len(text))
	}
	if parts != 3 {
		t.Errorf("read in %d parts, want 3", parts)
	}
	if msg := b.rpcErr("read_message", map[string]any{"sender": alice.key(), "msg_id": "no-such-id"}); !strings.Contains(msg, "invalid params") {
		t.Errorf("unknown receipt: %q", msg)
	}
	if msg := b.rpcErr("read_message", map[string]any{"sender": alice.key(), "msg_id": id, "offset": 1.5}); !strings.Contains(msg, "offset") {
		t.Errorf("fractional offset: %q", msg)
	}
}
