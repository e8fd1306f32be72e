package tools_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/lookalike"
	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/receipt"
	"github.com/interlink-go/interlink/internal/render"
	"github.com/interlink-go/interlink/internal/testutil"
)

// The original's scenario: a peer sends two progress updates and the
// result of one task. conversation_history shows all three with their
// text, each update labelled "superseded by" the next message, while
// receive_messages shows only the result. message_status and read_message
// find the superseded updates with their text. After consume=true the
// history still shows every message, the result now acknowledged.
func TestConversationHistoryShowsSupersededProgress(t *testing.T) {
	url := agenttest.StartBus(t)
	alice, bob := agenttest.Pair(t)
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)
	b := agenttest.Start(t, bob, "b1", []string{url}, nil)
	agenttest.OnRoster(t, url, bob.Key(), "b1")

	send := func(status, text string) string {
		return agenttest.MsgID(t, a.OK("send_message", map[string]any{"to": "bob", "task_id": "build", "status": status, "text": text}))
	}
	u1 := send("update", "compiling, step 1 of 2")
	u2 := send("update", "testing, step 2 of 2")
	r := send("result", "build green")
	for _, id := range []string{u1, u2, r} {
		b.WaitDelivered(id)
	}

	got := b.OK("conversation_history", map[string]any{"peer": "alice"})
	for _, want := range []string{
		"[superseded by " + u2 + "] Receipt:", "compiling, step 1 of 2",
		"[superseded by " + r + "] Receipt:", "testing, step 2 of 2", "build green",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("conversation_history lacks %q:\n%s", want, got)
		}
	}
	// The result is unread: stored, or already handed to the host by the
	// notifier, whichever came first.
	switch label := receiptLabel(got, r); mailbox.State(label) {
	case mailbox.StateStored, mailbox.StateInboxQueued, mailbox.StateNotificationSent, mailbox.StateHostQueued:
	default:
		t.Errorf("the result is labelled %q, want an unread state:\n%s", label, got)
	}
	if i, j := strings.Index(got, "step 1 of 2"), strings.Index(got, "build green"); i < 0 || j < i {
		t.Errorf("history not oldest first:\n%s", got)
	}
	unread := b.OK("receive_messages", nil)
	if !strings.Contains(unread, "build green") || strings.Contains(unread, "step 1 of 2") || strings.Contains(unread, "step 2 of 2") {
		t.Errorf("receive_messages shows more than the unread result:\n%s", unread)
	}
	status := b.OK("message_status", map[string]any{"msg_id": u1})
	if !strings.HasPrefix(status, "[superseded by "+u2+"] Receipt:") || !strings.Contains(status, "compiling, step 1 of 2") {
		t.Errorf("message_status of the first update:\n%s", status)
	}
	read := b.OK("read_message", map[string]any{"sender": alice.Key(), "msg_id": u2})
	if !strings.HasPrefix(read, "[superseded by "+r+"] Receipt:") || !strings.Contains(read, "testing, step 2 of 2") {
		t.Errorf("read_message of the second update:\n%s", read)
	}

	consumed := b.OK("conversation_history", map[string]any{"peer": "alice", "consume": true})
	if !strings.HasPrefix(consumed, "The received messages below are now acknowledged.") {
		t.Errorf("consume = %q", consumed)
	}
	if got := b.OK("receive_messages", nil); !strings.HasPrefix(got, "No unread messages") {
		t.Errorf("after consuming: %q", got)
	}
	again := b.OK("conversation_history", map[string]any{"peer": "alice"})
	for _, want := range []string{
		"[superseded by " + u2 + "] Receipt:", "[superseded by " + r + "] Receipt:",
		"[receiver_acknowledged] Receipt:", "build green",
	} {
		if !strings.Contains(again, want) {
			t.Errorf("history after consuming lacks %q:\n%s", want, again)
		}
	}
}

