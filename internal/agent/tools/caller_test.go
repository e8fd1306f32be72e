package tools

import (
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// The _meta of tool calls as Codex 0.171.0 sends them: a call the model
// made names its function call and turn, a call of an mcp_tool hook only a
// progress token and the thread.
func TestMadeByModel(t *testing.T) {
	for _, tc := range []struct {
		name string
		meta string
		want bool
	}{
		{"no _meta", ``, false},
		{"a hook's call", `{"progressToken":4,"threadId":"t"}`, false},
		{"the model's call", `{"callId":"call_5","itemId":"fc_4","progressToken":8,"sessionId":"t","threadId":"t",` +
			`"windowId":"t:0","x-codex-turn-metadata":{"turn_trigger":"queue"}}`, true},
		{"only the turn metadata", `{"x-codex-turn-metadata":{}}`, true},
		{"only the call id", `{"callId":"call_1"}`, true},
	} {
		raw := `{"name":"bind_codex_session","arguments":{}}`
		if tc.meta != "" {
			raw = `{"name":"bind_codex_session","arguments":{},"_meta":` + tc.meta + `}`
		}
		var p mcp.CallToolParams
		if err := json.Unmarshal([]byte(raw), &p); err != nil {
			t.Fatal(err)
		}
		if got := madeByModel(p.Meta); got != tc.want {
			t.Errorf("%s: madeByModel = %v, want %v", tc.name, got, tc.want)
		}
	}
}
