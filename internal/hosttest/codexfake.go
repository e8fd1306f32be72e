//go:build hosttest

package hosttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// codexModel stands in for the OpenAI Responses API of a custom Codex model
// provider, so that Codex runs offline. It records every request, answers
// GET /v1/models with an empty list and POST /v1/responses, in server-sent
// events, with what the first matching rule says (the text "OK" when none
// matches). Everything else gets a 404 error.
type codexModel struct {
	url   string      // the provider's base_url, ending in /v1
	rules []codexRule // fixed at creation

	recorder[*codexRequest] // every request, with its answer
}

// codexRequest is one recorded request and the answer it got.
type codexRequest struct {
	httpRecord

	// Responses is the decoded body of a POST to /v1/responses, else nil.
	Responses *responsesRequest
	// Reply is what the fake model answered to Responses.
	Reply codexReply
}

// codexRule decides the answer to a Responses request.
type codexRule = rule[*responsesRequest, codexReply]

// codexReply is one answer of the fake model: a call of the tool Tool of
// the MCP server interlink when Tool is set, else the text Text.
type codexReply struct {
	Text string
	Tool string
	Args any // the tool's arguments, marshaled to a JSON object
}

// responsesRequest is the part of a Responses API request the fake model
// looks at.
type responsesRequest struct {
	// Thread is the thread the request is for, from its thread-id header.
	Thread string `json:"-"`

	Model  string          `json:"model"`
	Stream bool            `json:"stream"`
	Input  []responsesItem `json:"input"`
	Tools  []responsesTool `json:"tools"`
}

// responsesItem is one input item: a message, a function call the model
// made or the output of one.
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	Name      string          `json:"name,omitempty"`
	Namespace string          `json:"namespace,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Arguments string          `json:"arguments,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
}

// responsesTool is one entry of tools: a function, or a namespace that
// holds the functions of one MCP server.
type responsesTool struct {
	Type  string          `json:"type"`
	Name  string          `json:"name"`
	Tools []responsesTool `json:"tools,omitempty"`
}

// codexNamespace is the namespace Codex gives the tools of the MCP server
// interlink.
const codexNamespace = "mcp__interlink"

