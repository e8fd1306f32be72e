package tools_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/agent/tools"
)

// Every mistake a JSON Schema can express is answered with the JSON-RPC
// error -32602 and a message naming the tool, the argument and what is
// wrong, before any handler runs.
func TestArgumentsTheSchemaRefusesAnswerInvalidParams(t *testing.T) {
	url := agenttest.StartBus(t)
	alice, _ := agenttest.Pair(t)
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)
	tooMany := make([]any, 101)
	for i := range tooMany {
		tooMany[i] = map[string]any{"sender": "k", "msg_id": "m"}
	}
	tests := []struct {
		tool string
		args map[string]any
		want []string
	}{
		{"send_message", map[string]any{"text": "x"}, []string{"send_message: ", "to"}},
		{"send_message", map[string]any{"to": 7, "text": "x"}, []string{"send_message: to: ", "string"}},
		{"receive_messages", map[string]any{"limit": 0}, []string{"receive_messages: limit: ", "1"}},
		{"receive_messages", map[string]any{"limit": 101}, []string{"receive_messages: limit: ", "100"}},
		{"receive_messages", map[string]any{"limit": 2.5}, []string{"receive_messages: limit: ", "integer"}},
		{"read_message", map[string]any{"sender": "k", "msg_id": "m", "offset": -1}, []string{"read_message: offset: "}},
		{"conversation_history", map[string]any{"peer": "bob", "limit": 500}, []string{"conversation_history: limit: "}},
		{"conversation_history", map[string]any{"peer": "bob", "consume": "yes"}, []string{"conversation_history: consume: ", "boolean"}},
		{"acknowledge_messages", map[string]any{"messages": []any{}}, []string{"acknowledge_messages: messages: "}},
		{"acknowledge_messages", map[string]any{"messages": tooMany}, []string{"acknowledge_messages: messages: "}},
		{"acknowledge_messages", map[string]any{}, []string{"acknowledge_messages: ", "messages"}},
		{"acknowledge_messages", map[string]any{"messages": []any{"x"}}, []string{"acknowledge_messages: messages/0: ", "object"}},
		{"acknowledge_messages", map[string]any{"messages": []any{map[string]any{"sender": 1, "msg_id": "m"}}}, []string{"messages/0/sender: "}},
		{"message_status", map[string]any{}, []string{"message_status: ", "msg_id"}},
		{"failed_deliveries", map[string]any{"action": "explode"}, []string{"failed_deliveries: action: "}},
	}
	for _, tt := range tests {
		got := a.SchemaErr(tt.tool, tt.args)
		if !strings.HasPrefix(got, "invalid params: ") {
			t.Errorf("%s(%v) error = %q, want it to start with %q", tt.tool, tt.args, got, "invalid params: ")
		}
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s(%v) error = %q, want it to contain %q", tt.tool, tt.args, got, w)
			}
		}
	}
}

// A top-level argument that is null counts as absent, and a whole number
// written with a fraction of zero is an integer, as JSON Schema has it.
func TestNullIsAbsentAndTwoPointZeroIsAnInteger(t *testing.T) {
	url := agenttest.StartBus(t)
	alice, _ := agenttest.Pair(t)
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)
	if got := a.OK("receive_messages", map[string]any{"notification_id": nil, "limit": nil}); !strings.HasPrefix(got, "No unread messages") {
		t.Errorf("receive_messages with null arguments = %q", got)
	}
	if got := a.OK("receive_messages", map[string]any{"limit": 2.0}); !strings.HasPrefix(got, "No unread messages") {
		t.Errorf("receive_messages with limit 2.0 = %q", got)
	}
	if got := a.OK("send_message", map[string]any{"to": "bob", "text": "x", "session": "b1", "task_id": nil, "status": nil}); !strings.HasPrefix(got, "queued for bob (b1)") {
		t.Errorf("send_message with null optional arguments = %q", got)
	}
}

func TestCheckerReportsEachProblemOfACall(t *testing.T) {
	def := mcp.NewTool("t",
		mcp.WithString("name", mcp.Required()),
		mcp.WithInteger("n", mcp.Min(1), mcp.Max(3)),
	)
	c, err := tools.NewChecker([]mcp.Tool{def})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args string
		want []string // problems, in order; nil when the call fits
	}{
		{"fits", `{"name":"x","n":2}`, nil},
		{"absent arguments fit when nothing is required", ``, []string{"arguments: missing property 'name'"}},
		{"null counts as absent", `{"name":"x","n":null}`, nil},
		{"two problems", `{"n":7}`, []string{"arguments: missing property 'name'", "n: maximum: got 7, want 3"}},
		{"not an object", `[1]`, []string{"arguments: got array, want object"}},
		{"not JSON", `{"name":`, []string{"arguments are not valid JSON"}},
	}
	for _, tt := range tests {
		err := c.Check("t", json.RawMessage(tt.args))
		ae, ok := errors.AsType[*tools.ArgumentsError](err)
		switch {
		case tt.want == nil && err != nil:
			t.Errorf("%s: Check = %v, want nil", tt.name, err)
		case tt.want == nil:
		case !ok:
			t.Errorf("%s: Check = %v, want an ArgumentsError", tt.name, err)
		case ae.Tool != "t" || ae.Code() != mcp.INVALID_PARAMS || strings.Join(ae.Problems, "|") != strings.Join(tt.want, "|"):
			t.Errorf("%s: Check = %+v (code %d), want problems %q and code %d", tt.name, ae, ae.Code(), tt.want, mcp.INVALID_PARAMS)
		}
	}
	if err := c.Check("unknown", json.RawMessage(`{"x":1}`)); err != nil {
		t.Errorf("Check of a tool it does not know = %v, want nil: the server answers that", err)
	}
}

// BenchmarkCheck measures the check of one send_message call's arguments
// against its schema, next to its floor: decoding the same arguments,
// which the check does first and the handler does again.
func BenchmarkCheck(b *testing.B) {
	var defs []mcp.Tool
	for _, t := range (&tools.Messaging{}).Tools() {
		defs = append(defs, t.Def)
	}
	c, err := tools.NewChecker(defs)
	if err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"to":"bob","text":"benchmark message of a typical length, about one line of prose.","session":"b1","task_id":"t1","status":"update"}`)
	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			if err := c.Check("send_message", args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("floor=decode", func(b *testing.B) {
		for b.Loop() {
			var v map[string]any
			if err := json.Unmarshal(args, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Every tool's schema compiles, so none is left unchecked.
func TestEveryToolsSchemaCompiles(t *testing.T) {
	var defs []mcp.Tool
	for _, g := range [][]tools.Tool{(&tools.Messaging{}).Tools(), (&tools.Mailbox{}).Tools(), (&tools.Peers{}).Tools(),
		(&tools.Presence{}).Tools(), (&tools.Codex{}).Tools()} {
		for _, tool := range g {
			defs = append(defs, tool.Def)
		}
	}
	c, err := tools.NewChecker(defs)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Compile(); err != nil {
		t.Error(err)
	}
	if len(defs) != 20 {
		t.Errorf("%d tools, want the 20 the agent serves", len(defs))
	}
}
