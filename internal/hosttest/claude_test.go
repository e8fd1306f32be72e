//go:build hosttest

package hosttest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/budget"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/testutil"
)

// TestClaudeMCPAddList registers interlink-mcp with claude mcp add and
// checks that claude mcp list, which starts each server and initializes
// it, reports it connected, next to a server that cannot start.
func TestClaudeMCPAddList(t *testing.T) {
	bin := claudeCLI(t)
	home := t.TempDir()
	w := newWorld(t, home)
	model := newFakeModel(t)
	h := newClaudeHost(t, bin, home, model.url)
	mcp := filepath.Join(binaries(t), "interlink-mcp")

	h.run(t, claudeCommandTimeout, "mcp", "add", "interlink", "-s", "user", "--",
		mcp, "--key", w.key, "--peers", w.peers, "--url", w.bus)
	// The same server with a key file that does not exist exits at once.
	h.run(t, claudeCommandTimeout, "mcp", "add", "broken", "-s", "user", "--",
		mcp, "--key", filepath.Join(home, "missing.key"), "--peers", w.peers, "--url", w.bus)

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

// pluginTool returns the name under which Claude Code offers the model the
// tool name of the server interlink of the plugin interlink.
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
// session of the same identity, then message_status until the bus has the
// message, and the other session receives the text.
func TestClaudePrintSendMessage(t *testing.T) {
	bin := claudeCLI(t)
	home := t.TempDir()
	w := newWorld(t, home)
	plugin := setupPlugin(t, home)

	peer := startSDKClient(t, "peer-b", hostEnv(home), w.serverArgv(t, "peer-b")...)

	send, status := pluginTool("send_message"), pluginTool("message_status")
	input := map[string]any{"to": "self", "session": "peer-b", "text": "hello from claude"}
	// claude -p stops the server right after the last turn, and what is
	// still waiting then goes out only with the next server of the session:
	// the model asks message_status until the bus has taken the message, at
	// most maxStatusCalls times.
	const maxStatusCalls = 50
	untilAccepted := func(r *messagesRequest) (modelReply, bool) {
		res, ok := r.lastToolResult()
		switch {
		case !ok || res.IsError:
			return modelReply{}, false
		case res.Name == status && strings.Contains(res.Text, "bus_accepted"):
			return modelReply{}, false
		case res.Name != send && res.Name != status:
			return modelReply{}, false
		}
		var msgID string
		calls := 0
		for _, res := range r.toolResults() {
			if m := msgIDRE.FindStringSubmatch(res.Text); res.Name == send && m != nil {
				msgID = m[1]
			}
			if res.Name == status {
				calls++
			}
		}
		if msgID == "" || calls >= maxStatusCalls {
			return modelReply{}, false
		}
		return modelReply{Tool: status, Input: map[string]any{"msg_id": msgID}}, true
	}
	model := newFakeModel(t, callOnce("__send_message", input), untilAccepted)
	h := newClaudeHost(t, bin, home, model.url, w.serverEnv()...)

	cmd := h.command("-p", "Say hello to the session peer-b.",
		"--plugin-dir", plugin, "--output-format", "json", "--no-session-persistence",
		"--model", "claude-sonnet-4-6", "--tools", "", "--allowedTools", send+","+status)
	stdout := newLineQueue()
	cmd.Stdout = stdout
	began := time.Now()
	p := start(t, "claude -p", cmd)
	killDetached(t, p)
	// claude -p prints its result when the turn ends, then waits up to
	// 30 s for the plugin's Stop hook, a listener that would only end
	// with a message, and kills it: the test does not wait for that.
	line := readLine(t, p, stdout, claudeTurnTimeout)
	t.Logf("claude -p: result after %v", time.Since(began).Round(time.Millisecond))
	var result claudeResult
	if err := json.Unmarshal(line, &result); err != nil {
		t.Fatalf("claude -p: stdout %q is not a JSON result: %v", line, err)
	}
	if result.Type != "result" || result.IsError || result.Result != "OK" {
		t.Errorf("claude -p: result %s, want a successful result with the text OK", line)
	}

	r := model.waitMessages(t, startTimeout, p.done, "with the result of "+send, func(r *messagesRequest) bool {
		res, ok := r.lastToolResult()
		return ok && res.Name == send
	})
	names := r.Messages.toolNames()
	t.Logf("tools offered to the model: %v", names)
	if !slices.Contains(names, send) {
		t.Errorf("model request tools %v lack %s", names, send)
	}
	res, _ := r.Messages.lastToolResult()
	if res.IsError || !strings.Contains(res.Text, "queued for self (peer-b)") {
		t.Errorf("%s result (is_error %v): %q, want it to contain %q", send, res.IsError, res.Text, "queued for self (peer-b)")
	}
	model.waitMessages(t, startTimeout, p.done, "with a result of "+status+" saying bus_accepted", func(r *messagesRequest) bool {
		res, ok := r.lastToolResult()
		return ok && res.Name == status && !res.IsError && strings.Contains(res.Text, "bus_accepted")
	})

	got := peer.callUntil(t, "receive_messages", nil, "hello from claude", deliveryTimeout)
	receipt := parseReceipt(t, got)
	if ack := peer.call(t, "acknowledge_messages", map[string]any{"messages": []any{receipt}}); !strings.HasPrefix(ack, "Acknowledged 1 ") {
		t.Errorf("peer-b: acknowledge_messages = %q, want it to start with %q", ack, "Acknowledged 1 ")
	}
}

// TestClaudeStopHookWakes runs a stream-json Claude Code session with the
// plugin from interlink-mcp setup claude. After the first turn, another
// session of the same identity sends it a message; the plugin's Stop hook
// (interlink-mcp wait) wakes the session with the inbox notice, and the
// model receives and acknowledges the message.
func TestClaudeStopHookWakes(t *testing.T) {
	bin := claudeCLI(t)
	home := t.TempDir()
	w := newWorld(t, home)
	plugin := setupPlugin(t, home)
	session := newUUID(t)

	recv, ack := pluginTool("receive_messages"), pluginTool("acknowledge_messages")
	// Answer a notice with receive_messages, and its result with
	// acknowledge_messages.
	receive, acknowledge := fetchNotices(recv), acknowledgeFetched(recv, ack)
	// The model holds its answer to the notice until the sender's view
	// of the message has been checked.
	receive, noticed, answer := hold(t, receive, 2*deliveryTimeout)
	model := newFakeModel(t, receive, acknowledge)
	h := newClaudeHost(t, bin, home, model.url, w.serverEnv()...)

	began := time.Now()
	s := h.startSession(t, "--print", "--input-format", "stream-json", "--output-format", "stream-json",
		"--verbose", "--session-id", session, "--no-session-persistence", "--plugin-dir", plugin,
		"--model", "claude-sonnet-4-6", "--tools", "", "--allowedTools", recv+","+ack)
	s.send(t, "Reply OK.")
	if r := s.nextResult(t, claudeTurnTimeout); r.IsError || r.Result != "OK" || r.SessionID != session {
		t.Fatalf("first turn: result %+v, want OK in session %s", r, session)
	}
	t.Logf("first turn done after %v", time.Since(began).Round(time.Millisecond))

	peer := startSDKClient(t, "peer-a", hostEnv(home), w.serverArgv(t, "peer-a")...)
	// The Claude session's server took Claude's session id.
	peer.callUntil(t, "discover", nil, session, deliveryTimeout)
	const body = "hello from peer-a"
	sentText := peer.call(t, "send_message", map[string]any{"to": "self", "session": session, "text": body})
	sent := time.Now()
	_, rest, _ := strings.Cut(sentText, "(msg_id ")
	msgID, _, _ := strings.Cut(rest, ")")

	// A Stop-hook notice only asks the model to fetch: while the model
	// has the notice and has not fetched, the sender hears that the
	// message was stored, and not that it was surfaced.
	await(t, noticed, wakeTimeout, "inbox notice reaching the model")
	st := peer.callUntil(t, "message_status", map[string]any{"msg_id": msgID}, "receipt: receiver_stored", deliveryTimeout)
	if strings.Contains(st, "receiver_surfaced") || strings.Contains(st, "receiver_acknowledged") {
		t.Errorf("message_status before the model fetched: %q, want receiver_stored", st)
	}
	answer()
	wake := model.waitMessages(t, wakeTimeout, s.p.done, "with an inbox notice", func(r *messagesRequest) bool {
		return strings.Contains(r.last().text(), `receive_messages(notification_id="`)
	})
	t.Logf("woken %v after the send", time.Since(sent).Round(time.Millisecond))
	notice := wake.Messages.last().text()
	t.Logf("the wake-up turn's last message:\n%s", notice)
	if !strings.Contains(notice, "[Interlink inbox notice]") {
		t.Errorf("the wake-up turn's last message lacks %q:\n%s", "[Interlink inbox notice]", notice)
	}
	if strings.Contains(notice, body) {
		t.Errorf("the wake-up turn's last message carries the peer's text:\n%s", notice)
	}
	id := noticeIDRE.FindStringSubmatch(notice)[1]
	if wake.Reply.Tool != recv {
		t.Fatalf("the model answered the notice with %+v, want a call of %s", wake.Reply, recv)
	}

	fetched := fetchedAndAcknowledged(t, model, s, recv, ack, body, "wake-up turn")
	t.Logf("%s(notification_id=%q):\n%s", recv, id, fetched)
	// The Claude session's server told the sender, in signed receipts,
	// that the model consumed the message.
	st = peer.callUntil(t, "message_status", map[string]any{"msg_id": msgID}, "receipt: receiver_acknowledged", deliveryTimeout)
	if !strings.Contains(st, "signed by self") {
		t.Errorf("message_status of the sent message: %q, want the receipt signed by self", st)
	}
	t.Logf("done after %v", time.Since(began).Round(time.Millisecond))
}

// fetchedAndAcknowledged waits until the model has the result of its call
// of recv, which must hold body with its receipt line, then the result of
// its call of ack, which must acknowledge one message, then the end of
// the turn (named turn in failures), which must answer OK. It returns the
// text of recv's result.
func fetchedAndAcknowledged(t *testing.T, model *fakeModel, s *claudeSession, recv, ack, body, turn string) string {
	t.Helper()
	r := model.waitMessages(t, claudeTurnTimeout, s.p.done, "with the result of "+recv, func(r *messagesRequest) bool {
		res, ok := r.lastToolResult()
		return ok && res.Name == recv
	})
	fetched, _ := r.Messages.lastToolResult()
	if fetched.IsError || !strings.Contains(fetched.Text, body) || !strings.Contains(fetched.Text, "] Receipt: ") {
		t.Fatalf("%s result (is_error %v): %q, want the message %q with its receipt", recv, fetched.IsError, fetched.Text, body)
	}
	r = model.waitMessages(t, claudeTurnTimeout, s.p.done, "with the result of "+ack, func(r *messagesRequest) bool {
		res, ok := r.lastToolResult()
		return ok && res.Name == ack
	})
	got, _ := r.Messages.lastToolResult()
	if got.IsError || !strings.HasPrefix(got.Text, "Acknowledged 1 ") {
		t.Errorf("%s result (is_error %v): %q, want it to start with %q", ack, got.IsError, got.Text, "Acknowledged 1 ")
	}
	if r := s.nextResult(t, claudeTurnTimeout); r.IsError || r.Result != "OK" {
		t.Errorf("%s: result %+v, want OK", turn, r)
	}
	return fetched.Text
}

// TestClaudePromptHookResetsTheBudget runs claude -p with the plugin from
// interlink-mcp setup claude in a session where a peer has used up its
// wake-ups. The plugin's UserPromptSubmit hook (interlink-mcp turn) runs
// for the operator's prompt and records the turn, which lifts the pause.
func TestClaudePromptHookResetsTheBudget(t *testing.T) {
	bin := claudeCLI(t)
	home := t.TempDir()
	w := newWorld(t, home)
	plugin := setupPlugin(t, home)
	const session = "5f1c2e3a-0b4d-4c6e-8f7a-9b0c1d2e3f40"
	// hostEnv sets XDG_STATE_HOME, so the hooks use this state root.
	state := filepath.Join(home, ".local", "state", "interlink")
	signer, err := identity.LoadKeyFile(w.key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := budget.Open(state, signer.Public(), session, &budget.Options{Wake: budget.Limit{N: 1, Per: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	chatty := budget.Peer{Key: testutil.Signer(t, 7).Public(), Name: "chatty"}
	if paused, err := b.Woke(context.Background(), []budget.Peer{chatty}); err != nil || len(paused) != 1 {
		t.Fatalf("pausing the peer: %v, %v", paused, err)
	}

	model := newFakeModel(t)
	h := newClaudeHost(t, bin, home, model.url, w.serverEnv()...)
	began := time.Now()
	cmd := h.command("-p", "Carry on.", "--plugin-dir", plugin, "--session-id", session,
		"--output-format", "json", "--no-session-persistence", "--model", "claude-sonnet-4-6", "--tools", "")
	stdout := newLineQueue()
	cmd.Stdout = stdout
	p := start(t, "claude -p", cmd)
	killDetached(t, p)
	line := readLine(t, p, stdout, claudeTurnTimeout)
	var result claudeResult
	if err := json.Unmarshal(line, &result); err != nil || result.IsError {
		t.Fatalf("claude -p: %s (%v)", line, err)
	}

	data, err := os.ReadFile(filepath.Join(state, "turn", session))
	if err != nil {
		t.Fatalf("the prompt hook recorded no turn: %v", err)
	}
	ms, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || time.UnixMilli(ms).Before(began.Add(-time.Second)) {
		t.Errorf("turn file holds %q, want a time after the run began", data)
	}
	st, err := b.Status()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if s.Paused {
			t.Errorf("%s still paused after the operator's prompt", s.Peer.Name)
		}
	}
}
