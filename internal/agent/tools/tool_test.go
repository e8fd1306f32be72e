package tools_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/agent/tools"
)

// Until a Codex agent is bound to its thread, exactly the tools that
// declare that they need the session refuse, all with the same answer, and
// every other tool answers.
func TestToolsThatNeedTheSessionWaitForTheBinding(t *testing.T) {
	url := agenttest.StartBus(t)
	me, peer := agenttest.NewIdent(t), agenttest.NewIdent(t)
	n := agenttest.Start(t, me, "", []string{url}, codexHost())
	calls := map[string]map[string]any{
		"send_message":         {"to": "self", "text": "x"},
		"cancel_task":          {"to": "x", "task_id": "t"},
		"message_status":       {"msg_id": "m"},
		"receive_messages":     {},
		"read_message":         {"sender": "k", "msg_id": "m"},
		"acknowledge_messages": {"messages": []any{map[string]any{"sender": "k", "msg_id": "m"}}},
		"conversation_history": {"peer": "x"},
		"get_my_session_id":    {},
		"request_pair":         {"target": "x"},
		"accept_pair":          {"fingerprint": "x"},
		"failed_deliveries":    {"action": "list"},
		"list_pending":         {},
		"discover":             {},
		"set_summary":          {"summary": ""},
		"list_pair_requests":   {},
		"reject_pair":          {"fingerprint": "x"},
		"list_peers":           {},
		"add_peer":             {"petname": "p", "key": peer.Key()},
		"remove_peer":          {"petname": "p"},
	}
	needSession := []string{"accept_pair", "acknowledge_messages", "cancel_task", "conversation_history", "failed_deliveries",
		"get_my_session_id", "message_status", "read_message", "receive_messages", "request_pair", "send_message"}
	if listed := slices.Sorted(maps.Keys(n.A.Tools())); len(listed) != len(calls)+1 { // and bind_codex_session
		t.Fatalf("the server lists %d tools, the test knows %d: %v", len(listed), len(calls)+1, listed)
	}
	for _, name := range slices.Sorted(maps.Keys(calls)) {
		if !slices.Contains(needSession, name) {
			n.OK(name, calls[name])
			continue
		}
		if got := n.RPCErr(name, calls[name]); !strings.HasSuffix(got, tools.ErrNotBound.Error()) {
			t.Errorf("%s before binding = %q, want the answer %q", name, got, tools.ErrNotBound)
		}
	}
}
