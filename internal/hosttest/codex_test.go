//go:build hosttest

package hosttest

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/receipt"
	"github.com/interlink-go/interlink/internal/testutil"
)

// codexTurnTimeout bounds one turn of Codex against the fake model,
// starting the MCP servers and running the hooks included.
const codexTurnTimeout = 60 * time.Second

// codexWakeTimeout bounds the time from a peer's send to the notice's
// handoff: delivery through the bus, then the server's notice loop, which
// runs every second.
const codexWakeTimeout = 20 * time.Second

// codexEnv is a Codex test's world, with a state folder for its interlink
// servers, whose settings go into their env table in config.toml.
type codexEnv struct {
	*world
	state string
}

// newCodexEnv starts a bus and creates an identity in home.
func newCodexEnv(t *testing.T, home string) *codexEnv {
	t.Helper()
	return &codexEnv{world: newWorld(t, home), state: filepath.Join(home, "interlink-state")}
}

// serverEnv returns the interlink server's environment, extra last.
func (e *codexEnv) serverEnv(extra ...string) []string {
	return e.world.serverEnv(append([]string{"INTERLINK_STATE_DIR=" + e.state}, extra...)...)
}

// startPeer starts interlink-mcp in Claude mode with the same key as the
// session session, driven by the test over stdio.
func (e *codexEnv) startPeer(t *testing.T, session string) *rpcConn {
	t.Helper()
	argv := e.serverArgv(t, session, "--state-dir", e.state)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = hostEnv(e.home)
	peer := startRPC(t, session, cmd)
	peer.mcpInitialize(t)
	return peer
}

// wantHooks is the hooks setup codex declares, by the app server's event
// name, with their matchers.
var wantHooks = map[string]string{
	"sessionStart":     "",
	"userPromptSubmit": "",
	"preToolUse":       "^mcp__interlink__",
	"stop":             "",
}

// checkHooks checks that hooks are exactly the four interlink binding
// hooks, with trust status trust.
func checkHooks(t testing.TB, hooks []codexHook, trust string) {
	t.Helper()
	events := make(map[string]string)
	for _, h := range hooks {
		t.Logf("hook %s: event %s, handler %s, %s/%s, matcher %q, %s, %s", h.Key, h.EventName, h.HandlerType,
			h.Server, h.Tool, h.Matcher, h.TrustStatus, h.CurrentHash)
		if h.Server != "interlink" || h.Tool != "bind_codex_session" {
			t.Errorf("hook %s calls %s/%s, want interlink/bind_codex_session", h.Key, h.Server, h.Tool)
		}
		if h.TrustStatus != trust {
			t.Errorf("hook %s is %s, want %s", h.Key, h.TrustStatus, trust)
		}
		if _, dup := events[h.EventName]; dup {
			t.Errorf("two hooks for %s", h.EventName)
		}
		events[h.EventName] = h.Matcher
	}
	if !maps.Equal(events, wantHooks) {
		t.Errorf("hooks by event: %v, want %v", events, wantHooks)
	}
}

// interlinkServers returns the pids of the interlink-mcp processes that
// descend from pid.
func interlinkServers(t testing.TB, pid int) []int {
	t.Helper()
	procs, err := descendants(pid)
	if err != nil {
		t.Fatalf("hosttest: %v", err)
	}
	var pids []int
	for _, p := range procs {
		exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(p.pid), "exe"))
		if err == nil && filepath.Base(exe) == "interlink-mcp" {
			pids = append(pids, p.pid)
		}
	}
	return pids
}

