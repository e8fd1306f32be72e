package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/delivery"
	"github.com/interlink-go/interlink/internal/e2e"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/relay"
)

// noRemoteReceipt is what message_status says of a sent message no receipt
// told of, as the original says it.
const noRemoteReceipt = "receiver acknowledgement unknown (no remote receipt)"

// stageOf returns the stage message_status of n shows for the sent
// message id: the receipt's stage, or "" while none came.
func stageOf(n *agenttest.Node, id string) string {
	got := n.OK("message_status", map[string]any{"msg_id": id})
	_, rest, ok := strings.Cut(got, "receipt: ")
	if !ok {
		return ""
	}
	st, _, _ := strings.Cut(rest, " ")
	return st
}

// waitStage waits until the sent message id of n shows stage, failing if
// it shows a stage beyond it first, and returns the status text.
func waitStage(t *testing.T, n *agenttest.Node, id string, stage e2e.Stage) string {
	t.Helper()
	agenttest.Eventually(t, "stage "+stage.String()+" of "+id, func() bool {
		got, _ := e2e.ParseStage(stageOf(n, id))
		if got > stage {
			t.Fatalf("stage %s of %s came before %s", got, id, stage)
		}
		return got == stage
	})
	return n.OK("message_status", map[string]any{"msg_id": id})
}

// The sender sees its message stored, then surfaced when the receiver's
// model fetched it, then acknowledged, each signed by the receiver's key
// and shown by message_status and conversation_history; the receipts
// themselves never show as messages, wake no one and leave nothing
// pending.
func TestReceiptsAdvanceStoredSurfacedAcknowledgedInOrder(t *testing.T) {
	tp := &tap{}
	url := bustest.Start(t, &bustest.Options{Wrap: tp.wrap})
	alice, bob := agenttest.Pair(t)
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)
	b := agenttest.Start(t, bob, "b1", []string{url}, nil)
	agenttest.OnRoster(t, url, alice.Key(), "a1")
	agenttest.OnRoster(t, url, bob.Key(), "b1")

	id := agenttest.MsgID(t, a.OK("send_message", map[string]any{"to": "bob", "text": "how far did this get"}))
	b.WaitDelivered(id)
	st := waitStage(t, a, id, e2e.Stored)
	if !strings.Contains(st, "[bus_accepted]") || !strings.Contains(st, "signed by bob ("+bob.Fingerprint()+")") {
		t.Errorf("status after stored = %q", st)
	}
	if strings.Contains(st, noRemoteReceipt) {
		t.Errorf("a receipted message still says %q", noRemoteReceipt)
	}

	b.WaitText("receive_messages", nil, "how far did this get")
	waitStage(t, a, id, e2e.Surfaced)

	recs := b.Records()
	if len(recs) != 1 {
		t.Fatalf("bob holds %d records", len(recs))
	}
	b.OK("acknowledge_messages", map[string]any{"messages": []map[string]any{{"sender": alice.Key(), "msg_id": id}}})
	waitStage(t, a, id, e2e.Acknowledged)

	hist := a.OK("conversation_history", map[string]any{"peer": "bob"})
	if !strings.Contains(hist, "receipt: receiver_acknowledged") || strings.Count(hist, "→ bob") != 1 {
		t.Errorf("conversation_history = %q", hist)
	}
	// The receipts are nothing the model sees: no unread message, no
	// notice, nothing pending, no record.
	if got := a.OK("receive_messages", nil); !strings.HasPrefix(got, "No unread messages") {
		t.Errorf("alice's receive_messages = %q", got)
	}
	if n := len(a.Records()); n != 0 {
		t.Errorf("alice holds %d records", n)
	}
	if recs := a.TextRecords(); len(recs) != 0 {
		t.Errorf("alice's host got %d notices", len(recs))
	}
	if got := a.OK("list_pending", nil); !strings.HasPrefix(got, "Nothing is waiting") {
		t.Errorf("alice's list_pending = %q", got)
	}
	if got := b.OK("list_pending", nil); !strings.HasPrefix(got, "Nothing is waiting") {
		t.Errorf("bob's list_pending = %q", got)
	}
	// Bob received receipts of nothing: his message_status knows only the
	// received message.
	if got := b.OK("message_status", map[string]any{"msg_id": id}); strings.Contains(got, "receipt: ") {
		t.Errorf("bob's status = %q", got)
	}
	// Both seal, so the receipts went sealed like the message: the relay
	// never saw a receipt's kind or body.
	tp.mu.Lock()
	seen := tp.seen.String()
	tp.mu.Unlock()
	for _, plain := range []string{`"kind":"receipt"`, `receiver_stored`, id} {
		if strings.Contains(seen, plain) {
			t.Errorf("the relay saw %s", plain)
		}
	}
}

// channelSink takes every notice as a host that shows it at once does
// (a Claude channel notification), and counts them.
type channelSink struct{ notices atomic.Int64 }

