//go:build hosttest

package hosttest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// newIdentity creates a key and an empty peers.json in home's
// configuration folder and returns their paths.
func newIdentity(t *testing.T, home string) (key, peers string) {
	t.Helper()
	conf := filepath.Join(home, ".config", "interlink")
	key = filepath.Join(conf, "id.key")
	keygen(t, home, key)
	peers = filepath.Join(conf, "peers.json")
	if err := os.WriteFile(peers, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return key, peers
}

// TestClaudeMCPAddList registers interlink-mcp with claude mcp add and
// checks that claude mcp list, which starts each server and initializes
// it, reports it connected, next to a server that cannot start.
func TestClaudeMCPAddList(t *testing.T) {
	bin := claudeCLI(t)
	home := t.TempDir()
	bus := startBus(t, home)
	key, peers := newIdentity(t, home)
	model := newFakeModel(t)
	h := newClaudeHost(t, bin, home, model.url)
	mcp := filepath.Join(binaries(t), "interlink-mcp")

	h.run(t, claudeCommandTimeout, "mcp", "add", "interlink", "-s", "user", "--",
		mcp, "--key", key, "--peers", peers, "--url", bus)
	// The same server with a key file that does not exist exits at once.
	h.run(t, claudeCommandTimeout, "mcp", "add", "broken", "-s", "user", "--",
		mcp, "--key", filepath.Join(home, "missing.key"), "--peers", peers, "--url", bus)

	out := h.run(t, claudeCommandTimeout, "mcp", "list")
	t.Logf("claude mcp list:\n%s", out)
	status := make(map[string]string)
	for line := range strings.Lines(out) {
		name, rest, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		// "<name>: <command line> - ✔ Connected"
		if i := strings.LastIndex(rest, " - "); i >= 0 {
			status[name] = strings.TrimSpace(rest[i+len(" - "):])
		}
	}
	if got := status["interlink"]; got != "✔ Connected" {
		t.Errorf("claude mcp list: interlink is %q, want %q", got, "✔ Connected")
	}
	if got := status["broken"]; got == "" || strings.Contains(got, "Connected") {
		t.Errorf("claude mcp list: broken is %q, want a failure", got)
	}
}

// pluginTool is the name Claude Code gives the tool name of the
// interlink server of the plugin interlink.
func pluginTool(name string) string {
	return "mcp__plugin_interlink_interlink__" + name
}

// setupPlugin writes the Claude Code plugin with interlink-mcp setup claude
// into a folder in home and returns the folder.
func setupPlugin(t *testing.T, home string) string {
	t.Helper()
	dir := filepath.Join(home, "plugin")
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binaries(t), "interlink-mcp"), "setup", "claude", "--dir", dir)
	cmd.Env = hostEnv(home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hosttest: interlink-mcp setup claude: %v\n%s", err, out)
	}
	t.Logf("interlink-mcp setup claude:\n%s", out)
	return dir
}

// TestClaudePrintSendMessage runs claude -p with the plugin from
// interlink-mcp setup claude. The model calls send_message to another
// session of the same identity, which then receives the text.
func TestClaudePrintSendMessage(t *testing.T) {
	bin := claudeCLI(t)
	home := t.TempDir()
	bus := startBus(t, home)
	key, peers := newIdentity(t, home)
	plugin := setupPlugin(t, home)
	mcp := filepath.Join(binaries(t), "interlink-mcp")

	peer := startSDKClient(t, "peer-b", hostEnv(home),
		mcp, "--key", key, "--peers", peers, "--url", bus, "--session", "peer-b", "--log-level", "debug")

	send := pluginTool("send_message")
	input := map[string]any{"to": "self", "session": "peer-b", "text": "hello from claude"}
	model := newFakeModel(t, callOnce("__send_message", input))
	h := newClaudeHost(t, bin, home, model.url,
		"INTERLINK_KEY="+key, "INTERLINK_PEERS="+peers, "INTERLINK_URL="+bus, "INTERLINK_LOG_LEVEL=debug")

	cmd := h.command("-p", "Say hello to the session peer-b.",
		"--plugin-dir", plugin, "--output-format", "json", "--no-session-persistence",
		"--model", "claude-sonnet-4-6", "--tools", "", "--allowedTools", send)
	var stdout lockedBuffer
	cmd.Stdout = &stdout
	began := time.Now()
	p := start(t, "claude -p", cmd)
	if err := p.wait(t, claudeTurnTimeout); err != nil {
		t.Fatalf("claude -p: %v\nstdout:\n%s", err, stdout.String())
	}
	t.Logf("claude -p ran for %v", time.Since(began).Round(time.Millisecond))
	t.Logf("claude -p stdout:\n%s", stdout.String())
	var result struct {
		Type    string `json:"type"`
		IsError bool   `json:"is_error"`
		Result  string `json:"result"`
	}
	if err := json.Unmarshal([]byte(stdout.String()), &result); err != nil {
		t.Fatalf("claude -p: stdout is not one JSON result: %v", err)
	}
	if result.Type != "result" || result.IsError || result.Result != "OK" {
		t.Errorf("claude -p: result %+v, want a successful result with the text OK", result)
	}

	model.waitMessages(t, 0, p.done, "offering "+send, func(r *messagesRequest) bool {
		return slices.Contains(r.toolNames(), send)
	})
	r := model.waitMessages(t, 0, p.done, "with the result of "+send, func(r *messagesRequest) bool {
		res, ok := r.lastToolResult()
		return ok && res.Name == send
	})
	res, _ := r.Messages.lastToolResult()
	if res.IsError || !strings.Contains(res.Text, "queued for self (peer-b)") {
		t.Errorf("%s result (is_error %v): %q, want it to contain %q", send, res.IsError, res.Text, "queued for self (peer-b)")
	}

	got := peer.callUntil(t, "receive_messages", nil, "hello from claude", deliveryTimeout)
	receipt := parseReceipt(t, got)
	if ack := peer.call(t, "acknowledge_messages", map[string]any{"messages": []any{receipt}}); !strings.HasPrefix(ack, "Acknowledged 1") {
		t.Errorf("peer-b: acknowledge_messages = %q, want it to start with %q", ack, "Acknowledged 1")
	}
}
