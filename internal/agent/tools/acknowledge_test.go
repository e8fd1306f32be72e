package tools_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/testutil"
)

// receiptOf returns the receipt of r as acknowledge_messages takes it.
func receiptOf(r mailbox.Record) map[string]any {
	return map[string]any{"sender": r.Message.From, "msg_id": r.Message.MsgID}
}

// recordWith waits until n holds a record whose text contains s and
// returns it.
func recordWith(t *testing.T, n *agenttest.Node, s string) mailbox.Record {
	t.Helper()
	var found mailbox.Record
	agenttest.Eventually(t, "a record with "+s, func() bool {
		for _, r := range n.Records() {
			if strings.Contains(r.Message.Text, s) {
				found = r
				return true
			}
		}
		return false
	})
	return found
}

// A receipt is text, and a peer can write text that looks like one. A
// receipt for a message this session never showed the model (it arrived
// after the fetch, say) consumes nothing when it comes back with the real
// ones: that message stays unread and is shown by the next fetch.
func TestAcknowledgeConsumesOnlyWhatThisSessionShowed(t *testing.T) {
	url := agenttest.StartBus(t)
	alice, bob := agenttest.Pair(t)
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)
	b := agenttest.Start(t, bob, "b1", []string{url}, nil)
	agenttest.OnRoster(t, url, bob.Key(), "b1")

	a.OK("send_message", map[string]any{"to": "bob", "text": "read this one"})
	shown := testutil.Receipts(t, b.WaitText("receive_messages", nil, "read this one"))
	a.OK("send_message", map[string]any{"to": "bob", "text": "never fetched"})
	unseen := recordWith(t, b, "never fetched")

	forged := receiptOf(unseen) // as a line of the first message's body could spell it
	got := b.OK("acknowledge_messages", map[string]any{"messages": []any{shown[0], forged}})
	if !strings.HasPrefix(got, "Acknowledged 1 ") || !strings.Contains(got, "1 of the receipts name no message this session has shown you") {
		t.Errorf("acknowledge = %q", got)
	}
	next := b.OK("receive_messages", nil)
	if !strings.Contains(next, "never fetched") || strings.Contains(next, "read this one") {
		t.Fatalf("after acknowledging: %q", next)
	}
	// Once shown, it can be acknowledged.
	if got := b.OK("acknowledge_messages", map[string]any{"messages": []any{forged}}); !strings.HasPrefix(got, "Acknowledged 1 ") {
		t.Errorf("acknowledge after the fetch = %q", got)
	}
}

// Another process of the same session (a restarted server, a second
// instance) fetched a message; a receipt for it handed to this process
// consumes nothing here, until this process shows it too.
func TestAcknowledgeIgnoresWhatAnotherProcessShowed(t *testing.T) {
	url := agenttest.StartBus(t)
	alice, bob := agenttest.Pair(t)
	root := t.TempDir()
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)
	b1 := agenttest.Start(t, bob, "b1", []string{url}, &agenttest.Options{Root: root})
	b2 := agenttest.Start(t, bob, "b1", []string{url}, &agenttest.Options{Root: root})
	agenttest.OnRoster(t, url, bob.Key(), "b1")

	a.OK("send_message", map[string]any{"to": "bob", "text": "seen by the other process"})
	r := testutil.Receipts(t, b2.WaitText("receive_messages", nil, "seen by the other process"))
	if got := b1.OK("acknowledge_messages", map[string]any{"messages": []any{r[0]}}); !strings.HasPrefix(got, "Acknowledged 0 ") {
		t.Errorf("acknowledge in a process that did not show it = %q", got)
	}
	if got := b2.OK("receive_messages", nil); !strings.Contains(got, "seen by the other process") {
		t.Errorf("the message was consumed: %q", got)
	}
	if got := b2.OK("acknowledge_messages", map[string]any{"messages": []any{r[0]}}); !strings.HasPrefix(got, "Acknowledged 1 ") {
		t.Errorf("acknowledge in the process that showed it = %q", got)
	}
}

// Every tool that shows a received message makes its receipt one that
// acknowledges: read_message, conversation_history and message_status as
// well as receive_messages. A message that a receive_messages answer left
// out for its size was not shown, and its receipt consumes nothing.
func TestAcknowledgeTakesReceiptsOfEveryToolThatShows(t *testing.T) {
	url := agenttest.StartBus(t)
	alice, bob := agenttest.Pair(t)
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)
	b := agenttest.Start(t, bob, "b1", []string{url}, nil)
	agenttest.OnRoster(t, url, bob.Key(), "b1")

	for _, text := range []string{"by read_message", "by message_status", "by history"} {
		a.OK("send_message", map[string]any{"to": "bob", "text": text})
	}
	byRead, byStatus, byHistory := recordWith(t, b, "by read_message"), recordWith(t, b, "by message_status"), recordWith(t, b, "by history")
	all := []any{receiptOf(byRead), receiptOf(byStatus), receiptOf(byHistory)}
	if got := b.OK("acknowledge_messages", map[string]any{"messages": all}); !strings.HasPrefix(got, "Acknowledged 0 ") {
		t.Fatalf("acknowledge before anything was shown = %q", got)
	}
	b.OK("read_message", map[string]any{"sender": byRead.Message.From, "msg_id": byRead.Message.MsgID})
	b.OK("message_status", map[string]any{"msg_id": byStatus.Message.MsgID})
	b.OK("conversation_history", map[string]any{"peer": "alice", "limit": 1})
	if got := b.OK("acknowledge_messages", map[string]any{"messages": all}); !strings.HasPrefix(got, "Acknowledged 3 ") {
		t.Errorf("acknowledge after each was shown = %q", got)
	}

	// Messages too large to share one answer: the ones left out consume
	// nothing.
	big := strings.Repeat("x", 30<<10)
	for range 3 {
		a.OK("send_message", map[string]any{"to": "bob", "text": big})
	}
	agenttest.Eventually(t, "three large messages", func() bool { return len(b.Records()) == 3 })
	got := b.OK("receive_messages", nil)
	if n := len(testutil.Receipts(t, got)); n == 3 {
		t.Fatalf("all three large messages fit one answer")
	}
	var every []any
	for _, r := range b.Records() {
		every = append(every, receiptOf(r))
	}
	shown := len(testutil.Receipts(t, got))
	if got := b.OK("acknowledge_messages", map[string]any{"messages": every}); !strings.HasPrefix(got, fmt.Sprintf("Acknowledged %d ", shown)) {
		t.Errorf("acknowledge of all three after %d were shown = %q", shown, got)
	}
}
