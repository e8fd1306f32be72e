package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/delivery"
	"github.com/interlink-go/interlink/internal/inbox"
	"github.com/interlink-go/interlink/internal/testutil"
)

// Item 41: in channel mode a notice arrives as notifications/claude/channel
// whose content names receive_messages with the notice id; fetching and
// acknowledging work.
func TestChannelNotification(t *testing.T) {
	url := startBus(t)
	alice, bob := pair(t)
	var mu sync.Mutex
	var got []mcp.JSONRPCNotification
	b := start(t, bob, "b1", []string{url}, &nodeOpts{noSink: true, edit: func(c *agent.Config) { c.Channels = true }})
	b.c.OnNotification(func(n mcp.JSONRPCNotification) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, n)
	})
	a := start(t, alice, "a1", []string{url}, nil)
	onRoster(t, url, bob.key(), "b1")
	a.ok("send_message", map[string]any{"to": "bob", "text": "over the channel"})
	var n mcp.JSONRPCNotification
	eventually(t, "a channel notification", func() bool {
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
	recv := b.waitText("receive_messages", map[string]any{"notification_id": id}, "[notification_sent] Receipt: ")
	if !strings.Contains(recv, "over the channel") || !strings.HasPrefix(recv, "[notification_sent] Receipt: ") {
		t.Errorf("receive = %q", recv)
	}
	r := testutil.Receipts(t, recv)
	if ack := b.ok("acknowledge_messages", map[string]any{"messages": []any{r[0]}}); !strings.HasPrefix(ack, "Acknowledged 1 ") {
		t.Errorf("ack = %q", ack)
	}
}

// Item 43 (inbox part): sibling sessions of one identity have separate
// notice inboxes.
func TestSiblingInboxes(t *testing.T) {
	url := startBus(t)
	alice, bob := pair(t)
	root := t.TempDir()
	inboxSink := func(session string) *nodeOpts {
		return &nodeOpts{root: root, noSink: true, edit: func(c *agent.Config) {
			box, err := inbox.Open(root, session)
			if err != nil {
				t.Fatal(err)
			}
			if c.Sink, err = delivery.NewInbox(box); err != nil {
				t.Fatal(err)
			}
		}}
	}
	start(t, bob, "b1", []string{url}, inboxSink("b1"))
	start(t, bob, "b2", []string{url}, inboxSink("b2"))
	a := start(t, alice, "a1", []string{url}, nil)
	onRoster(t, url, bob.key(), "b1")
	onRoster(t, url, bob.key(), "b2")
	a.ok("send_message", map[string]any{"to": "bob", "session": "b1", "text": "only for b1"})
	p1 := filepath.Join(root, "inbox", "b1.jsonl")
	eventually(t, "b1's notice", func() bool {
		data, _ := os.ReadFile(p1)
		return strings.Contains(string(data), "receive_messages")
	})
	if data, err := os.ReadFile(filepath.Join(root, "inbox", "b2.jsonl")); err != nil || len(data) != 0 {
		t.Errorf("b2's inbox = %q, %v; want empty", data, err)
	}
}
