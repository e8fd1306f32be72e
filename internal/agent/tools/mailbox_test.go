package tools_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/agent/tools"
	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/render"
	"github.com/interlink-go/interlink/internal/testutil"
)

// conversation_history shows both directions, changes nothing unless asked
// to consume, and then acknowledges exactly the received messages it shows.
func TestConversationHistoryConsumesOnlyWhatItShows(t *testing.T) {
	url := agenttest.StartBus(t)
	alice, bob := agenttest.Pair(t)
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)
	b := agenttest.Start(t, bob, "b1", []string{url}, nil)
	agenttest.OnRoster(t, url, bob.Key(), "b1")

	if got := b.OK("conversation_history", map[string]any{"peer": "alice"}); !strings.Contains(got, "no history with alice") {
		t.Errorf("empty history = %q", got)
	}
	a.OK("send_message", map[string]any{"to": "bob", "text": "first question?"})
	a.OK("send_message", map[string]any{"to": "bob", "text": "second question?"})
	agenttest.Eventually(t, "both messages stored", func() bool { return len(b.Records()) == 2 })
	agenttest.OnRoster(t, url, alice.Key(), "a1")
	b.OK("send_message", map[string]any{"to": "alice", "text": "my answer"})

	// Read-only by default.
	got := b.OK("conversation_history", map[string]any{"peer": "alice"})
	for _, w := range []string{"first question?", "second question?", "→ alice [", "my answer"} {
		if !strings.Contains(got, w) {
			t.Errorf("history lacks %q:\n%s", w, got)
		}
	}
	if !strings.Contains(b.OK("receive_messages", nil), "first question?") {
		t.Error("history consumed without consume")
	}
	// consume with limit 1: the newest entry is bob's own answer, so no
	// inbound record is kept and nothing is acknowledged.
	got = b.OK("conversation_history", map[string]any{"peer": "alice", "limit": 1, "consume": true})
	if !strings.Contains(got, "my answer") || strings.Contains(got, "question") {
		t.Errorf("limit 1 = %q", got)
	}
	// limit 2: the answer and the second question, which is acknowledged.
	got = b.OK("conversation_history", map[string]any{"peer": "alice", "limit": 2, "consume": true})
	if !strings.HasPrefix(got, "The received messages below are now acknowledged.") || !strings.Contains(got, "[receiver_acknowledged] Receipt:") {
		t.Errorf("consume = %q", got)
	}
	unread := b.OK("receive_messages", nil)
	if !strings.Contains(unread, "first question?") || strings.Contains(unread, "second question?") {
		t.Errorf("after consuming one: %q", unread)
	}
	b.OK("conversation_history", map[string]any{"peer": "alice", "consume": true})
	if got := b.OK("receive_messages", nil); !strings.HasPrefix(got, "No unread messages") {
		t.Errorf("after consuming all: %q", got)
	}
	for _, r := range b.Records() {
		if r.State != mailbox.StateAcknowledged {
			t.Errorf("record %s in state %s", r.Message.MsgID, r.State)
		}
	}
}

// A long message is shown in parts of at most render.MaxText bytes; the
// note of each part gives the offset read_message continues from, and the
// parts put together are the text as sent.
func TestLongMessageIsReadInParts(t *testing.T) {
	url := agenttest.StartBus(t)
	alice, bob := agenttest.Pair(t)
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)
	b := agenttest.Start(t, bob, "b1", []string{url}, nil)
	agenttest.OnRoster(t, url, bob.Key(), "b1")

	var sb strings.Builder
	for i := 0; sb.Len() < 2*render.MaxText+1000; i++ {
		fmt.Fprintf(&sb, "line %d of a long report, ü\n", i)
	}
	text := sb.String()
	id := agenttest.MsgID(t, a.OK("send_message", map[string]any{"to": "bob", "text": text}))

	first := b.WaitText("receive_messages", nil, id)
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
		res = b.OK("read_message", map[string]any{"sender": receipt[0].Sender, "msg_id": receipt[0].MsgID, "offset": offset})
	}
	if got.String() != text {
		t.Errorf("the %d parts put together differ from the text sent (%d of %d bytes)", parts, got.Len(), len(text))
	}
	if parts != 3 {
		t.Errorf("read in %d parts, want 3", parts)
	}
	if msg := b.RPCErr("read_message", map[string]any{"sender": alice.Key(), "msg_id": "no-such-id"}); !strings.Contains(msg, "invalid params") {
		t.Errorf("unknown receipt: %q", msg)
	}
	if msg := b.SchemaErr("read_message", map[string]any{"sender": alice.Key(), "msg_id": id, "offset": 1.5}); !strings.Contains(msg, "read_message: offset: ") {
		t.Errorf("fractional offset: %q", msg)
	}
}

