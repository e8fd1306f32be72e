//go:build hosttest

package hosttest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/budget"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/receipt"
	"github.com/interlink-go/interlink/internal/testutil"
)

// testWakeBudget is the wake-up budget of the exchange tests: small, so
// that two sessions answering each other reach it within seconds.
const (
	testWakeBudget = "3/10m"
	testWakes      = 3
)

// exchangeTimeout bounds an exchange between two sessions up to their
// pauses: a few wake-ups each, a few seconds apiece.
const exchangeTimeout = 3 * time.Minute

// pauseSign is a phrase of the pause notice (agent.PauseText).
const pauseSign = "are paused: its messages woke this session"

// tally is what one session's conversation shows of its wake-ups.
type tally struct {
	notices []string // the ids of the distinct inbox notices
	pauses  int      // pause notices
}

// add counts the texts of one request's conversation: each notice id
// once, and the pause notices of the request that shows the most.
func (t *tally) add(texts []string) {
	pauses := 0
	for _, text := range texts {
		for _, m := range noticeIDRE.FindAllStringSubmatch(text, -1) {
			if !slices.Contains(t.notices, m[1]) {
				t.notices = append(t.notices, m[1])
			}
		}
		pauses += strings.Count(text, pauseSign)
	}
	t.pauses = max(t.pauses, pauses)
}

// stopped reports whether the session got its pause notice.
func (t tally) stopped() bool { return t.pauses > 0 }

// userTexts returns the texts of the user messages of a Messages request.
func (r *messagesRequest) userTexts() []string {
	var texts []string
	for _, m := range r.Messages {
		if m.Role == "user" {
			texts = append(texts, m.text())
		}
	}
	return texts
}

// claudeTally returns what the requests to a session's fake model show of
// its wake-ups.
func claudeTally(m *fakeModel) (tally, <-chan struct{}) {
	reqs, changed := m.snapshot()
	var t tally
	for _, r := range reqs {
		if r.Messages != nil {
			t.add(r.Messages.userTexts())
		}
	}
	return t, changed
}

// budgetPlugin writes the Claude Code plugin with interlink-mcp setup
// claude, with the wake-up budget wake for its server and, when renew is
// not empty, --renew-after-secs renew for its Stop-hook listener.
func budgetPlugin(t *testing.T, home, wake, renew string) string {
	t.Helper()
	dir := setupPlugin(t, home)
	edit := func(name string, change func(map[string]any)) {
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatal(err)
		}
		change(v)
		if data, err = json.MarshalIndent(v, "", "  "); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit(".mcp.json", func(v map[string]any) {
		server := v["mcpServers"].(map[string]any)["interlink"].(map[string]any)
		server["env"].(map[string]any)["INTERLINK_WAKE_BUDGET"] = wake
	})
	if renew != "" {
		edit(filepath.Join("hooks", "hooks.json"), func(v map[string]any) {
			stop := v["hooks"].(map[string]any)["Stop"].([]any)[0].(map[string]any)["hooks"].([]any)[0].(map[string]any)
			stop["command"] = stop["command"].(string) + " --renew-after-secs " + renew
		})
	}
	return dir
}

// claudeAnswersPeer returns the rules of a fake model whose session always
// answers the session peer of the same identity: it fetches the messages
// an inbox notice announces, acknowledges them and sends peer a reply. The
// prompt "Start the exchange." makes it write to peer first.
func claudeAnswersPeer(peer string) []modelRule {
	recv, ack, send := pluginTool("receive_messages"), pluginTool("acknowledge_messages"), pluginTool("send_message")
	write := modelReply{Tool: send, Input: map[string]any{"to": "self", "session": peer, "text": "over to you"}}
	start := func(r *messagesRequest) (modelReply, bool) {
		last := r.last()
		if _, ok := r.lastToolResult(); ok || last.Role != "user" || !strings.Contains(last.text(), "Start the exchange.") {
			return modelReply{}, false
		}
		return write, true
	}
	receive, acknowledge := fetchNotices(recv), acknowledgeFetched(recv, ack)
	reply := func(r *messagesRequest) (modelReply, bool) {
		res, ok := r.lastToolResult()
		if !ok || res.Name != ack || res.IsError {
			return modelReply{}, false
		}
		return write, true
	}
	return []modelRule{start, receive, acknowledge, reply}
}

