package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/relay"
)

// runTurnProcess runs interlink-mcp turn for session under state with the prompt
// hook's input holding prompt, and returns its stderr. It fails the test
// when turn exits other than 0 or prints on stdout.
func runTurnProcess(t testing.TB, state, session, prompt string) string {
	t.Helper()
	input, err := json.Marshal(map[string]any{"session_id": session, "hook_event_name": "UserPromptSubmit", "prompt": prompt})
	if err != nil {
		t.Fatal(err)
	}
	return runTurnInput(t, state, string(input))
}

// runTurnInput runs interlink-mcp turn under state with input on stdin.
func runTurnInput(t testing.TB, state, input string) string {
	t.Helper()
	cmd := exec.Command("interlink-mcp", "turn", "--state-dir", state)
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || stdout.Len() != 0 {
		t.Fatalf("interlink-mcp turn: %v, stdout %q, stderr %q", err, stdout.String(), stderr.String())
	}
	return stderr.String()
}

// claudeWakePrompt is the prompt Claude Code 2.1.332 gives its
// UserPromptSubmit hook for the turn an asyncRewake Stop hook starts: the
// hook's stderr after a task notification.
func claudeWakePrompt(stderr string) string {
	return "<task-notification>\n<summary>Stop hook feedback</summary>\n</task-notification>\n<system-reminder>\n" +
		"Stop hook blocking error from command \"Stop\": " + stderr + "\n</system-reminder>"
}

// A peer paused for waking the session too often wakes it again after
// interlink-mcp turn, the prompt hook, runs for a prompt the operator
// typed.
func TestTurnHookResumesAPausedPeer(t *testing.T) {
	url := bustest.Start(t, nil)
	alice, bob := newAgentFiles(t), newAgentFiles(t)
	alice.admit(t, "bob", bob)
	bob.admit(t, "alice", alice)
	a := launchMCP(t, alice.env(url, "INTERLINK_SESSION=a1", "INTERLINK_WAKE_BUDGET=1/1h"))
	a.initialize()
	b := launchMCP(t, bob.env(url, "INTERLINK_SESSION=b1"))
	b.initialize()
	b.waitText("discover", nil, "→ a1")
	b.ok("send_message", map[string]any{"to": "alice", "session": "a1", "text": "one wake-up is all it takes"})
	// The first notice about bob's message is alice's one wake-up; it
	// pauses bob.
	a.waitText("list_peers", nil, "wake-ups paused since")

	if stderr := runTurnProcess(t, alice.state, "a1", "go on"); stderr != "" {
		t.Errorf("interlink-mcp turn: stderr %q", stderr)
	}
	if got := a.ok("list_peers", nil); strings.Contains(got, "paused") {
		t.Errorf("bob still paused after the operator's turn:\n%s", got)
	}
}

// Every turn that interlink or Claude Code starts by itself runs the
// prompt hook too, and none of them is the operator's: the listener's
// wake-up with an inbox notice and the pause notice it caused, a pairing
// notice, the listener's renewal, a background task that ended, and hook
// input without a prompt all leave the budgets as they are. The prompt of
// each is what the listener printed, bare and as Claude Code wraps it.
func TestTurnHookIgnoresTurnsTheOperatorDidNotType(t *testing.T) {
	url := bustest.Start(t, nil)
	alice, bob := newAgentFiles(t), newAgentFiles(t)
	bob.admit(t, "alice", alice)
	srv := launchMCP(t, bob.env(url, "INTERLINK_SESSION=b1", "INTERLINK_WAKE_BUDGET=1/1h"))
	srv.initialize()
	turnFile := filepath.Join(bob.state, "turn", "b1")
	listen := func(what string, args ...string) string {
		t.Helper()
		r := runWaitProcess(t, bob.env(url), "", append([]string{"--session", "b1"}, args...)...)
		if r.code != 2 {
			t.Fatalf("wait for %s: %+v", what, r)
		}
		return r.stderr
	}
	noTurn := func(what, prompt string) {
		t.Helper()
		runTurnProcess(t, bob.state, "b1", prompt)
		if _, err := os.Stat(turnFile); !os.IsNotExist(err) {
			t.Errorf("the prompt of %s recorded the operator's turn (%v); prompt:\n%s", what, err, prompt)
			os.Remove(turnFile) // so that the next case is judged alone
		}
	}

	// alice's message: the notice is bob's one wake-up from alice, which
	// pauses her, with a pause notice.
	sendSigned(t, url, alice, "a1", bob, bob.pubkey()+"#b1", "hello")
	srv.waitText("list_peers", nil, "wake-ups paused since")
	var wake string
	waitFor(t, "the notice and the pause notice", func() bool {
		wake += listen("the notice")
		return strings.Contains(wake, "receive_messages(") && strings.Contains(wake, "are paused")
	})
	noTurn("the wake-up with a notice", wake)
	noTurn("the wake-up with a notice, as Claude Code gives it", claudeWakePrompt(wake))

	// A stranger knocks: a pairing notice.
	knock(t, url, newAgentFiles(t), bob, bob.pubkey()+"#b1")
	pairing := listen("the pairing notice")
	if !strings.Contains(pairing, "Pairing request") {
		t.Fatalf("the listener printed %q, want the pairing notice", pairing)
	}
	noTurn("the wake-up with a pairing notice", pairing)
	noTurn("the wake-up with a pairing notice, as Claude Code gives it", claudeWakePrompt(pairing))

	renewal := listen("the renewal", "--renew-after-secs", "1")
	noTurn("the listener's renewal", renewal)
	noTurn("the listener's renewal, as Claude Code gives it", claudeWakePrompt(renewal))

	noTurn("a background task's end", "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n"+
		"<summary>Background command \"build\" completed (exit code 0)</summary>\n</task-notification>")

	if stderr := runTurnInput(t, bob.state, `{"session_id":"b1","hook_event_name":"Stop"}`); !strings.Contains(stderr, "no prompt") {
		t.Errorf("hook input without a prompt: stderr %q, want it to say there is no prompt", stderr)
	}
	if _, err := os.Stat(turnFile); !os.IsNotExist(err) {
		t.Fatalf("hook input without a prompt recorded the operator's turn (%v)", err)
	}
	if got := srv.ok("list_peers", nil); !strings.Contains(got, "paused") {
		t.Errorf("alice no longer paused, though the operator typed nothing:\n%s", got)
	}
}

// knock posts a pairing request from the stranger f to route rt.
func knock(t testing.TB, url string, f, to *agentFiles, rt string) {
	t.Helper()
	m := identity.Message{From: f.pubkey(), To: to.pubkey(), Text: "someone", TS: identity.Millis(time.Now()),
		MsgID: fmt.Sprintf("%032x", time.Now().UnixNano()), Kind: identity.KindPairRequest, ReplyTo: f.pubkey() + "#p1"}
	if err := f.signer.SignMessage(&m); err != nil {
		t.Fatal(err)
	}
	p, _ := m.MarshalJSON()
	if err := relay.New(url, nil).Send(t.Context(), rt, p); err != nil {
		t.Fatal(err)
	}
}
