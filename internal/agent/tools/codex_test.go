package tools_test

import (
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/codex"
	"github.com/interlink-go/interlink/internal/host"
	"github.com/interlink-go/interlink/internal/protocol"
)

const (
	threadA = "01900000-1234-7000-8000-123456789abc"
	threadB = "01900000-1234-7000-8000-000000000def"
)

// codexHost starts the agent unbound, as the Codex host does.
func codexHost() *agenttest.Options {
	return &agenttest.Options{Edit: func(c *agent.Config) {
		c.Host = host.Codex
		c.Session = ""
	}}
}

// bind_codex_session binds a Codex agent to its thread once: the same
// thread again changes nothing, another is refused, and a Claude agent
// refuses the tool. A summary set before binding is announced after it.
func TestBindCodexSessionBindsOnce(t *testing.T) {
	url := agenttest.StartBus(t)
	me := agenttest.NewIdent(t)

	claude := agenttest.Start(t, me, "c1", []string{url}, nil)
	if got := claude.RPCErr("bind_codex_session", map[string]any{"thread_id": threadA}); !strings.Contains(got, "invalid params: not in Codex mode") {
		t.Errorf("bind in a Claude agent = %q", got)
	}

	n := agenttest.Start(t, me, "", []string{url}, codexHost())
	if got := n.OK("set_summary", map[string]any{"summary": "reviewing"}); !strings.Contains(got, "once this Codex session is bound") {
		t.Errorf("set_summary before binding = %q", got)
	}
	if got := n.RPCErr("bind_codex_session", map[string]any{"thread_id": "not-a-thread"}); !strings.Contains(got, "invalid params: ") || !strings.Contains(got, "UUID") {
		t.Errorf("bind to a malformed thread id = %q", got)
	}
	if got := n.OK("bind_codex_session", map[string]any{"thread_id": threadA}); got != "{}" {
		t.Errorf("bind = %q, want {}", got)
	}
	if got := n.OK("get_my_session_id", nil); got != `{"session_id":"`+threadA+`"}` {
		t.Errorf("get_my_session_id after binding = %s", got)
	}
	if got := n.OK("bind_codex_session", map[string]any{"thread_id": threadA}); got != "{}" {
		t.Errorf("binding again to the same thread = %q, want {}", got)
	}
	if got := n.RPCErr("bind_codex_session", map[string]any{"thread_id": threadB}); !strings.Contains(got, "already bound to another Codex thread") {
		t.Errorf("binding to another thread = %q", got)
	}
	agenttest.OnRoster(t, url, me.Key(), threadA)
	claude.WaitText("discover", map[string]any{"peer": me.Key()}, `"reviewing"`)
}

// failed_deliveries works in every host: a Claude agent of a session that a
// Codex process saved failures for lists, reads and discards them; only a
// retry needs Codex. A session that is no thread has none.
func TestFailedDeliveriesInTheClaudeHost(t *testing.T) {
	url := agenttest.StartBus(t)
	me := agenttest.NewIdent(t)
	root := t.TempDir()
	failed, err := codex.OpenFailed(root, me.Signer.Public(), threadA)
	if err != nil {
		t.Fatal(err)
	}
	id, err := failed.Save(codex.Entry{MsgID: "n1", Sender: protocol.SystemSender, Text: "the saved notice", Reason: "codex queue failed", Notice: true})
	if err != nil {
		t.Fatal(err)
	}
	n := agenttest.Start(t, me, threadA, []string{url}, &agenttest.Options{Root: root})
	if got := n.OK("failed_deliveries", map[string]any{"action": "list"}); !strings.Contains(got, `"id":"`+id+`"`) || !strings.Contains(got, `"bytes":16`) ||
		strings.Contains(got, "the saved notice") {
		t.Errorf("list = %s, want the entry without its text", got)
	}
	if got := n.OK("failed_deliveries", map[string]any{"action": "read", "id": id}); got != "the saved notice" {
		t.Errorf("read = %q", got)
	}
	if got := n.RPCErr("failed_deliveries", map[string]any{"action": "retry", "id": id}); !strings.Contains(got, "retry needs the Codex host") {
		t.Errorf("retry in the Claude host = %q", got)
	}
	if got := n.RPCErr("failed_deliveries", map[string]any{"action": "read"}); !strings.Contains(got, "invalid params: id is required for read") {
		t.Errorf("read without an id = %q", got)
	}
	if got := n.OK("failed_deliveries", map[string]any{"action": "discard", "id": id}); !strings.Contains(got, "discarded the saved entry "+id) {
		t.Errorf("discard = %q", got)
	}
	if got := n.RPCErr("failed_deliveries", map[string]any{"action": "read", "id": id}); !strings.Contains(got, "invalid params: unknown failure id") {
		t.Errorf("read after discard = %q", got)
	}

	plain := agenttest.Start(t, me, "s1", []string{url}, &agenttest.Options{Root: root})
	if got := plain.OK("failed_deliveries", map[string]any{"action": "list"}); got != "[]" {
		t.Errorf("list in a session that is no thread = %q", got)
	}
	if got := plain.RPCErr("failed_deliveries", map[string]any{"action": "retry", "id": "x"}); !strings.Contains(got, "retry needs the Codex host") {
		t.Errorf("retry in a session that is no thread = %q", got)
	}
}
