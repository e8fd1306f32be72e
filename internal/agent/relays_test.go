package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/identity"
)

// A message sent while the relay refuses it is pending, retried, and
// accepted once the relay takes it again.
func TestSendingResumesWhenTheRelayComesBack(t *testing.T) {
	url, sw := agenttest.StartSwitchableBus(t)
	alice, bob := agenttest.Pair(t)
	b := agenttest.Start(t, bob, "b1", []string{url}, nil)
	agenttest.OnRoster(t, url, bob.Key(), "b1")
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)

	sw.Set("/send", true)
	res := a.OK("send_message", map[string]any{"to": "bob", "text": "while down"})
	id := agenttest.MsgID(t, res)
	if got := a.OK("list_pending", nil); !strings.Contains(got, "1 pending:") || !strings.Contains(got, id) {
		t.Errorf("list_pending = %q", got)
	}
	if got := a.OK("message_status", map[string]any{"msg_id": id}); !strings.Contains(got, "[pending]") {
		t.Errorf("status = %q", got)
	}
	agenttest.Eventually(t, "a few retries", func() bool { return sw.Count("/send") >= 3 })
	sw.Set("/send", false)
	a.WaitText("message_status", map[string]any{"msg_id": id}, "[bus_accepted]")
	if got := a.OK("list_pending", nil); !strings.HasPrefix(got, "Nothing is waiting") {
		t.Errorf("list_pending after = %q", got)
	}
	b.WaitText("receive_messages", nil, "while down")
}

// Every relay is announced to, polled and sent to; a relay that failed a
// send is not tried again once another took the message.
func TestEveryRelayIsAnnouncedToPolledAndSentTo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		url1, sw1 := agenttest.StartMemBus(t, nil)
		url2, sw2 := agenttest.StartMemBus(t, nil)
		alice, bob := agenttest.Pair(t)
		// The sends of one message are counted; receipts would add theirs.
		quiet := &agenttest.Options{Edit: func(c *agent.Config) { c.NoReceipts = true }}
		a := agenttest.Start(t, alice, "a1", []string{url1, url2}, quiet)
		b := agenttest.Start(t, bob, "b1", []string{url2}, quiet) // bob uses the second relay only
		synctest.Wait()
		for _, url := range []string{url1, url2} {
			if !agenttest.RosterHas(url, alice.Key(), "a1") {
				t.Errorf("a1 is not on the roster of %s", url)
			}
		}
		if sw1.Count("/recv") == 0 || sw2.Count("/recv") == 0 {
			t.Errorf("polls: %d and %d, want some on each relay", sw1.Count("/recv"), sw2.Count("/recv"))
		}

		// bob → alice through relay 2 only: alice polls it.
		b.OK("send_message", map[string]any{"to": "alice", "session": "a1", "text": "via relay 2"})
		synctest.Wait()
		a.WaitText("receive_messages", nil, "via relay 2")

		// alice → bob: both relays get the message.
		a.OK("send_message", map[string]any{"to": "bob", "text": "to both"})
		synctest.Wait()
		b.WaitText("receive_messages", nil, "to both")
		if sw1.Count("/send") != 1 || sw2.Count("/send") < 1 {
			t.Errorf("sends: %d and %d, want one on each relay", sw1.Count("/send"), sw2.Count("/send"))
		}

		// Relay 1 failing: relay 2 takes the message, relay 1 is not retried.
		sw1.Set("/send", true)
		before := sw1.Count("/send")
		id := agenttest.MsgID(t, a.OK("send_message", map[string]any{"to": "bob", "text": "one relay down"}))
		agenttest.Elapse(10 * agenttest.Timing().Retry)
		a.WaitText("message_status", map[string]any{"msg_id": id}, "[bus_accepted]")
		if got := sw1.Count("/send") - before; got != 1 {
			t.Errorf("the failing relay got %d sends in ten retry periods, want 1", got)
		}
		b.WaitText("receive_messages", nil, "one relay down")
	})
}

