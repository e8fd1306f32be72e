//go:build hosttest

package hosttest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/receipt"
	"github.com/interlink-go/interlink/internal/testutil"
)

// wantTools are tools every interlink-mcp must list.
var wantTools = []string{
	"send_message", "receive_messages", "acknowledge_messages", "message_status",
	"list_pending", "discover", "set_summary", "get_my_session_id",
	"conversation_history", "cancel_task",
}

// maxInstructions is where Claude Code starts truncating server
// instructions.
const maxInstructions = 2048

// deliveryTimeout bounds the wait for a message to reach the bus and the
// other session.
const deliveryTimeout = 10 * time.Second

var msgIDRE = regexp.MustCompile(`\(msg_id ([^)\s]+)\)`)

// TestMCPSDKClient runs two sessions of one identity, each under the
// official MCP TypeScript SDK client, and sends a message from one to the
// other through a real bus.
func TestMCPSDKClient(t *testing.T) {
	installNPM(t, "@modelcontextprotocol/sdk", mcpSDKVersion) // skip early
	home := t.TempDir()
	bus := startBus(t, home)

	conf := filepath.Join(home, ".config", "interlink")
	key := filepath.Join(conf, "id.key")
	keygen(t, home, key)
	peers := filepath.Join(conf, "peers.json")
	if err := os.WriteFile(peers, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	agent := func(session string) []string {
		return []string{
			filepath.Join(binaries(t), "interlink-mcp"),
			"--key", key, "--peers", peers, "--url", bus, "--session", session,
			"--state-dir", filepath.Join(home, "state"), "--log-level", "debug",
		}
	}
	env := hostEnv(home)

	alpha := startSDKClient(t, "alpha", env, agent("alpha")...)
	checkInitialize(t, "alpha", alpha.connect)
	checkTools(t, alpha)
	if got := alpha.call(t, "get_my_session_id", nil); !strings.Contains(got, "alpha") {
		t.Errorf("alpha: get_my_session_id = %q, want it to name alpha", got)
	}

	beta := startSDKClient(t, "beta", env, agent("beta")...)
	checkInitialize(t, "beta", beta.connect)

	// Once alpha sees beta on the roster, beta counts as live.
	alpha.callUntil(t, "discover", nil, "beta", deliveryTimeout)
	sent := alpha.call(t, "send_message", map[string]any{"to": "self", "session": "beta", "text": "hello from alpha"})
	if !strings.Contains(sent, "queued for self (beta)") || !strings.Contains(sent, "delivering") {
		t.Errorf("alpha: send_message = %q, want it to contain %q and %q", sent, "queued for self (beta)", "delivering")
	}
	m := msgIDRE.FindStringSubmatch(sent)
	if m == nil {
		t.Fatalf("alpha: send_message = %q, want a (msg_id ...)", sent)
	}
	msgID := m[1]
	// alpha stays up until its outbox has handed the message to the bus.
	alpha.callUntil(t, "message_status", map[string]any{"msg_id": msgID}, "bus_accepted", deliveryTimeout)

	got := beta.callUntil(t, "receive_messages", nil, "hello from alpha", deliveryTimeout)
	rc := parseReceipt(t, got)
	if rc.MsgID != msgID {
		t.Errorf("beta: receipt %v, want msg_id %s", rc, msgID)
	}
	ack := beta.call(t, "acknowledge_messages", map[string]any{"messages": []any{rc}})
	if !strings.HasPrefix(ack, "Acknowledged 1 ") {
		t.Errorf("beta: acknowledge_messages = %q, want it to start with %q", ack, "Acknowledged 1 ")
	}
	if again := beta.call(t, "receive_messages", nil); !strings.HasPrefix(again, "No unread messages") {
		t.Errorf("beta: receive_messages after the acknowledgement = %q, want %q first", again, "No unread messages")
	}
	status := beta.call(t, "message_status", map[string]any{"msg_id": msgID})
	if !strings.Contains(status, "[receiver_acknowledged] Receipt: ") {
		t.Errorf("beta: message_status = %q, want the receipt in state receiver_acknowledged", status)
	}

	// Bad arguments are a JSON-RPC error, not a tool result: -32602 for
	// what the tool's schema refuses, with the server's own wording (so the
	// SDK did not make it up), and -32603 with "invalid params:" for a
	// mistake only the handler can see.
	r := beta.do(t, 0, map[string]any{"op": "call", "name": "receive_messages", "args": map[string]any{"limit": 0}})
	if r.OK || r.Error == nil || r.Error.Code == nil || *r.Error.Code != -32602 ||
		!strings.Contains(r.Error.Message, "invalid params: receive_messages: limit: minimum: got 0, want 1") {
		t.Errorf("beta: receive_messages with limit 0: %s, want the JSON-RPC error -32602 naming the limit", r.describe())
	}
	r = beta.do(t, 0, map[string]any{"op": "call", "name": "send_message", "args": map[string]any{"to": "nobody", "text": "x"}})
	if r.OK || r.Error == nil || r.Error.Code == nil || *r.Error.Code != -32603 ||
		!strings.Contains(r.Error.Message, `invalid params: unknown peer "nobody"`) {
		t.Errorf("beta: send_message to an unknown peer: %s, want the JSON-RPC error -32603 naming the peer", r.describe())
	}

	// The SDK closes stdin, then sends SIGTERM after 2 s: a server that
	// takes that long ignored the end of its input.
	for _, c := range []*sdkClient{beta, alpha} {
		d := c.close(t)
		if d >= 2*time.Second {
			t.Errorf("%s: the server took %v to exit after its stdin closed", c.p.name, d)
		}
		t.Logf("%s: the server exited %v after its stdin closed", c.p.name, d)
	}
}

// checkInitialize checks what the server said in its initialize result.
func checkInitialize(t *testing.T, name string, c connectInfo) {
	t.Helper()
	if c.ServerInfo.Name != "interlink-mcp" {
		t.Errorf("%s: serverInfo.name = %q, want interlink-mcp", name, c.ServerInfo.Name)
	}
	if _, ok := c.Capabilities["tools"]; !ok {
		t.Errorf("%s: capabilities %v lack tools", name, c.Capabilities)
	}
	var experimental map[string]json.RawMessage
	if err := json.Unmarshal(c.Capabilities["experimental"], &experimental); err != nil {
		t.Errorf("%s: capabilities.experimental: %v", name, err)
	}
	if _, ok := experimental["claude/channel"]; !ok {
		t.Errorf("%s: capabilities.experimental = %v, want claude/channel", name, experimental)
	}
	if n := len(c.Instructions); n == 0 || n >= maxInstructions {
		t.Errorf("%s: instructions are %d bytes, want 1 to %d", name, n, maxInstructions-1)
	}
}

// checkTools checks that tools/list has every tool of [wantTools], each with
// a description and an object input schema.
func checkTools(t *testing.T, c *sdkClient) {
	t.Helper()
	r := c.do(t, 0, map[string]any{"op": "listTools"})
	if !r.OK {
		t.Fatalf("%s: tools/list: %s", c.p.name, r.describe())
	}
	var names []string
	for _, tool := range r.Tools {
		names = append(names, tool.Name)
		var schema struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(tool.InputSchema, &schema); err != nil || schema.Type != "object" {
			t.Errorf("%s: tool %s: input schema %s, want an object schema", c.p.name, tool.Name, tool.InputSchema)
		}
		if tool.Description == "" {
			t.Errorf("%s: tool %s has no description", c.p.name, tool.Name)
		}
	}
	for _, want := range wantTools {
		if !slices.Contains(names, want) {
			t.Errorf("%s: tools/list %v lacks %s", c.p.name, names, want)
		}
	}
}

// parseReceipt returns the receipt of the one message rendered in text, from
// its "[<state>] Receipt: {json}" line.
func parseReceipt(t *testing.T, text string) receipt.Line {
	t.Helper()
	receipts := testutil.Receipts(t, text)
	if len(receipts) != 1 {
		t.Fatalf("want one receipt in %q, found %d", text, len(receipts))
	}
	return receipts[0]
}
