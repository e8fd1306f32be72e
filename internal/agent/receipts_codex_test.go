//go:build unix

package agent_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/e2e"
	"github.com/interlink-go/interlink/internal/host"
)

// A notice codex queue did not take, handed to Codex later with
// failed_deliveries retry, surfaces its messages for their sender as a
// first handoff that worked does; while it waits, the sender hears only
// that it is stored.
func TestReceiptSurfacedFollowsARetriedCodexHandoff(t *testing.T) {
	const thread = "01900000-1234-7000-8000-123456789abc"
	// The stand-in for codex fails while a file beside it exists.
	dir := t.TempDir()
	bin, failing := filepath.Join(dir, "codex"), filepath.Join(dir, "codex.fail")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n[ -e \"$0.fail\" ] && exit 1\nexit 0\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(failing, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	url := agenttest.StartBus(t)
	alice, bob := agenttest.Pair(t)
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)
	b := agenttest.Start(t, bob, "", []string{url}, &agenttest.Options{Edit: func(c *agent.Config) {
		c.Host, c.Session, c.CodexBin = host.Codex, "", bin
		c.Timing.QueuePause = 1
	}})
	b.OK("bind_codex_session", map[string]any{"thread_id": thread})
	agenttest.OnRoster(t, url, alice.Key(), "a1")
	agenttest.OnRoster(t, url, bob.Key(), thread)

	id := agenttest.MsgID(t, a.OK("send_message", map[string]any{"to": "bob", "text": "wake codex later"}))
	var failed []struct{ ID string }
	agenttest.Eventually(t, "the notice saved for failed_deliveries", func() bool {
		failed = nil
		_ = json.Unmarshal([]byte(b.OK("failed_deliveries", map[string]any{"action": "list"})), &failed)
		return len(failed) == 1
	})
	// waitStage fails should surfaced come first.
	waitStage(t, a, id, e2e.Stored)

	if err := os.Remove(failing); err != nil {
		t.Fatal(err)
	}
	b.OK("failed_deliveries", map[string]any{"action": "retry", "id": failed[0].ID})
	waitStage(t, a, id, e2e.Surfaced)
}
