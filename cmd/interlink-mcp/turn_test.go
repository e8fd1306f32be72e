package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/bus/bustest"
)

// A peer paused for waking the session too often wakes it again after
// interlink-mcp turn, the prompt hook, runs for the session.
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

	turn, err := exec.LookPath("interlink-mcp")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(turn, "turn", "--session", "a1", "--state-dir", alice.state)
	cmd.Stdin = strings.NewReader(`{"hook_event_name":"UserPromptSubmit","prompt":"go on"}`)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
		t.Fatalf("interlink-mcp turn: %v, output %q", err, out)
	}
	if got := a.ok("list_peers", nil); strings.Contains(got, "paused") {
		t.Errorf("bob still paused after the operator's turn:\n%s", got)
	}
}