func (c *channelSink) Notice(context.Context, string, string) (mailbox.State, error) {
	c.notices.Add(1)
	return mailbox.StateNotificationSent, nil
}
func (c *channelSink) Text(context.Context, delivery.Record) error { return nil }

// With a host that takes notices itself (channels, codex queue), the
// surfaced stage comes with the hand-off, before any tool call; with the
// Stop-hook inbox, whose notice only asks the model to fetch, it comes
// with the fetch (the test above).
func TestReceiptSurfacedFollowsTheHostsHandoff(t *testing.T) {
	url := agenttest.StartBus(t)
	alice, bob := agenttest.Pair(t)
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)
	sink := &channelSink{}
	b := agenttest.Start(t, bob, "b1", []string{url}, &agenttest.Options{NoSink: true,
		Edit: func(c *agent.Config) { c.Sink = sink }})
	agenttest.OnRoster(t, url, alice.Key(), "a1")
	agenttest.OnRoster(t, url, bob.Key(), "b1")

	id := agenttest.MsgID(t, a.OK("send_message", map[string]any{"to": "bob", "text": "wake the host"}))
	waitStage(t, a, id, e2e.Surfaced)
	if sink.notices.Load() == 0 {
		t.Error("surfaced without a notice handed to the host")
	}
	if st := b.Records(); len(st) != 1 || st[0].State != mailbox.StateNotificationSent {
		t.Errorf("bob's record = %+v", st)
	}
}

// A stage the receiver noted but could not get a relay to take before it
// stopped goes out from its next process; a sender that was down gets the
// receipts waiting on the relay when it comes back.
func TestReceiptStagesSurviveARestartOfEitherSide(t *testing.T) {
	url, sw := agenttest.StartSwitchableBus(t)
	alice, bob := agenttest.Pair(t)
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)
	// Bob gathers for an hour: nothing he notes goes out while he runs.
	slow := &agenttest.Options{Edit: func(c *agent.Config) { c.Timing.ReceiptWindow = time.Hour }}
	b := agenttest.Start(t, bob, "b1", []string{url}, slow)
	agenttest.OnRoster(t, url, alice.Key(), "a1")
	agenttest.OnRoster(t, url, bob.Key(), "b1")

	id := agenttest.MsgID(t, a.OK("send_message", map[string]any{"to": "bob", "text": "survive restarts"}))
	b.WaitDelivered(id)
	b.WaitText("receive_messages", nil, "survive restarts")
	owed := filepath.Join(b.Root, "receipts-owed", bob.Key(), "b1.json")
	agenttest.Eventually(t, "the surfaced stage noted", func() bool {
		data, _ := os.ReadFile(owed)
		return bytes.Contains(data, []byte(`"want":"receiver_surfaced"`))
	})
	// Bob stops while no relay takes anything: his receipt stays queued.
	sw.Set("/send", true)
	b.Stop()
	if st := stageOf(a, id); st != "" {
		t.Fatalf("a stage came from a receiver that gathers for an hour: %s", st)
	}
	outbox, err := os.ReadFile(filepath.Join(b.Root, "outbox", bob.Key(), "b1.json"))
	if err != nil || !bytes.Contains(outbox, []byte(`"receipt":true`)) {
		t.Fatalf("bob's outbox holds no receipt: %v\n%s", err, outbox)
	}
	// Bob's next process sends what the first one could not.
	sw.Set("/send", false)
	b = agenttest.Start(t, bob, "b1", []string{url}, &agenttest.Options{Root: b.Root})
	waitStage(t, a, id, e2e.Surfaced)

	// Alice down: the acknowledgement waits on the relay for her.
	a.Stop()
	b.OK("receive_messages", nil)
	b.OK("acknowledge_messages", map[string]any{"messages": []map[string]any{{"sender": alice.Key(), "msg_id": id}}})
	agenttest.Eventually(t, "the receipt queued for alice", func() bool {
		return agenttest.Queued(t, url, alice.Key()+"#a1")
	})
	a = agenttest.Start(t, alice, "a1", []string{url}, &agenttest.Options{Root: a.Root})
	waitStage(t, a, id, e2e.Acknowledged)
}

