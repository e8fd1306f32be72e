package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/delivery"
	"github.com/interlink-go/interlink/internal/inbox"
	"github.com/interlink-go/interlink/internal/testutil"
)

// Progress alone never wakes the host, however long it waits; a question
// does, and is listed before the progress.
func TestProgressAloneNeverWakesTheHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		url, _ := agenttest.StartMemBus(t, nil)
		alice, bob := agenttest.Pair(t)
		a := agenttest.Start(t, alice, "a1", []string{url}, nil)
		b := agenttest.Start(t, bob, "b1", []string{url}, nil)
		synctest.Wait()
		a.OK("send_message", map[string]any{"to": "bob", "text": "10%", "task_id": "t", "status": "update"})
		a.OK("send_message", map[string]any{"to": "bob", "text": "20%", "task_id": "t", "status": "update"})
		agenttest.Elapse(time.Minute)
		if n := b.Known(); n != 2 {
			t.Fatalf("bob's mailbox knows %d messages, want the two updates", n)
		}
		if got := b.Sink.Records(); len(got) != 0 {
			t.Fatalf("progress produced notices: %+v", got)
		}
		a.OK("send_message", map[string]any{"to": "bob", "text": "which branch?", "task_id": "t", "status": "needs_input"})
		agenttest.Elapse(agenttest.Timing().Notify)
		if n := len(b.Sink.Records()); n != 1 {
			t.Errorf("%d notices for the question, want 1", n)
		}
		got := b.OK("receive_messages", nil)
		if i, j := strings.Index(got, "which branch?"), strings.Index(got, "20%"); i < 0 || j < 0 || i > j {
			t.Errorf("question not before progress: %q", got)
		}
		if strings.Contains(got, "10%") {
			t.Errorf("superseded update listed as unread: %q", got)
		}
	})
}

// Two processes of the same identity and session share one mailbox: only
// one of them issues notices, and both read and acknowledge the same
// messages.
func TestTwoProcessesOfASessionShareOneMailboxAndOneNotifier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		url, _ := agenttest.StartMemBus(t, nil)
		alice, bob := agenttest.Pair(t)
		root := t.TempDir()
		b1 := agenttest.Start(t, bob, "b1", []string{url}, &agenttest.Options{Root: root})
		b2 := agenttest.Start(t, bob, "b1", []string{url}, &agenttest.Options{Root: root})
		a := agenttest.Start(t, alice, "a1", []string{url}, nil)
		synctest.Wait()
		a.OK("send_message", map[string]any{"to": "bob", "text": "one"})
		agenttest.Elapse(time.Minute) // long enough for notices to expire and be issued again
		n1, n2 := len(b1.Sink.Records()), len(b2.Sink.Records())
		if n1+n2 == 0 || n1 > 0 && n2 > 0 {
			t.Errorf("notices from the two processes: %d and %d, want them from one only", n1, n2)
		}
		got1 := b1.OK("receive_messages", nil)
		got2 := b2.OK("receive_messages", nil)
		if got1 != got2 {
			t.Errorf("the two views differ:\n%s\n---\n%s", got1, got2)
		}
		r := testutil.Receipts(t, got1)
		if got := b2.OK("acknowledge_messages", map[string]any{"messages": []any{r[0]}}); !strings.HasPrefix(got, "Acknowledged 1 ") {
			t.Errorf("ack = %q", got)
		}
		if got := b1.OK("acknowledge_messages", map[string]any{"messages": []any{r[0]}}); !strings.HasPrefix(got, "Acknowledged 0 ") {
			t.Errorf("ack in the other process = %q", got)
		}
		if got := b1.OK("receive_messages", nil); !strings.HasPrefix(got, "No unread") {
			t.Errorf("after ack = %q", got)
		}
	})
}

// In channel mode a notice arrives as notifications/claude/channel whose
// content names receive_messages with the notice id and holds no message
// text; fetching and acknowledging work.
func TestChannelModeSendsNoticesOverTheConnection(t *testing.T) {
	url := agenttest.StartBus(t)
	alice, bob := agenttest.Pair(t)
	var mu sync.Mutex
	var got []mcp.JSONRPCNotification
	b := agenttest.Start(t, bob, "b1", []string{url}, &agenttest.Options{NoSink: true, Edit: func(c *agent.Config) { c.Channels = true }})
	b.C.OnNotification(func(n mcp.JSONRPCNotification) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, n)
	})
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)
	agenttest.OnRoster(t, url, bob.Key(), "b1")
	a.OK("send_message", map[string]any{"to": "bob", "text": "over the channel"})
	var n mcp.JSONRPCNotification
	agenttest.Eventually(t, "a channel notification", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, x := range got {
			if x.Method == delivery.ChannelMethod {
				n = x
				return true
			}
		}
		return false
	})
	content, _ := n.Params.AdditionalFields["content"].(string)
	meta, _ := n.Params.AdditionalFields["meta"].(map[string]any)
	if meta["sender"] != "Interlink" || !strings.Contains(content, `receive_messages(notification_id="`) ||
		strings.Contains(content, "over the channel") {
		t.Fatalf("notification = %v", n.Params.AdditionalFields)
	}
	id := meta["msg_id"].(string)
	if !strings.Contains(content, `notification_id="`+id+`"`) {
		t.Errorf("meta msg_id %s is not the notice id in %q", id, content)
	}
	// The notification goes out before its outcome is recorded, so a fast
	// reader may briefly see the message as receiver_stored.
	recv := b.WaitText("receive_messages", map[string]any{"notification_id": id}, "[notification_sent] Receipt: ")
	if !strings.Contains(recv, "over the channel") || !strings.HasPrefix(recv, "[notification_sent] Receipt: ") {
		t.Errorf("receive = %q", recv)
	}
	r := testutil.Receipts(t, recv)
	if ack := b.OK("acknowledge_messages", map[string]any{"messages": []any{r[0]}}); !strings.HasPrefix(ack, "Acknowledged 1 ") {
		t.Errorf("ack = %q", ack)
	}
}

// Sibling sessions of one identity have separate notice inboxes.
func TestSiblingSessionsHaveSeparateNoticeInboxes(t *testing.T) {
	url := agenttest.StartBus(t)
	alice, bob := agenttest.Pair(t)
	root := t.TempDir()
	inboxSink := func(session string) *agenttest.Options {
		return &agenttest.Options{Root: root, NoSink: true, Edit: func(c *agent.Config) {
			box, err := inbox.Open(root, session)
			if err != nil {
				t.Fatal(err)
			}
			if c.Sink, err = delivery.NewInbox(box); err != nil {
				t.Fatal(err)
			}
		}}
	}
	agenttest.Start(t, bob, "b1", []string{url}, inboxSink("b1"))
	agenttest.Start(t, bob, "b2", []string{url}, inboxSink("b2"))
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)
	agenttest.OnRoster(t, url, bob.Key(), "b1")
	agenttest.OnRoster(t, url, bob.Key(), "b2")
	a.OK("send_message", map[string]any{"to": "bob", "session": "b1", "text": "only for b1"})
	p1 := filepath.Join(root, "inbox", "b1.jsonl")
	agenttest.Eventually(t, "b1's notice", func() bool {
		data, _ := os.ReadFile(p1)
		return strings.Contains(string(data), "receive_messages")
	})
	if data, err := os.ReadFile(filepath.Join(root, "inbox", "b2.jsonl")); err != nil || len(data) != 0 {
		t.Errorf("b2's inbox = %q, %v; want empty", data, err)
	}
}