// TestCodexAppServer drives codex app-server over stdio as a client such
// as an IDE would: it lists the four binding hooks that setup codex
// declares, trusts them for the invocation, starts two threads and a turn
// in each, and checks that each thread's interlink server was bound to
// the thread by the hooks. A second session of the same identity then
// sends the first thread a message: the server hands a notice, without
// the body, to codex queue (a stub here), and the thread fetches and
// acknowledges the message through its tools.
func TestCodexAppServer(t *testing.T) {
	bin := codexCLI(t)
	home := t.TempDir()
	e := newCodexEnv(t, home)
	stub, runs := queueStub(t, home)
	model := newCodexModel(t)
	h := newCodexHost(t, bin, home, model.url, e.serverEnv("INTERLINK_CODEX_BIN="+stub)...)

	// Listing the hooks starts no server; they are not trusted yet.
	hooks := h.appServerHooks(t)

	began := time.Now()
	s := h.startAppServer(t, "codex app-server", trustFlags(hooks)...)
	checkHooks(t, s.hooks(t, h.dir), "trusted")

	var threads []string
	for i := range 2 {
		thread := s.startThread(t, h.dir)
		if len(thread) != 36 {
			t.Fatalf("thread/start: thread id %q is not a UUID", thread)
		}
		threads = append(threads, thread)

		// mcpServerStatus/list waits for the thread's servers to start.
		var status struct {
			Data []struct {
				Name  string                     `json:"name"`
				Tools map[string]json.RawMessage `json:"tools"`
			} `json:"data"`
		}
		s.mustCall(t, codexTurnTimeout, "mcpServerStatus/list", map[string]any{"threadId": thread, "serverName": "interlink"}, &status)
		var tools []string
		for _, d := range status.Data {
			if d.Name == "interlink" {
				for name := range d.Tools {
					tools = append(tools, name)
				}
			}
		}
		slices.Sort(tools)
		t.Logf("thread %d (%s): interlink tools %v", i, thread, tools)
		for _, want := range []string{"bind_codex_session", "get_my_session_id", "receive_messages",
			"acknowledge_messages", "failed_deliveries", "send_message", "set_summary"} {
			if !slices.Contains(tools, want) {
				t.Errorf("thread %d: interlink tools %v lack %s", i, tools, want)
			}
		}

		// Unbound, the server has no session id to give.
		if r, rerr := s.toolCall(t, thread, "get_my_session_id", nil); rerr == nil && !r.IsError {
			t.Errorf("thread %d: get_my_session_id before any turn: %q, want an error", i, r.text())
		} else {
			t.Logf("thread %d: get_my_session_id before any turn: error %v, result %q", i, rerr, r.text())
		}

		s.startTurn(t, thread, "Reply OK.")
		s.waitNotification(t, codexTurnTimeout, "turn/completed", "turn/completed for "+thread, func(p json.RawMessage) bool {
			var n struct {
				ThreadID string `json:"threadId"`
			}
			return json.Unmarshal(p, &n) == nil && n.ThreadID == thread
		})
		got := s.mustToolCall(t, thread, "get_my_session_id", nil)
		var id struct {
			SessionID string `json:"session_id"`
		}
		if err := json.Unmarshal([]byte(got), &id); err != nil || id.SessionID != thread {
			t.Errorf("thread %d: get_my_session_id = %q, want {\"session_id\":%q}", i, got, thread)
		}
	}
	t.Logf("two threads bound %v after the trusted app server started", time.Since(began).Round(time.Millisecond))

	// A bound server keeps its thread: binding it again to the same one
	// is a no-op, to another is refused.
	if got := s.mustToolCall(t, threads[0], "bind_codex_session", map[string]any{"thread_id": threads[0]}); got != "{}" {
		t.Errorf("bind_codex_session to its own thread = %q, want {}", got)
	}
	if r, rerr := s.toolCall(t, threads[0], "bind_codex_session", map[string]any{"thread_id": threads[1]}); rerr == nil && !r.IsError {
		t.Errorf("bind_codex_session to the other thread: %q, want an error", r.text())
	} else {
		t.Logf("bind_codex_session to the other thread: error %v, result %q", rerr, r.text())
	}

	// Which hooks ran, per thread.
	ran := make(map[string][]string)
	for _, n := range s.hookRuns() {
		t.Logf("hook/completed: thread %s, %s %s: %s %s", n.ThreadID, n.Run.EventName, n.Run.HandlerType, n.Run.Status, n.Run.Entries)
		if n.Run.Status != "completed" {
			t.Errorf("hook %s of thread %s: status %s, want completed", n.Run.EventName, n.ThreadID, n.Run.Status)
		}
		ran[n.ThreadID] = append(ran[n.ThreadID], n.Run.EventName)
	}
	for i, thread := range threads {
		// No tool call, so PreToolUse has nothing to match.
		if want := []string{"sessionStart", "userPromptSubmit", "stop"}; !slices.Equal(ran[thread], want) {
			t.Errorf("thread %d: hooks ran for %v, want %v", i, ran[thread], want)
		}
	}
	servers := interlinkServers(t, s.p.cmd.Process.Pid)
	t.Logf("interlink-mcp processes under the app server: %v", servers)
	if len(servers) != len(threads) {
		t.Errorf("%d interlink-mcp processes for %d threads, want one each", len(servers), len(threads))
	}

	// Another session of the same identity writes to thread 0.
	peer := e.startPeer(t, "peer-a")
	body := "hosttest body " + newUUID(t)
	peer.mcpCall(t, "send_message", map[string]any{"to": "self", "session": threads[0], "text": body})

	var notice string
	testutil.Eventually(t, codexWakeTimeout, "a codex queue run", func() bool {
		for name, argv := range stubRuns(t, runs) {
			if !strings.HasPrefix(name, "run-") {
				continue
			}
			t.Logf("stub: %q", argv)
			if len(argv) != 5 || argv[1] != "--thread" || argv[2] != threads[0] || argv[3] != "--message" {
				t.Fatalf("stub ran with %q, want queue --thread %s --message <notice>", argv, threads[0])
			}
			notice = argv[4]
		}
		return notice != ""
	})
	if strings.Contains(notice, body) {
		t.Errorf("the notice carries the body:\n%s", notice)
	}
	_, rest, ok := strings.Cut(notice, `notification_id="`)
	noticeID, _, _ := strings.Cut(rest, `"`)
	if !ok || noticeID == "" || !strings.Contains(notice, "[Interlink inbox notice]") {
		t.Fatalf("notice without a tag or notification id:\n%s", notice)
	}

	got := s.mustToolCall(t, threads[0], "receive_messages", map[string]any{"notification_id": noticeID})
	if !strings.Contains(got, body) {
		t.Fatalf("receive_messages does not hold the body %q", body)
	}
	receipts := testutil.Receipts(t, got)
	if len(receipts) != 1 {
		t.Fatalf("receive_messages: %d receipts, want 1", len(receipts))
	}
	if got := s.mustToolCall(t, threads[0], "acknowledge_messages", map[string]any{"messages": receipts}); !strings.HasPrefix(got, "Acknowledged 1 ") {
		t.Errorf("acknowledge_messages = %q, want it to start with Acknowledged 1 and a space", got)
	}
	if got := s.mustToolCall(t, threads[0], "receive_messages", nil); !strings.HasPrefix(got, "No unread messages") {
		t.Errorf("receive_messages after the acknowledgement = %q, want No unread messages", got)
	}
	// Thread 1 has nothing.
	if got := s.mustToolCall(t, threads[1], "receive_messages", nil); !strings.HasPrefix(got, "No unread messages") {
		t.Errorf("receive_messages of thread 1 = %q, want No unread messages", got)
	}
	for name, argv := range stubRuns(t, runs) {
		if !strings.HasPrefix(name, "run-") {
			t.Errorf("interlink-mcp ran the codex executable with %q", argv)
		}
	}
	t.Logf("fake model requests:\n%s", model.summary())
}