// Questions a session has acknowledged stay in its conversation history
// with their text for the window, in both processes of the session, and
// message_status and read_message (with an offset, for a long one) still
// give their text. Acknowledging them again counts nothing.
func TestAcknowledgedMessagesStayInTheHistory(t *testing.T) {
	url := agenttest.StartBus(t)
	alice, bob := agenttest.Pair(t)
	root := t.TempDir()
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)
	b := agenttest.Start(t, bob, "b1", []string{url}, &agenttest.Options{Root: root})
	agenttest.OnRoster(t, url, bob.Key(), "b1")

	long := strings.Repeat("a long report line\n", render.MaxText/19+200)
	q := agenttest.MsgID(t, a.OK("send_message", map[string]any{"to": "bob", "text": "which port?"}))
	l := agenttest.MsgID(t, a.OK("send_message", map[string]any{"to": "bob", "text": long}))
	b.WaitDelivered(q)
	b.WaitDelivered(l)
	var receipts []any
	for round := 0; len(receipts) < 2 && round < 3; round++ {
		for _, r := range testutil.Receipts(t, b.OK("receive_messages", nil)) {
			receipts = append(receipts, r)
		}
	}
	if got := b.OK("acknowledge_messages", map[string]any{"messages": receipts}); !strings.HasPrefix(got, "Acknowledged 2 ") {
		t.Fatalf("acknowledge = %q", got)
	}

	b2 := agenttest.Start(t, bob, "b1", []string{url}, &agenttest.Options{Root: root})
	for _, n := range []*agenttest.Node{b, b2} {
		got := n.OK("conversation_history", map[string]any{"peer": "alice"})
		if strings.Count(got, "[receiver_acknowledged] Receipt:") != 2 || !strings.Contains(got, "which port?") {
			t.Errorf("history after acknowledging:\n%s", head(got))
		}
		status := n.OK("message_status", map[string]any{"msg_id": q})
		if !strings.HasPrefix(status, "[receiver_acknowledged] Receipt:") || !strings.Contains(status, "which port?") {
			t.Errorf("message_status of an acknowledged question:\n%s", status)
		}
		part := n.OK("read_message", map[string]any{"sender": alice.Key(), "msg_id": l, "offset": render.MaxText})
		if !strings.HasPrefix(part, "[receiver_acknowledged] Receipt:") ||
			!strings.Contains(part, fmt.Sprintf("bytes %d to %d are shown, the end of the text", render.MaxText, len(long))) {
			t.Errorf("read_message from an offset of an acknowledged message:\n…%s", part[max(0, len(part)-300):])
		}
	}
	if got := b2.OK("acknowledge_messages", map[string]any{"messages": receipts}); !strings.HasPrefix(got, "Acknowledged 0 ") {
		t.Errorf("acknowledging again = %q", got)
	}
}

// A superseded update that no tool has shown consumes nothing when its
// receipt is handed to acknowledge_messages; once conversation_history
// has shown it, the receipt acknowledges it, and it keeps its label.
func TestHistoryCountsAsShowingForAcknowledging(t *testing.T) {
	url := agenttest.StartBus(t)
	alice, bob := agenttest.Pair(t)
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)
	b := agenttest.Start(t, bob, "b1", []string{url}, nil)
	agenttest.OnRoster(t, url, bob.Key(), "b1")

	u1 := agenttest.MsgID(t, a.OK("send_message", map[string]any{"to": "bob", "task_id": "t", "status": "update", "text": "half way"}))
	u2 := agenttest.MsgID(t, a.OK("send_message", map[string]any{"to": "bob", "task_id": "t", "status": "update", "text": "almost"}))
	b.WaitDelivered(u1)
	b.WaitDelivered(u2)
	receipt := map[string]any{"sender": alice.Key(), "msg_id": u1}

	got := b.OK("acknowledge_messages", map[string]any{"messages": []any{receipt}})
	if !strings.HasPrefix(got, "Acknowledged 0 ") || !strings.Contains(got, "1 of the receipts name no message this session has shown you") {
		t.Errorf("acknowledging an update no tool showed = %q", got)
	}
	if h := b.OK("conversation_history", map[string]any{"peer": "alice"}); !strings.Contains(h, "[superseded by "+u2+"] Receipt:") {
		t.Fatalf("history:\n%s", h)
	}
	if got := b.OK("acknowledge_messages", map[string]any{"messages": []any{receipt}}); !strings.HasPrefix(got, "Acknowledged 1 ") {
		t.Errorf("acknowledging it after the history showed it = %q", got)
	}
	if st := b.OK("message_status", map[string]any{"msg_id": u1}); !strings.HasPrefix(st, "[superseded by "+u2+"] Receipt:") || !strings.Contains(st, "half way") {
		t.Errorf("message_status after acknowledging:\n%s", st)
	}
}