// Receipts alice cannot vouch for are dropped with a reason and change
// nothing: one from a peer the message was not addressed to, one about a
// message she never sent, and a copy of one she already took.
func TestForgedReceiptsAreDropped(t *testing.T) {
	url := agenttest.StartBus(t)
	alice, bob := agenttest.Pair(t)
	carol := agenttest.NewIdent(t)
	alice.Admit(t, "bob", bob, "carol", carol)
	carol.Admit(t, "alice", alice)
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)
	agenttest.OnRoster(t, url, alice.Key(), "a1")
	// Bob is not running: alice's message waits for him, accepted by the
	// relay, and no genuine receipt can come.
	id := agenttest.MsgID(t, a.OK("send_message", map[string]any{"to": "bob", "session": "b1", "text": "to bob only"}))
	a.WaitText("message_status", map[string]any{"msg_id": id}, "[bus_accepted]")

	post := func(signer *agenttest.Ident, entries []e2e.Entry) (identity.Message, []byte) {
		t.Helper()
		m, err := e2e.NewReceipt(signer.Signer, alice.Signer.Public(), entries, identity.Millis(time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		payload, err := m.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if err := relay.New(url, nil).Send(t.Context(), a.A.Route().String(), payload); err != nil {
			t.Fatal(err)
		}
		return m, payload
	}
	now := identity.Millis(time.Now())

	// Carol, a peer, claims bob's stage.
	m, _ := post(carol, []e2e.Entry{{MsgID: id, Stage: e2e.Acknowledged, TS: now}})
	a.WaitDropped(e2e.ReasonWrongSigner, m.MsgID)
	// Bob tells of a message alice never sent.
	m, _ = post(bob, []e2e.Entry{{MsgID: "never-sent", Stage: e2e.Stored, TS: now}})
	a.WaitDropped(e2e.ReasonUnknownMsg, m.MsgID)
	// A genuine receipt of bob's, then the same bytes again.
	m, payload := post(bob, []e2e.Entry{{MsgID: id, Stage: e2e.Stored, TS: now}})
	waitStage(t, a, id, e2e.Stored)
	if err := relay.New(url, nil).Send(t.Context(), a.A.Route().String(), payload); err != nil {
		t.Fatal(err)
	}
	a.WaitDropped("replay", m.MsgID)
	// A stranger's receipt stops at the gate.
	eve := agenttest.NewIdent(t)
	m, _ = post(eve, []e2e.Entry{{MsgID: id, Stage: e2e.Acknowledged, TS: now}})
	a.WaitDropped("not_allowlisted", m.MsgID)

	if st := stageOf(a, id); st != e2e.Stored.String() {
		t.Errorf("stage after the forgeries = %q, want %s", st, e2e.Stored)
	}
	if n := len(a.Records()); n != 0 {
		t.Errorf("receipts reached the mailbox: %d records", n)
	}
}

// An agent with receipts off announces no receipts-v1: its peer sends it
// no receipt, and its own sent messages keep the original's status text.
func TestPeerWithoutReceiptsGetsNoReceiptTraffic(t *testing.T) {
	tp := &tap{}
	url := bustest.Start(t, &bustest.Options{Wrap: tp.wrap})
	alice, bob := agenttest.Pair(t)
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)
	off := &agenttest.Options{Edit: func(c *agent.Config) { c.NoReceipts = true }}
	b := agenttest.Start(t, bob, "b1", []string{url}, off)
	agenttest.OnRoster(t, url, alice.Key(), "a1")
	agenttest.OnRoster(t, url, bob.Key(), "b1")

	// Bob writes to alice, who reads and consumes it.
	id := agenttest.MsgID(t, b.OK("send_message", map[string]any{"to": "alice", "session": "a1", "text": "no receipts for me"}))
	a.WaitText("receive_messages", nil, "no receipts for me")
	a.OK("acknowledge_messages", map[string]any{"messages": []map[string]any{{"sender": bob.Key(), "msg_id": id}}})
	// Alice settles what she owes: bob's key is looked up and refused,
	// and nothing stays owed.
	owed := filepath.Join(a.Root, "receipts-owed", alice.Key(), "a1.json")
	agenttest.Eventually(t, "alice owes bob nothing", func() bool {
		data, err := os.ReadFile(owed)
		if err != nil {
			return false
		}
		var doc struct {
			Owed []json.RawMessage `json:"owed"`
		}
		return json.Unmarshal(data, &doc) == nil && len(doc.Owed) == 0
	})
	// Alice writes back; bob's status keeps the original's text.
	reply := agenttest.MsgID(t, a.OK("send_message", map[string]any{"to": "bob", "text": "a reply"}))
	b.WaitText("receive_messages", nil, "a reply")
	got := b.OK("message_status", map[string]any{"msg_id": id})
	if !strings.Contains(got, "[bus_accepted]") || !strings.HasSuffix(got, "\n"+noRemoteReceipt) {
		t.Errorf("bob's status = %q", got)
	}
	// On the wire, one message went to bob's route: alice's reply.
	tp.mu.Lock()
	n := 0
	for _, s := range tp.sends {
		if bytes.Contains(s, []byte(bob.Key()+"#b1")) {
			n++
		}
	}
	tp.mu.Unlock()
	if n != 1 {
		t.Errorf("%d sends to bob's route, want 1 (the reply %s)", n, reply)
	}
	for _, d := range b.Drops() {
		t.Errorf("bob dropped %s", d)
	}
}