// Messages from strangers, forgeries, messages for someone else, stale and
// future ones and the session's own come back are dropped and
// acknowledged, never stored or shown to the host.
func TestRejectedMessagesAreAcknowledgedAndNeverStored(t *testing.T) {
	url := agenttest.StartBus(t)
	alice, bob := agenttest.Pair(t)
	eve := agenttest.NewIdent(t)
	b := agenttest.Start(t, bob, "b1", []string{url}, nil)
	rt := b.A.Route().String()
	now := time.Now()

	msg := func(from *agenttest.Ident, edit func(*identity.Message)) identity.Message {
		mid, _ := identity.NewMsgID(nil)
		m := identity.Message{From: from.Key(), To: bob.Key(), Text: "drop me", TS: identity.Millis(now), MsgID: mid,
			Kind: identity.KindMessage, ReplyTo: from.Key() + "#x1"}
		if edit != nil {
			edit(&m)
		}
		if err := from.Signer.SignMessage(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	forged := msg(eve, nil)
	forged.From = alice.Key() // eve's signature under alice's name
	tests := []struct {
		name   string
		m      identity.Message
		reason string
	}{
		{"stranger", msg(eve, nil), "not_allowlisted"},
		{"forged sender", forged, "bad_signature"},
		{"wrong recipient", msg(alice, func(m *identity.Message) { m.To = eve.Key() }), "wrong_recipient"},
		{"stale", msg(alice, func(m *identity.Message) { m.TS = identity.Millis(now.Add(-25 * time.Hour)) }), "stale"},
		{"future", msg(alice, func(m *identity.Message) { m.TS = identity.Millis(now.Add(2 * time.Minute)) }), "stale"},
	}
	for _, tt := range tests {
		agenttest.PostRaw(t, url, rt, tt.m)
		b.WaitDropped(tt.reason, tt.m.MsgID)
	}
	// A loop-back: bob's own message naming this session as its origin.
	own := msg(bob, func(m *identity.Message) { m.ReplyTo = rt })
	agenttest.PostRaw(t, url, rt, own)
	// Then a good message, which arrives behind all of them.
	good := msg(alice, func(m *identity.Message) { m.Text = "keep me" })
	agenttest.PostRaw(t, url, rt, good)
	b.WaitText("receive_messages", nil, "keep me")
	if recs := b.Records(); len(recs) != 1 || recs[0].Message.MsgID != good.MsgID {
		t.Errorf("mailbox holds %d records, want only the good one", len(recs))
	}
	// The relay is acknowledged after the mailbox commit, so the good
	// message may still be queued for a moment after it shows.
	agenttest.Eventually(t, "every message acknowledged on the relay", func() bool { return !agenttest.Queued(t, url, rt) })
	for _, r := range b.Sink.Records() {
		if strings.Contains(r.Content, "drop me") {
			t.Errorf("a rejected body reached the host: %+v", r)
		}
	}
	if got := b.OK("message_status", map[string]any{"msg_id": own.MsgID}); !strings.Contains(got, "no message") {
		t.Errorf("loop-back stored: %q", got)
	}
}

// The same message through two relays, and again after a restart, is
// stored once.
func TestAMessageIsStoredOnceThroughTwoRelaysAndAfterARestart(t *testing.T) {
	url1, url2 := agenttest.StartBus(t), agenttest.StartBus(t)
	alice, bob := agenttest.Pair(t)
	b := agenttest.Start(t, bob, "b1", []string{url1, url2}, nil)
	m := agenttest.SendAs(t, url1, alice, alice.Key()+"#a1", b, "twice")
	agenttest.PostRaw(t, url2, b.A.Route().String(), m)
	b.WaitText("receive_messages", nil, "twice")
	agenttest.Eventually(t, "both relays drained", func() bool {
		return !agenttest.Queued(t, url1, b.A.Route().String()) && !agenttest.Queued(t, url2, b.A.Route().String())
	})
	root := b.Root
	b.Stop()

	// A new process (fresh replay set) gets the same message again.
	b2 := agenttest.Start(t, bob, "b1", []string{url1}, &agenttest.Options{Root: root})
	agenttest.PostRaw(t, url1, b2.A.Route().String(), m)
	agenttest.Eventually(t, "redelivery consumed", func() bool { return !agenttest.Queued(t, url1, b2.A.Route().String()) })
	if recs := b2.Records(); len(recs) != 1 {
		t.Errorf("%d records after redelivery, want 1", len(recs))
	}
}

// A mailbox that cannot be written keeps the message on the relay, however
// many retries fail, until it can be stored.
func TestUnwritableMailboxKeepsTheMessageOnTheRelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		url, _ := agenttest.StartMemBus(t, nil)
		alice, bob := agenttest.Pair(t)
		b := agenttest.Start(t, bob, "b1", []string{url}, nil)
		// A directory where the mailbox file belongs.
		path := filepath.Join(b.Root, "mailbox", bob.Key(), "b1.json")
		if err := os.MkdirAll(path, 0o700); err != nil {
			t.Fatal(err)
		}
		m := agenttest.SendAs(t, url, alice, alice.Key()+"#a1", b, "wait for me")
		agenttest.Elapse(10 * agenttest.Timing().RetryDelay)
		if !strings.Contains(b.Logs.String(), "message kept on the relay") {
			t.Error("no failed commit logged")
		}
		if !agenttest.Queued(t, url, b.A.Route().String()) {
			t.Fatal("message acknowledged although it could not be stored")
		}
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		agenttest.Elapse(agenttest.Timing().RetryDelay)
		got := b.OK("receive_messages", nil)
		if !strings.Contains(got, m.MsgID) {
			t.Errorf("receive = %q", got)
		}
		if agenttest.Queued(t, url, b.A.Route().String()) {
			t.Error("message still on the relay after the commit")
		}
	})
}

// Two sessions of one identity keep separate mailboxes.
func TestSiblingSessionsKeepSeparateMailboxes(t *testing.T) {
	url := agenttest.StartBus(t)
	alice, bob := agenttest.Pair(t)
	root := t.TempDir()
	s1 := agenttest.Start(t, bob, "b1", []string{url}, &agenttest.Options{Root: root})
	s2 := agenttest.Start(t, bob, "b2", []string{url}, &agenttest.Options{Root: root})
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)
	agenttest.OnRoster(t, url, bob.Key(), "b1")
	agenttest.OnRoster(t, url, bob.Key(), "b2")
	a.OK("send_message", map[string]any{"to": "bob", "session": "b1", "text": "for b1"})
	a.OK("send_message", map[string]any{"to": "bob", "session": "b2", "text": "for b2"})
	g1 := s1.WaitText("receive_messages", nil, "for b1")
	g2 := s2.WaitText("receive_messages", nil, "for b2")
	if strings.Contains(g1, "for b2") || strings.Contains(g2, "for b1") {
		t.Errorf("mailboxes mixed:\n%s\n---\n%s", g1, g2)
	}
}