// text returns the text of a message item's content, or of a function call
// output, joined by newlines.
func (it responsesItem) text() string {
	raw := it.Content
	if it.Type == "function_call_output" {
		raw = it.Output
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var texts []string
	for _, p := range parts {
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, "\n")
}

// userTexts returns the text of every user message of the input.
func (r *responsesRequest) userTexts() []string {
	var texts []string
	for _, it := range r.Input {
		if it.Type == "message" && it.Role == "user" {
			texts = append(texts, it.text())
		}
	}
	return texts
}

// toolNames returns the names of the tools offered, a namespace's tools as
// namespace/name.
func (r *responsesRequest) toolNames() []string {
	var names []string
	for _, tool := range r.Tools {
		if tool.Type != "namespace" {
			names = append(names, tool.Name)
			continue
		}
		for _, sub := range tool.Tools {
			names = append(names, tool.Name+"/"+sub.Name)
		}
	}
	return names
}

// hasTool reports whether the tool name of the MCP server interlink is
// offered.
func (r *responsesRequest) hasTool(name string) bool {
	for _, tool := range r.Tools {
		if tool.Type != "namespace" || tool.Name != codexNamespace {
			continue
		}
		for _, sub := range tool.Tools {
			if sub.Name == name {
				return true
			}
		}
	}
	return false
}

// callOutputs returns the function call outputs of the input, by call id.
func (r *responsesRequest) callOutputs() map[string]string {
	out := make(map[string]string)
	for _, it := range r.Input {
		if it.Type == "function_call_output" {
			out[it.CallID] = it.text()
		}
	}
	return out
}

// calls returns the names of the function calls of the input, by call id.
func (r *responsesRequest) calls() map[string]string {
	out := make(map[string]string)
	for _, it := range r.Input {
		if it.Type == "function_call" {
			out[it.CallID] = it.Name
		}
	}
	return out
}

// outputsOf returns the outputs of the calls of the tool name, in order.
func (r *responsesRequest) outputsOf(name string) []string {
	calls := r.calls()
	var out []string
	for _, it := range r.Input {
		if it.Type == "function_call_output" && calls[it.CallID] == name {
			out = append(out, it.text())
		}
	}
	return out
}

// codexCallOnce is a rule that calls the interlink tool name with args when
// the tool is offered and the input holds no function call output yet.
func codexCallOnce(name string, args any) codexRule {
	return func(r *responsesRequest) (codexReply, bool) {
		if !r.hasTool(name) || len(r.callOutputs()) > 0 {
			return codexReply{}, false
		}
		return codexReply{Tool: name, Args: args}, true
	}
}

// newCodexModel starts the fake model on a loopback port until the test
// ends.
func newCodexModel(t testing.TB, rules ...codexRule) *codexModel {
	t.Helper()
	m := &codexModel{rules: rules}
	srv := httptest.NewServer(http.HandlerFunc(m.serveHTTP))
	t.Cleanup(srv.Close)
	m.url = srv.URL + "/v1"
	return m
}

func (m *codexModel) serveHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rec := &codexRequest{httpRecord: newHTTPRecord(req, body)}
	defer m.record(rec)
	switch {
	case req.Method == http.MethodGet && req.URL.Path == "/v1/models":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[]}`)
	case req.Method == http.MethodPost && req.URL.Path == "/v1/responses":
		var r responsesRequest
		if err := json.Unmarshal(body, &r); err != nil {
			codexAPIError(w, http.StatusBadRequest, "invalid_request_error", "bad JSON: "+err.Error())
			return
		}
		r.Thread = req.Header.Get("thread-id")
		rec.Responses = &r
		rec.Reply = firstReply(m.rules, &r, codexReply{Text: "OK"})
		m.writeSSE(w, r.Model, rec.Reply)
	default:
		codexAPIError(w, http.StatusNotFound, "not_found_error", "no route "+req.Method+" "+req.URL.Path)
	}
}

// nextID returns a fresh id with the prefix.
func (m *codexModel) nextID(prefix string) string {
	return fmt.Sprintf("%s_hosttest_%d", prefix, m.serial())
}

// writeSSE writes the reply as the stream of a Responses request: the
// response is created, its one output item is added (with a text delta for
// a message), done, and the response completes.
func (m *codexModel) writeSSE(w http.ResponseWriter, model string, reply codexReply) {
	respID := m.nextID("resp")
	var item map[string]any
	var delta string
	if reply.Tool != "" {
		args, err := json.Marshal(reply.Args)
		if err != nil {
			panic(err) // the test's own arguments
		}
		item = map[string]any{
			"type": "function_call", "id": m.nextID("fc"), "call_id": m.nextID("call"),
			"name": reply.Tool, "namespace": codexNamespace, "arguments": string(args), "status": "completed",
		}
	} else {
		delta = reply.Text
		item = map[string]any{
			"type": "message", "id": m.nextID("msg"), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": reply.Text, "annotations": []any{}}},
		}
	}
	response := func(status string, output []any) map[string]any {
		r := map[string]any{
			"id": respID, "object": "response", "created_at": time.Now().Unix(),
			"status": status, "model": model, "output": output,
		}
		if status == "completed" {
			r["usage"] = map[string]any{"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}
		}
		return r
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	events := []map[string]any{
		{"type": "response.created", "response": response("in_progress", []any{})},
		{"type": "response.output_item.added", "output_index": 0, "item": item},
	}
	if delta != "" {
		events = append(events, map[string]any{
			"type": "response.output_text.delta", "item_id": item["id"], "output_index": 0, "content_index": 0, "delta": delta,
		})
	}
	events = append(events,
		map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item},
		map[string]any{"type": "response.completed", "response": response("completed", []any{item})},
	)
	for _, ev := range events {
		data, err := json.Marshal(ev)
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], data)
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// codexAPIError writes an error in the OpenAI API's JSON shape.
func codexAPIError(w http.ResponseWriter, status int, kind, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"type": kind, "message": msg}})
}

// waitResponses waits up to timeout for a Responses request that match
// accepts and returns it; it fails the test, naming what, when none comes.
func (m *codexModel) waitResponses(t testing.TB, timeout time.Duration, what string, match func(*responsesRequest) bool) *codexRequest {
	t.Helper()
	r, err := m.await(timeout, nil, func(r *codexRequest) bool { return r.Responses != nil && match(r.Responses) })
	if err != nil {
		t.Fatalf("fake model: no request %s %v; requests:\n%s", what, err, m.summary())
	}
	return r
}

// summary lists the recorded requests, one line each, for failure messages.
func (m *codexModel) summary() string {
	reqs, _ := m.snapshot()
	var b strings.Builder
	for i, r := range reqs {
		fmt.Fprintf(&b, "%d. %s %s", i+1, r.Method, r.Path)
		if r.Responses != nil {
			texts := r.Responses.userTexts()
			last := ""
			if len(texts) > 0 {
				last = texts[len(texts)-1]
			}
			fmt.Fprintf(&b, " (%d input items, last user text %q, %d outputs) -> %+v",
				len(r.Responses.Input), codexShorten(last, 120), len(r.Responses.callOutputs()), r.Reply)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// codexShorten returns s, cut to n bytes with "..." when longer.
func codexShorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