// Beyond a sender's share of the history, the tools say that the text was
// not kept: conversation_history names the day, and message_status gives
// the state and receipt of such a message with the reason. The files are
// written as the mailbox leaves them after a flood: the message's
// tombstone, and in the day's history file the marker line instead of
// its text.
func TestToolsSayWhenTheHistoryDidNotKeepAText(t *testing.T) {
	url := agenttest.StartBus(t)
	alice, bob := agenttest.Pair(t)
	root := t.TempDir()
	now := time.Now()
	ts := identity.Millis(now)
	day := now.UTC().Format(time.DateOnly)
	dir := filepath.Join(root, "mailbox", bob.Key())
	if err := os.MkdirAll(filepath.Join(dir, "b1.history"), 0o700); err != nil {
		t.Fatal(err)
	}
	agenttest.WriteFile(t, filepath.Join(dir, "b1.tombstones.jsonl"),
		fmt.Sprintf(`{"sender":%q,"msg_id":"flood-1","ts":%d,"acknowledged":true}`+"\n", alice.Key(), ts))
	agenttest.WriteFile(t, filepath.Join(dir, "b1.history", day+".jsonl"),
		fmt.Sprintf(`{"sender":%q,"msg_id":"flood-1","ts":%d,"peer":"alice","not_kept":true}`+"\n", alice.Key(), ts))
	b := agenttest.Start(t, bob, "b1", []string{url}, &agenttest.Options{Root: root})

	got := b.OK("conversation_history", map[string]any{"peer": "alice"})
	want := fmt.Sprintf("[interlink] On %s the sender known as alice reached what the history keeps of one sender in a day (%d messages or %d MiB)",
		day, mailbox.MaxHistoryLines, mailbox.MaxHistoryBytes>>20)
	if !strings.Contains(got, want) {
		t.Errorf("conversation_history = %q, want it to contain %q", got, want)
	}
	st := b.OK("message_status", map[string]any{"msg_id": "flood-1"})
	if !strings.HasPrefix(st, `[receiver_acknowledged] Receipt: {"sender":"`+alice.Key()+`","msg_id":"flood-1"}`) ||
		!strings.Contains(st, "its text is not kept: that day its sender reached what the history keeps of one sender") {
		t.Errorf("message_status = %q", st)
	}
	if got := b.OK("conversation_history", map[string]any{"peer": "carol"}); got != "no history with carol" {
		t.Errorf("conversation_history of another peer = %q", got)
	}
}

// The receipt line of a message whose text the history did not keep is
// written like every other receipt line: a msg_id holding characters that
// are drawn as nothing or reorder text shows them as escapes, and the
// receipt still reads back exactly.
func TestTextlessReceiptLineEscapesWhatIsDrawnAsNothing(t *testing.T) {
	url := agenttest.StartBus(t)
	alice, bob := agenttest.Pair(t)
	root := t.TempDir()
	now := time.Now()
	ts := identity.Millis(now)
	dir := filepath.Join(root, "mailbox", bob.Key())
	for _, id := range []string{"flood\u202e1", "zw\u200bj", "tag\U000e0041", "soft\u00adhyphen"} {
		t.Run(id, func(t *testing.T) {
			line, err := json.Marshal(map[string]any{"sender": alice.Key(), "msg_id": id, "ts": ts, "acknowledged": true})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			agenttest.WriteFile(t, filepath.Join(dir, "b1.tombstones.jsonl"), string(line)+"\n")
			b := agenttest.Start(t, bob, "b1", []string{url}, &agenttest.Options{Root: root})
			defer b.Stop()
			st := b.OK("message_status", map[string]any{"msg_id": id})
			if !strings.Contains(st, "its text is not in the history") {
				t.Fatalf("message_status = %q, want the textless line", st)
			}
			head, _, _ := strings.Cut(st, "\n")
			if strings.ContainsFunc(head, lookalike.Ignorable) || strings.ContainsFunc(head, func(r rune) bool { return unicode.Is(unicode.Cf, r) }) {
				t.Errorf("receipt line %q shows a character drawn as nothing", head)
			}
			rs := testutil.Receipts(t, st)
			if len(rs) != 1 || rs[0].Sender != alice.Key() || rs[0].MsgID != id || rs[0].Label != "receiver_acknowledged" {
				t.Errorf("receipts %+v, want the exact receipt of %q", rs, id)
			}
		})
	}
}

// receiptLabel returns the label of the receipt line for msgID in a tool
// result, or "" without one.
func receiptLabel(text, msgID string) string {
	for line := range strings.Lines(text) {
		if l, err := receipt.Parse(line); err == nil && l.MsgID == msgID {
			return l.Label
		}
	}
	return ""
}