// pausedPeers returns the names of the peers whose wake-ups are paused in
// session of the identity in keyFile, under state.
func pausedPeers(t testing.TB, state, keyFile, session string) []string {
	t.Helper()
	signer, err := identity.LoadKeyFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	wake, err := budget.ParseLimit(testWakeBudget)
	if err != nil {
		t.Fatal(err)
	}
	b, err := budget.Open(state, signer.Public(), session, &budget.Options{Wake: wake})
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.Status()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range st {
		if s.Paused {
			names = append(names, s.Peer.Name)
		}
	}
	return names
}

// TestClaudeWakeBudgetStopsAnExchange runs two stream-json Claude Code
// sessions of one identity with the plugin from interlink-mcp setup
// claude and a wake-up budget of three. Their fake models always answer
// each other, so each wake-up leads to the next. Every wake-up turn runs
// the plugin's UserPromptSubmit hook, with the listener's output as its
// prompt; since none of them is the operator's, the budget is spent: each
// session is woken three times, gets one pause notice, and the exchange
// stops. Then the operator types a prompt in one session, which lifts its
// pause: the message that waited wakes it again. The other session, whose
// operator typed nothing, stays paused.
func TestClaudeWakeBudgetStopsAnExchange(t *testing.T) {
	bin := claudeCLI(t)
	home := t.TempDir()
	w := newWorld(t, home)
	plugin := budgetPlugin(t, home, testWakeBudget, "")
	state := filepath.Join(home, ".local", "state", "interlink")
	sessions := []string{newUUID(t), newUUID(t)}

	recv, ack, send := pluginTool("receive_messages"), pluginTool("acknowledge_messages"), pluginTool("send_message")
	var models []*fakeModel
	var claudes []*claudeSession
	for i, session := range sessions {
		m := newFakeModel(t, claudeAnswersPeer(sessions[1-i])...)
		h := newClaudeHost(t, bin, home, m.url, w.serverEnv()...)
		s := h.startSession(t, "--print", "--input-format", "stream-json", "--output-format", "stream-json",
			"--verbose", "--session-id", session, "--no-session-persistence", "--plugin-dir", plugin,
			"--model", "claude-sonnet-4-6", "--tools", "", "--allowedTools", recv+","+ack+","+send)
		s.send(t, "Reply OK.")
		if r := s.nextResult(t, claudeTurnTimeout); r.IsError || r.SessionID != session {
			t.Fatalf("session %d: first turn: %+v", i, r)
		}
		models, claudes = append(models, m), append(claudes, s)
	}
	observer := startSDKClient(t, "observer", hostEnv(home), w.serverArgv(t, "observer")...)
	for _, session := range sessions {
		observer.callUntil(t, "discover", nil, session, deliveryTimeout)
	}

	began := time.Now()
	claudes[0].send(t, "Start the exchange.")
	tallies := make([]tally, 2)
	deadline := time.After(exchangeTimeout)
	for {
		var changed [2]<-chan struct{}
		for i, m := range models {
			tallies[i], changed[i] = claudeTally(m)
			if n := len(tallies[i].notices); n > testWakes {
				t.Fatalf("session %d was woken %d times by its peer, more than the wake-up budget of %d; "+
					"the wake-up turns restarted the budget", i, n, testWakes)
			}
		}
		if tallies[0].stopped() && tallies[1].stopped() {
			break
		}
		select {
		case <-changed[0]:
		case <-changed[1]:
		case <-claudes[0].p.done:
			t.Fatalf("session 0 exited (%v)", claudes[0].p.err)
		case <-claudes[1].p.done:
			t.Fatalf("session 1 exited (%v)", claudes[1].p.err)
		case <-deadline:
			t.Fatalf("within %v: session 0 woken %d times, %d pause notices; session 1 woken %d times, %d pause notices",
				exchangeTimeout, len(tallies[0].notices), tallies[0].pauses, len(tallies[1].notices), tallies[1].pauses)
		}
	}
	t.Logf("both sessions paused %v after the exchange began", time.Since(began).Round(time.Millisecond))
	for i, tl := range tallies {
		if len(tl.notices) != testWakes || tl.pauses != 1 {
			t.Errorf("session %d: woken %d times with %d pause notices, want %d and 1", i, len(tl.notices), tl.pauses, testWakes)
		}
		if got := pausedPeers(t, state, w.key, sessions[i]); !slices.Equal(got, []string{"self"}) {
			t.Errorf("session %d: paused peers %v, want [self]", i, got)
		}
	}

	// The last reply of session 0 waits unread in session 1. The operator
	// of session 1 types a prompt: the pause lifts, and that message wakes
	// the session.
	typed := time.Now()
	claudes[1].send(t, "Carry on.")
	woken := models[1].waitMessages(t, wakeTimeout+10*time.Second, claudes[1].p.done, "with an inbox notice after the typed prompt",
		func(r *messagesRequest) bool {
			var tl tally
			tl.add(r.userTexts())
			return len(tl.notices) > testWakes
		})
	t.Logf("session 1 woken again %v after the typed prompt", time.Since(typed).Round(time.Millisecond))
	texts := woken.Messages.userTexts()
	at := slices.IndexFunc(texts, func(s string) bool { return strings.Contains(s, "Carry on.") })
	if at < 0 || !noticeIDRE.MatchString(strings.Join(texts[at+1:], "\n")) {
		t.Errorf("the new wake-up does not follow the typed prompt in session 1's conversation")
	}
	models[1].waitMessages(t, claudeTurnTimeout, claudes[1].p.done, "with the result of "+send+" after the typed prompt",
		func(r *messagesRequest) bool {
			res, ok := r.lastToolResult()
			return ok && res.Name == send && slices.ContainsFunc(r.userTexts(), func(s string) bool { return strings.Contains(s, "Carry on.") })
		})
	if got := pausedPeers(t, state, w.key, sessions[1]); len(got) != 0 {
		t.Errorf("session 1: paused peers %v after the operator's prompt, want none", got)
	}
	if got := pausedPeers(t, state, w.key, sessions[0]); !slices.Equal(got, []string{"self"}) {
		t.Errorf("session 0: paused peers %v, want [self]: its operator typed nothing", got)
	}
}