// appServerHooks lists the hooks of h's configuration for the folder dir
// with a short-lived app server.
func (h *codexHost) appServerHooks(t testing.TB) []codexHook {
	t.Helper()
	s := h.startAppServer(t, "codex app-server (hooks/list)")
	defer s.close(t)
	hooks := s.hooks(t, h.dir)
	checkHooks(t, hooks, "untrusted")
	if t.Failed() {
		t.FailNow()
	}
	return hooks
}

// TestCodexExecSendMessage runs codex exec with the configuration of setup
// codex and its hooks trusted for the run. The model calls send_message to
// another session of the same identity, then message_status until the bus
// has the message, and the other session receives the text.
func TestCodexExecSendMessage(t *testing.T) {
	bin := codexCLI(t)
	home := t.TempDir()
	e := newCodexEnv(t, home)
	stub, runs := queueStub(t, home)
	peer := e.startPeer(t, "peer-b")

	text := "hello from codex " + newUUID(t)
	send := codexCallOnce("send_message", map[string]any{"to": "self", "session": "peer-b", "text": text})
	// codex exec stops the server right after the turn, and what is still
	// waiting then goes out only with the next server of the session: the
	// model waits for the bus to take the message, as an operator would.
	untilAccepted := func(r *responsesRequest) (codexReply, bool) {
		sent := r.outputsOf("send_message")
		if len(sent) != 1 {
			return codexReply{}, false
		}
		m := msgIDRE.FindStringSubmatch(sent[0])
		if m == nil {
			return codexReply{}, false
		}
		for _, out := range r.outputsOf("message_status") {
			if strings.Contains(out, "bus_accepted") {
				return codexReply{}, false
			}
		}
		return codexReply{Tool: "message_status", Args: map[string]any{"msg_id": m[1]}}, true
	}
	model := newCodexModel(t, send, untilAccepted)
	h := newCodexHost(t, bin, home, model.url, e.serverEnv("INTERLINK_CODEX_BIN="+stub)...)
	hooks := h.appServerHooks(t)

	args := append([]string{"exec", "--skip-git-repo-check", "--json", "-s", "read-only", "--strict-config"}, trustFlags(hooks)...)
	cmd := h.command(append(args, "Say hello to the session peer-b.")...)
	var stdout testutil.LockedBuffer
	cmd.Stdout = &stdout
	began := time.Now()
	p := start(t, "codex exec", cmd)
	killDetached(t, p)
	if err := p.wait(t, codexTurnTimeout); err != nil {
		t.Fatalf("codex exec: %v\nstdout:\n%s", err, stdout.String())
	}
	t.Logf("codex exec: done after %v", time.Since(began).Round(time.Millisecond))

	// The events: the MCP tool calls and their results, the final message.
	var calls []string
	final := ""
	for line := range strings.Lines(stdout.String()) {
		var ev struct {
			Type string `json:"type"`
			Item struct {
				Type   string          `json:"type"`
				Text   string          `json:"text"`
				Server string          `json:"server"`
				Tool   string          `json:"tool"`
				Status string          `json:"status"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			} `json:"item"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Errorf("codex exec: stdout line %q is not JSON: %v", line, err)
			continue
		}
		if ev.Type != "item.completed" {
			continue
		}
		t.Logf("codex exec: %s", codexShorten(strings.TrimSpace(line), 600))
		switch ev.Item.Type {
		case "mcp_tool_call":
			calls = append(calls, ev.Item.Server+"/"+ev.Item.Tool+" "+ev.Item.Status)
		case "agent_message":
			final = ev.Item.Text
		}
	}
	if len(calls) < 2 || calls[0] != "interlink/send_message completed" {
		t.Errorf("codex exec: MCP calls %q, want interlink/send_message completed, then message_status", calls)
	}
	if final != "OK" {
		t.Errorf("codex exec: final message %q, want OK", final)
	}

	// The other session has the text.
	testutil.EventuallyNil(t, codexWakeTimeout, "the message at peer-b", func() error {
		if got := peer.mcpCall(t, "receive_messages", nil); !strings.Contains(got, text) {
			return fmt.Errorf("no message %q; fake model requests:\n%s", text, model.summary())
		}
		return nil
	})
	if names := stubRuns(t, runs); len(names) > 0 {
		t.Errorf("interlink-mcp ran the codex executable: %q", names)
	}
	reqs, _ := model.snapshot()
	for _, r := range reqs {
		if r.Responses != nil {
			t.Logf("fake model: %s %s originator %q, tools %v", r.Method, r.Path, r.Header.Get("originator"), r.Responses.toolNames())
			break
		}
	}
	t.Logf("fake model requests:\n%s", model.summary())
}

// TestCodexQueueDaemon runs the real codex queue. It starts Codex's shared
// app-server daemon in the test's Codex home, with the binding hooks
// trusted in config.toml as the /hooks review would save them, and loads a
// thread in it through codex app-server proxy. When another session of the
// same identity sends the thread a message, the thread's interlink server
// hands the notice to codex queue, and the daemon starts a turn whose
// input holds the notice.
func TestCodexQueueDaemon(t *testing.T) {
	home := daemonHome(t)
	bin := codexCLI(t)
	e := newCodexEnv(t, home)
	// The model does what the notice asks: it fetches the messages with
	// the notice's id, then acknowledges them.
	fetch := func(r *responsesRequest) (codexReply, bool) {
		texts := r.userTexts()
		if len(texts) == 0 || len(r.outputsOf("receive_messages")) > 0 {
			return codexReply{}, false
		}
		_, rest, ok := strings.Cut(texts[len(texts)-1], `notification_id="`)
		id, _, _ := strings.Cut(rest, `"`)
		if !ok || id == "" {
			return codexReply{}, false
		}
		return codexReply{Tool: "receive_messages", Args: map[string]any{"notification_id": id}}, true
	}
	acknowledge := func(r *responsesRequest) (codexReply, bool) {
		fetched := r.outputsOf("receive_messages")
		if len(fetched) != 1 || len(r.outputsOf("acknowledge_messages")) > 0 {
			return codexReply{}, false
		}
		receipts, err := receipt.Scan(fetched[0])
		if err != nil || len(receipts) == 0 {
			return codexReply{}, false
		}
		return codexReply{Tool: "acknowledge_messages", Args: map[string]any{"messages": receipts}}, true
	}
	// The model holds its answer to the notice turn until the sender's
	// view of the message has been checked.
	fetch, noticed, answer := hold(t, fetch, 2*deliveryTimeout)
	model := newCodexModel(t, fetch, acknowledge)
	h := newCodexHost(t, bin, home, model.url, e.serverEnv("INTERLINK_CODEX_BIN="+bin)...)
	hooks := h.appServerHooks(t)
	saveTrust(t, h.config, hooks)

	// The daemon and its helper leave the process group of the command
	// that starts them; they are found by their CODEX_HOME.
	t.Cleanup(func() { h.stopDaemon(t) })
	began := time.Now()
	h.run(t, codexDaemonTimeout, "app-server", "daemon", "start")
	t.Logf("codex app-server daemon start took %v", time.Since(began).Round(time.Millisecond))
	t.Logf("codex app-server daemon version: %s", strings.TrimSpace(h.run(t, codexCommandTimeout, "app-server", "daemon", "version")))
	for _, p := range codexHomeProcs(t, h.codexHome) {
		t.Logf("daemon process %d: %q", p.pid, p.argv)
	}

	s := newAppServer(t, startWebSocketRPC(t, "codex app-server proxy", h.command("app-server", "proxy")))
	checkHooks(t, s.hooks(t, h.dir), "trusted")

	thread := s.startThread(t, h.dir)
	s.mustCall(t, codexTurnTimeout, "mcpServerStatus/list", map[string]any{"threadId": thread, "serverName": "interlink"}, nil)
	s.startTurn(t, thread, "Reply OK.")
	s.waitNotification(t, codexTurnTimeout, "turn/completed", "the first turn", func(json.RawMessage) bool { return true })
	got := s.mustToolCall(t, thread, "get_my_session_id", nil)
	if want := `{"session_id":"` + thread + `"}`; got != want {
		t.Fatalf("get_my_session_id = %q, want %q", got, want)
	}

	peer := e.startPeer(t, "peer-a")
	body := "hosttest body " + newUUID(t)
	sent := time.Now()
	sentText := peer.mcpCall(t, "send_message", map[string]any{"to": "self", "session": thread, "text": body})
	_, rest, _ := strings.Cut(sentText, "(msg_id ")
	msgID, _, _ := strings.Cut(rest, ")")
	// codex queue took the notice, which started the turn: the sender
	// hears that the message was surfaced before the model fetched it.
	await(t, noticed, codexTurnTimeout, "notice turn reaching the model")
	var status string
	testutil.Poll(deliveryTimeout, func() bool {
		status = peer.mcpCall(t, "message_status", map[string]any{"msg_id": msgID})
		return strings.Contains(status, "receipt: receiver_surfaced")
	})
	if !strings.Contains(status, "receipt: receiver_surfaced") {
		t.Errorf("message_status while the model holds the notice: %q, want receiver_surfaced", status)
	}
	answer()
	r := model.waitResponses(t, codexTurnTimeout, "with the notice", func(r *responsesRequest) bool {
		texts := r.userTexts()
		return len(texts) > 0 && strings.Contains(texts[len(texts)-1], "[Interlink inbox notice]")
	})
	t.Logf("the notice reached the model %v after the send", time.Since(sent).Round(time.Millisecond))
	texts := r.Responses.userTexts()
	notice := texts[len(texts)-1]
	t.Logf("notice turn: thread-id header %q, user text:\n%s", r.Header.Get("thread-id"), notice)
	if strings.Contains(notice, body) {
		t.Errorf("the queued notice carries the body")
	}
	if got := r.Header.Get("thread-id"); got != "" && got != thread {
		t.Errorf("the notice turn is for thread %q, want %q", got, thread)
	}
	// The turn the notice started fetched the body and acknowledged it.
	r = model.waitResponses(t, codexTurnTimeout, "after acknowledge_messages", func(r *responsesRequest) bool {
		return len(r.outputsOf("acknowledge_messages")) > 0
	})
	if fetched := r.Responses.outputsOf("receive_messages"); !strings.Contains(fetched[0], body) {
		t.Errorf("receive_messages in the notice turn returned %q, want the body", fetched[0])
	}
	if acked := r.Responses.outputsOf("acknowledge_messages")[0]; !strings.Contains(acked, "Acknowledged 1 ") {
		t.Errorf("acknowledge_messages in the notice turn returned %q, want it to contain %q", acked, "Acknowledged 1 ")
	}
	turns := 0
	s.waitNotification(t, codexTurnTimeout, "turn/completed", "the end of the notice turn", func(p json.RawMessage) bool {
		if strings.Contains(string(p), thread) {
			turns++
		}
		return turns == 2
	})
	if got := s.mustToolCall(t, thread, "receive_messages", nil); !strings.HasPrefix(got, "No unread messages") {
		t.Errorf("receive_messages after the notice turn = %q, want No unread messages", got)
	}
	// The thread's server told the sender, in signed receipts, that the
	// model consumed the message.
	testutil.Poll(deliveryTimeout, func() bool {
		status = peer.mcpCall(t, "message_status", map[string]any{"msg_id": msgID})
		return strings.Contains(status, "receipt: receiver_acknowledged")
	})
	if !strings.Contains(status, "receipt: receiver_acknowledged") || !strings.Contains(status, "signed by self") {
		t.Errorf("message_status of the sent message: %q, want receiver_acknowledged signed by self", status)
	}
	var ran []string
	for _, n := range s.hookRuns() {
		ran = append(ran, n.Run.EventName+" "+n.Run.Status)
	}
	t.Logf("hooks that ran: %v", ran)
	// Without a failure to save, the thread has none.
	if got := s.mustToolCall(t, thread, "failed_deliveries", map[string]any{"action": "list"}); got != "[]" {
		t.Errorf("failed_deliveries list = %q, want []", got)
	}
	t.Logf("fake model requests:\n%s", model.summary())
	t.Logf("Codex home size: %d MB", dirSize(t, h.codexHome)>>20)
}