// A batch of long messages is shown a few at a time: receive_messages and
// conversation_history keep their answers within tools.MaxAnswer, say how
// many messages they left out, and consume none of those.
func TestLongMessagesAreShownWithinTheAnswerBound(t *testing.T) {
	url := agenttest.StartBus(t)
	alice, bob := agenttest.Pair(t)
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)
	b := agenttest.Start(t, bob, "b1", []string{url}, nil)
	agenttest.OnRoster(t, url, bob.Key(), "b1")

	// Two of these fit in one answer, three do not.
	const n, size = 5, 20000
	text := func(i int) string { return fmt.Sprintf("report %d: ", i) + strings.Repeat("x", size) }
	for i := range n {
		a.OK("send_message", map[string]any{"to": "bob", "text": text(i)})
	}
	agenttest.Eventually(t, "every message stored", func() bool { return len(b.Records()) == n })

	history := b.OK("conversation_history", map[string]any{"peer": "alice", "limit": n, "consume": true})
	if !strings.Contains(history, "[interlink] 3 older messages are not shown") ||
		strings.Contains(history, "report 2:") || !strings.Contains(history, "report 3:") || !strings.Contains(history, "report 4:") {
		t.Errorf("history of five long messages does not show the newest two and a note:\n%s", head(history))
	}
	// Consumed messages leave the records; the three left out stay unread.
	unread := 0
	for _, r := range b.Records() {
		if r.State == mailbox.StateAcknowledged {
			t.Errorf("record %s acknowledged but kept", r.Message.MsgID)
		}
		unread++
	}
	if unread != 3 {
		t.Errorf("%d records unread after the history consumed two of five, want 3", unread)
	}

	var seen []string
	for round := 0; ; round++ {
		got := b.OK("receive_messages", nil)
		if round > n {
			t.Fatalf("still unread after %d rounds:\n%s", round, head(got))
		}
		if strings.HasPrefix(got, "No unread messages") {
			break
		}
		body, note, _ := strings.Cut(got, "\n[interlink] ")
		if len(body) > tools.MaxAnswer {
			t.Errorf("round %d shows %d bytes of messages, more than %d", round, len(body), tools.MaxAnswer)
		}
		receipts := testutil.Receipts(t, got)
		for i := range n {
			if strings.Contains(body, fmt.Sprintf("report %d:", i)) {
				seen = append(seen, strconv.Itoa(i))
			}
		}
		left := unread - len(receipts)
		unread = left
		if left > 0 && !strings.HasPrefix(note, fmt.Sprintf("%d more unread messages of this batch are not shown", left)) {
			t.Errorf("round %d: note %q, want %d more", round, note, left)
		}
		if left <= 0 && note != "" {
			t.Errorf("round %d: a note with nothing left out: %q", round, note)
		}
		var ack []any
		for _, r := range receipts {
			ack = append(ack, r)
		}
		b.OK("acknowledge_messages", map[string]any{"messages": ack})
	}
	if got := strings.Join(seen, ","); got != "0,1,2" {
		t.Errorf("receive_messages showed reports %s, want 0,1,2 (3 and 4 were consumed by the history)", got)
	}
}

// head returns the start of a long answer, for failure messages.
func head(s string) string {
	if len(s) > 600 {
		return s[:600] + "…"
	}
	return s
}