// TestClaudeTurnsTheOperatorDidNotTypeKeepThePause runs a stream-json
// Claude Code session with the plugin, whose listener renews every five
// seconds, in which a peer's wake-ups are paused. Two kinds of turn that
// Claude Code starts by itself run the plugin's UserPromptSubmit hook, and
// neither lifts the pause: the end of a background command the model
// started, and the listener's renewal.
func TestClaudeTurnsTheOperatorDidNotTypeKeepThePause(t *testing.T) {
	bin := claudeCLI(t)
	home := t.TempDir()
	w := newWorld(t, home)
	plugin := budgetPlugin(t, home, testWakeBudget, "5")
	state := filepath.Join(home, ".local", "state", "interlink")
	session := newUUID(t)
	signer, err := identity.LoadKeyFile(w.key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := budget.Open(state, signer.Public(), session, &budget.Options{Wake: budget.Limit{N: 1, Per: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	chatty := budget.Peer{Key: testutil.Signer(t, 7).Public(), Name: "chatty"}
	pause := func() {
		t.Helper()
		// A wake-up more than the budget of one pauses chatty; while it is
		// paused, nothing is counted.
		if _, err := b.Woke(t.Context(), []budget.Peer{chatty}); err != nil {
			t.Fatal(err)
		}
		if p, err := b.Paused(); err != nil || !p[chatty.Key] {
			t.Fatalf("chatty not paused: %v", err)
		}
	}
	stillPaused := func(what string) {
		t.Helper()
		if p, err := b.Paused(); err != nil || !p[chatty.Key] {
			t.Errorf("the turn of %s lifted chatty's pause (%v)", what, err)
		}
	}

	// The model starts a background command that ends when the test
	// creates the file go.
	goFile := filepath.Join(home, "go")
	background := func(r *messagesRequest) (modelReply, bool) {
		if _, ok := r.lastToolResult(); ok || !strings.Contains(r.last().text(), "Start the background job.") {
			return modelReply{}, false
		}
		return modelReply{Tool: "Bash", Input: map[string]any{
			"command":           "for i in $(seq 600); do [ -e " + shellQuote(goFile) + " ] && exit 0; sleep 0.1; done; exit 1",
			"run_in_background": true, "description": "wait for go",
		}}, true
	}
	model := newFakeModel(t, background)
	h := newClaudeHost(t, bin, home, model.url, w.serverEnv()...)
	s := h.startSession(t, "--print", "--input-format", "stream-json", "--output-format", "stream-json",
		"--verbose", "--session-id", session, "--no-session-persistence", "--plugin-dir", plugin,
		"--model", "claude-sonnet-4-6", "--tools", "Bash", "--allowedTools", "Bash")
	s.send(t, "Start the background job.")
	if r := s.nextResult(t, claudeTurnTimeout); r.IsError {
		t.Fatalf("first turn: %+v", r)
	}
	if _, ok := model.waitMessages(t, startTimeout, s.p.done, "with the background command's start", func(r *messagesRequest) bool {
		res, ok := r.lastToolResult()
		return ok && res.Name == "Bash" && !res.IsError
	}).Messages.lastToolResult(); !ok {
		t.Fatal("no result of the background command's start")
	}
	// The operator's prompt is recorded; the pause comes after it. The
	// background command ends at once, long before the listener's first
	// renewal.
	pause()
	since := len(mustSnapshot(model))
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Claude Code runs the UserPromptSubmit hook before it asks the model,
	// so once the model has the turn's prompt, the hook has run.
	waitRequests(t, model, s.p.done, since, 1, "turns of the background command's end", func(r *messagesRequest) bool {
		return strings.Contains(r.last().text(), `Background command "wait for go" completed`)
	})
	stillPaused("the background command's end")

	// The second renewal after the pause is a turn that began after it.
	pause()
	waitRequests(t, model, s.p.done, len(mustSnapshot(model)), 2, "renewals after the pause", func(r *messagesRequest) bool {
		return strings.Contains(r.last().text(), "[interlink listener renewal]")
	})
	stillPaused("the listener's renewal")
}

// mustSnapshot returns the requests m has recorded so far.
func mustSnapshot(m *fakeModel) []*modelRequest {
	reqs, _ := m.snapshot()
	return reqs
}

// waitRequests waits up to claudeTurnTimeout until n of the Messages
// requests that m recorded from position since on match, and fails the
// test if they do not, or if done is closed first.
func waitRequests(t testing.TB, m *fakeModel, done <-chan struct{}, since, n int, what string, match func(*messagesRequest) bool) {
	t.Helper()
	deadline := time.After(claudeTurnTimeout)
	for {
		reqs, changed := m.snapshot()
		var found []string
		for _, r := range reqs[min(since, len(reqs)):] {
			if r.Messages != nil && match(r.Messages) {
				found = append(found, r.Messages.last().text())
			}
		}
		if len(found) >= n {
			for _, text := range found {
				t.Logf("the model's prompt in one of the %s:\n%s", what, abbreviate(text, 1500))
			}
			return
		}
		select {
		case <-changed:
		case <-done:
			t.Fatalf("hosttest: the session exited before %d %s", n, what)
		case <-deadline:
			t.Fatalf("hosttest: %d of %d %s within %v", len(found), n, what, claudeTurnTimeout)
		}
	}
}

// turnItems returns the input items after the last user message: what
// happened in the current turn so far.
func (r *responsesRequest) turnItems() []responsesItem {
	for i := len(r.Input) - 1; i >= 0; i-- {
		if it := r.Input[i]; it.Type == "message" && it.Role == "user" {
			return r.Input[i+1:]
		}
	}
	return r.Input
}

// lastOutput returns the name of the tool whose output is the last input
// item, and the output, if the last item is one.
func (r *responsesRequest) lastOutput() (name, output string, ok bool) {
	if len(r.Input) == 0 {
		return "", "", false
	}
	last := r.Input[len(r.Input)-1]
	if last.Type != "function_call_output" {
		return "", "", false
	}
	return r.calls()[last.CallID], last.text(), true
}

// codexAnswersPeer returns the rules of a fake model whose threads always
// answer each other: in a turn that an inbox notice started, the model
// first calls bind_codex_session itself with a prompt and operator_turn,
// as a model talked into restarting its budgets would, then fetches the
// messages, acknowledges them and sends the other thread a reply. The
// prompt "Start the exchange." makes it write to the other thread first.
// peer returns the other thread of a thread.
func codexAnswersPeer(peer func(thread string) string) []codexRule {
	write := func(r *responsesRequest) codexReply {
		return codexReply{Tool: "send_message", Args: map[string]any{"to": "self", "session": peer(r.Thread), "text": "over to you"}}
	}
	lastUser := func(r *responsesRequest) string {
		texts := r.userTexts()
		if len(texts) == 0 {
			return ""
		}
		return texts[len(texts)-1]
	}
	start := func(r *responsesRequest) (codexReply, bool) {
		if len(r.turnItems()) > 0 || !strings.Contains(lastUser(r), "Start the exchange.") {
			return codexReply{}, false
		}
		return write(r), true
	}
	rebind := func(r *responsesRequest) (codexReply, bool) {
		if len(r.turnItems()) > 0 || noticeIDRE.FindStringSubmatch(lastUser(r)) == nil {
			return codexReply{}, false
		}
		return codexReply{Tool: "bind_codex_session", Args: map[string]any{
			"thread_id": r.Thread, "prompt": "Carry on.", "operator_turn": true}}, true
	}
	receive := func(r *responsesRequest) (codexReply, bool) {
		name, _, ok := r.lastOutput()
		m := noticeIDRE.FindStringSubmatch(lastUser(r))
		if !ok || name != "bind_codex_session" || m == nil {
			return codexReply{}, false
		}
		return codexReply{Tool: "receive_messages", Args: map[string]any{"notification_id": m[1]}}, true
	}
	acknowledge := func(r *responsesRequest) (codexReply, bool) {
		name, out, ok := r.lastOutput()
		if !ok || name != "receive_messages" {
			return codexReply{}, false
		}
		receipts, err := receipt.Scan(out)
		if err != nil || len(receipts) == 0 {
			return codexReply{}, false
		}
		return codexReply{Tool: "acknowledge_messages", Args: map[string]any{"messages": receipts}}, true
	}
	reply := func(r *responsesRequest) (codexReply, bool) {
		if name, _, ok := r.lastOutput(); !ok || name != "acknowledge_messages" {
			return codexReply{}, false
		}
		return write(r), true
	}
	return []codexRule{start, rebind, receive, acknowledge, reply}
}

// codexTally returns what the requests for thread show of its wake-ups.
func codexTally(m *codexModel, thread string) (tally, <-chan struct{}) {
	reqs, changed := m.snapshot()
	var t tally
	for _, r := range reqs {
		if r.Responses != nil && r.Responses.Thread == thread {
			t.add(r.Responses.userTexts())
		}
	}
	return t, changed
}

// TestCodexWakeBudgetStopsAnExchange runs two threads of one identity in
// Codex's shared daemon, with the hooks of interlink-mcp setup codex
// trusted and a wake-up budget of three. Their fake model always answers
// the other thread, so each notice that codex queue hands over starts a
// turn that wakes the other thread; in each such turn the model also calls
// bind_codex_session itself with a prompt and operator_turn. Every one of
// these turns runs the UserPromptSubmit hook with the queued text as its
// prompt, and none is the operator's: each thread is woken three times,
// gets one pause notice, and the exchange stops. Then the operator starts
// a turn in one thread, which lifts its pause: the message that waited
// wakes it again, while the other thread stays paused.
func TestCodexWakeBudgetStopsAnExchange(t *testing.T) {
	home := daemonHome(t)
	bin := codexCLI(t)
	e := newCodexEnv(t, home)
	var (
		mu      sync.Mutex
		threads []string
	)
	peer := func(thread string) string {
		mu.Lock()
		defer mu.Unlock()
		for i, th := range threads {
			if th == thread {
				return threads[1-i]
			}
		}
		return ""
	}
	model := newCodexModel(t, codexAnswersPeer(peer)...)
	h := newCodexHost(t, bin, home, model.url, e.serverEnv("INTERLINK_CODEX_BIN="+bin, "INTERLINK_WAKE_BUDGET="+testWakeBudget)...)
	hooks := h.appServerHooks(t)
	saveTrust(t, h.config, hooks)
	t.Cleanup(func() { h.stopDaemon(t) })
	h.run(t, codexDaemonTimeout, "app-server", "daemon", "start")
	s := newAppServer(t, startWebSocketRPC(t, "codex app-server proxy", h.command("app-server", "proxy")))

	turnEnds := func(thread string, n int) func(json.RawMessage) bool {
		seen := 0
		return func(p json.RawMessage) bool {
			if strings.Contains(string(p), thread) {
				seen++
			}
			return seen == n
		}
	}
	for range 2 {
		thread := s.startThread(t, h.dir)
		s.mustCall(t, codexTurnTimeout, "mcpServerStatus/list", map[string]any{"threadId": thread, "serverName": "interlink"}, nil)
		s.startTurn(t, thread, "Reply OK.")
		s.waitNotification(t, codexTurnTimeout, "turn/completed", "the first turn of "+thread, turnEnds(thread, 1))
		if got, want := s.mustToolCall(t, thread, "get_my_session_id", nil), `{"session_id":"`+thread+`"}`; got != want {
			t.Fatalf("get_my_session_id = %q, want %q", got, want)
		}
		mu.Lock()
		threads = append(threads, thread)
		mu.Unlock()
	}

	began := time.Now()
	s.startTurn(t, threads[0], "Start the exchange.")
	tallies := make([]tally, 2)
	deadline := time.After(exchangeTimeout)
	for {
		var changed <-chan struct{}
		for i, thread := range threads {
			tallies[i], changed = codexTally(model, thread)
			if n := len(tallies[i].notices); n > testWakes {
				t.Fatalf("thread %d was woken %d times by its peer, more than the wake-up budget of %d; "+
					"the turns of queued notices restarted the budget", i, n, testWakes)
			}
		}
		if tallies[0].stopped() && tallies[1].stopped() {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("within %v: thread 0 woken %d times, %d pause notices; thread 1 woken %d times, %d pause notices\n%s",
				exchangeTimeout, len(tallies[0].notices), tallies[0].pauses, len(tallies[1].notices), tallies[1].pauses, model.summary())
		}
	}
	t.Logf("both threads paused %v after the exchange began", time.Since(began).Round(time.Millisecond))
	for i, tl := range tallies {
		if len(tl.notices) != testWakes || tl.pauses != 1 {
			t.Errorf("thread %d: woken %d times with %d pause notices, want %d and 1", i, len(tl.notices), tl.pauses, testWakes)
		}
		if got := pausedPeers(t, e.state, e.key, threads[i]); !slices.Equal(got, []string{"self"}) {
			t.Errorf("thread %d: paused peers %v, want [self]", i, got)
		}
	}
	// The last reply of thread 0 waits unread in thread 1. The operator of
	// thread 1 starts a turn: the pause lifts, and that message wakes the
	// thread.
	typed := time.Now()
	s.startTurn(t, threads[1], "Carry on.")
	r := model.waitResponses(t, codexWakeTimeout+10*time.Second, "with an inbox notice after the typed prompt", func(r *responsesRequest) bool {
		if r.Thread != threads[1] {
			return false
		}
		var tl tally
		tl.add(r.userTexts())
		return len(tl.notices) > testWakes
	})
	t.Logf("thread 1 woken again %v after the typed prompt", time.Since(typed).Round(time.Millisecond))
	texts := r.Responses.userTexts()
	at := slices.IndexFunc(texts, func(s string) bool { return strings.Contains(s, "Carry on.") })
	if at < 0 || !noticeIDRE.MatchString(strings.Join(texts[at+1:], "\n")) {
		t.Errorf("the new wake-up does not follow the typed prompt in thread 1's conversation")
	}
	model.waitResponses(t, codexTurnTimeout, "with thread 1's reply after the typed prompt", func(r *responsesRequest) bool {
		name, _, ok := r.lastOutput()
		return r.Thread == threads[1] && ok && name == "send_message" &&
			slices.ContainsFunc(r.userTexts(), func(s string) bool { return strings.Contains(s, "Carry on.") })
	})
	if got := pausedPeers(t, e.state, e.key, threads[1]); len(got) != 0 {
		t.Errorf("thread 1: paused peers %v after the operator's prompt, want none", got)
	}
	if got := pausedPeers(t, e.state, e.key, threads[0]); !slices.Equal(got, []string{"self"}) {
		t.Errorf("thread 0: paused peers %v, want [self]: its operator typed nothing", got)
	}
	t.Logf("fake model requests:\n%s", model.summary())
}
