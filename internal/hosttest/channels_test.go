//go:build hosttest

package hosttest

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofrs/flock"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/mailbox"
)

// channelEntry is the --channels entry of the plugin from interlink-mcp
// setup claude when Claude Code loads it with --plugin-dir, which names
// its marketplace "inline".
const channelEntry = "plugin:interlink@inline"

// allowChannels writes Claude Code's cache of its feature flags in the
// configuration folder of home, and returns the variable that makes Claude
// Code read that cache while nonessential traffic is off.
//
// Claude Code 2.1.332 takes channel notifications only when the flag
// tengu_harbor is on, and in --print mode only from a plugin on the list
// that the flag tengu_harbor_ledger holds; both come from Anthropic's flag
// service, which a test has no access to. The cache stands in for that
// service, as the fake model stands in for the API: it turns channels on
// and lists the inline interlink plugin, and every other check Claude Code
// makes on a channel runs as it does for a user.
func allowChannels(t *testing.T, home string) string {
	t.Helper()
	const cache = `{"cachedGrowthBookFeatures":{"tengu_harbor":true,"tengu_harbor_ledger":[{"marketplace":"inline","plugin":"interlink"}]}}`
	if err := os.WriteFile(filepath.Join(home, ".claude-config", ".claude.json"), []byte(cache+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return "CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF=1"
}

// holdNotices takes the notifier lock of the mailbox of w's identity and
// session, so that no server of that session hands notices to its host,
// and returns the function that lets it go; cleanup lets it go too.
func holdNotices(t *testing.T, w *world, session string) (release func()) {
	t.Helper()
	signer, err := identity.LoadKeyFile(w.key)
	if err != nil {
		t.Fatal(err)
	}
	// hostEnv sets XDG_STATE_HOME, so the servers use this state root.
	mb, err := mailbox.Open(filepath.Join(w.home, ".local", "state", "interlink"), signer.Public(), session, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := mb.NotifierLockPath()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	lock := flock.New(path)
	if ok, err := lock.TryLock(); err != nil || !ok {
		t.Fatalf("hosttest: notifier lock %s: taken %v, %v", path, ok, err)
	}
	release = func() {
		if err := lock.Unlock(); err != nil {
			t.Errorf("hosttest: notifier lock %s: %v", path, err)
		}
	}
	t.Cleanup(func() {
		if lock.Locked() {
			release()
		}
	})
	return release
}

// logChannelDebug logs, when the test failed, the lines of Claude Code's
// debug log at path about its MCP connections and channels: the protocol
// revision of each connection, and whether channel notifications were
// registered and received.
func logChannelDebug(t *testing.T, path string) {
	if !t.Failed() {
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Logf("hosttest: Claude Code debug log: %v", err)
		return
	}
	var lines []string
	for line := range strings.Lines(string(data)) {
		if strings.Contains(line, "Channel notifications") || strings.Contains(line, "notifications/claude/channel") ||
			strings.Contains(line, "protocolEra") {
			lines = append(lines, abbreviate(line, 600))
		}
	}
	t.Logf("hosttest: Claude Code debug log, channel and connection lines:\n%s", strings.Join(lines, "\n"))
}

// TestClaudeChannelsSurfaced runs a stream-json Claude Code session with
// the plugin from interlink-mcp setup claude in channels mode
// (INTERLINK_CHANNELS=1, --channels), and follows a message from another
// session of the same identity through the stages its sender hears of.
//
// While the test holds the receiving session's notifier lock, no notice
// can be handed over: the sender hears receiver_stored, and no model
// request holds a channel message. Once it lets go, the server hands the
// notice to Claude Code as notifications/claude/channel; the model's
// request holding it as a channel message is held until the sender has
// heard receiver_surfaced and nothing further. The model then fetches and
// acknowledges the message, and the sender hears receiver_acknowledged.
func TestClaudeChannelsSurfaced(t *testing.T) {
	bin := claudeCLI(t)
	home := t.TempDir()
	w := newWorld(t, home)
	plugin := setupPlugin(t, home)
	session := newUUID(t)

	recv, ack := pluginTool("receive_messages"), pluginTool("acknowledge_messages")
	// The model holds its answer to the channel message until the
	// sender's view has been checked; the request is kept, since the fake
	// model records a request only once it has answered it.
	var held atomic.Pointer[messagesRequest]
	fetch := fetchNotices(recv)
	receive, noticed, answer := hold(t, func(r *messagesRequest) (modelReply, bool) {
		reply, ok := fetch(r)
		if ok {
			held.Store(r)
		}
		return reply, ok
	}, 2*deliveryTimeout)
	model := newFakeModel(t, receive, acknowledgeFetched(recv, ack))
	h := newClaudeHost(t, bin, home, model.url, w.serverEnv("INTERLINK_CHANNELS=1")...)
	h.env = append(h.env, allowChannels(t, home))
	releaseNotices := holdNotices(t, w, session)

	debug := filepath.Join(home, "claude-debug.txt")
	t.Cleanup(func() { logChannelDebug(t, debug) })

	began := time.Now()
	s := h.startSession(t, "--print", "--input-format", "stream-json", "--output-format", "stream-json",
		"--verbose", "--session-id", session, "--no-session-persistence", "--plugin-dir", plugin,
		"--channels", channelEntry, "--debug-file", debug,
		"--model", "claude-sonnet-4-6", "--tools", "", "--allowedTools", recv+","+ack)
	s.send(t, "Reply OK.")
	if r := s.nextResult(t, claudeTurnTimeout); r.IsError || r.Result != "OK" || r.SessionID != session {
		t.Fatalf("first turn: result %+v, want OK in session %s", r, session)
	}

	peer := startSDKClient(t, "peer-a", hostEnv(home), w.serverArgv(t, "peer-a")...)
	peer.callUntil(t, "discover", nil, session, deliveryTimeout)
	const body = "hello from peer-a over the channel"
	sentText := peer.call(t, "send_message", map[string]any{"to": "self", "session": session, "text": body})
	m := msgIDRE.FindStringSubmatch(sentText)
	if m == nil {
		t.Fatalf("send_message: %q names no msg_id", sentText)
	}
	msgID := m[1]

	// No notice can be handed over: the message is stored, not surfaced.
	st := peer.callUntil(t, "message_status", map[string]any{"msg_id": msgID}, "receipt: receiver_stored", deliveryTimeout)
	if strings.Contains(st, "receiver_surfaced") || strings.Contains(st, "receiver_acknowledged") {
		t.Errorf("message_status before any notice: %q, want receiver_stored", st)
	}
	reqs, _ := model.snapshot()
	for _, r := range reqs {
		if r.Messages != nil && strings.Contains(r.Messages.last().text(), "<channel") {
			t.Fatalf("a model request holds a channel message before any notice was handed over:\n%s", r.Messages.last().text())
		}
	}

	releaseNotices()
	await(t, noticed, wakeTimeout, "channel notice reaching the model")
	notice := held.Load().last().text()
	t.Logf("the channel turn's last message:\n%s", notice)
	for _, want := range []string{`<channel source="plugin:interlink:interlink"`, "[Interlink inbox notice]"} {
		if !strings.Contains(notice, want) {
			t.Errorf("the channel turn's last message lacks %q", want)
		}
	}
	if strings.Contains(notice, body) {
		t.Errorf("the channel turn's last message carries the peer's text")
	}
	// The model holds its answer: the notice was handed to the host and
	// reached the model, which has neither fetched nor acknowledged.
	st = peer.callUntil(t, "message_status", map[string]any{"msg_id": msgID}, "receipt: receiver_surfaced", deliveryTimeout)
	if strings.Contains(st, "receiver_acknowledged") {
		t.Errorf("message_status while the model holds the notice: %q, want receiver_surfaced", st)
	}
	answer()

	fetchedAndAcknowledged(t, model, s, recv, ack, body, "channel turn")
	st = peer.callUntil(t, "message_status", map[string]any{"msg_id": msgID}, "receipt: receiver_acknowledged", deliveryTimeout)
	if !strings.Contains(st, "signed by self") {
		t.Errorf("message_status of the sent message: %q, want the receipt signed by self", st)
	}
	t.Logf("done after %v", time.Since(began).Round(time.Millisecond))
}
