//go:build hosttest

package hosttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/receipt"
)

// fakeModel stands in for the Anthropic Messages API, so that Claude Code
// runs offline. It records every request, answers POST /v1/messages with
// what the first matching rule says (the text "OK" when none matches), in
// server-sent events when the request asks to stream, and answers
// count_tokens with one token. Everything else gets a 404 error.
type fakeModel struct {
	url   string
	rules []modelRule // fixed at creation

	recorder[*modelRequest] // every request, with its answer
}

// modelRequest is one recorded request and the answer it got.
type modelRequest struct {
	httpRecord

	// Messages is the decoded body of a POST to /v1/messages, else nil.
	Messages *messagesRequest
	// Reply is what the fake model answered to Messages.
	Reply modelReply
}

// modelRule decides the answer to a Messages request.
type modelRule = rule[*messagesRequest, modelReply]

// fetchNotices returns a rule that answers a user turn holding an inbox
// notice with a call of recv, the receive_messages tool, for its id.
func fetchNotices(recv string) modelRule {
	return func(r *messagesRequest) (modelReply, bool) {
		last := r.last()
		if _, ok := r.lastToolResult(); ok || last.Role != "user" {
			return modelReply{}, false
		}
		m := noticeIDRE.FindStringSubmatch(last.text())
		if m == nil {
			return modelReply{}, false
		}
		return modelReply{Tool: recv, Input: map[string]any{"notification_id": m[1]}}, true
	}
}

// acknowledgeFetched returns a rule that answers a successful result of
// recv holding receipts with a call of ack, the acknowledge_messages tool,
// passing them back.
func acknowledgeFetched(recv, ack string) modelRule {
	return func(r *messagesRequest) (modelReply, bool) {
		res, ok := r.lastToolResult()
		if !ok || res.Name != recv || res.IsError {
			return modelReply{}, false
		}
		receipts, err := receipt.Scan(res.Text)
		if err != nil || len(receipts) == 0 {
			return modelReply{}, false
		}
		return modelReply{Tool: ack, Input: map[string]any{"messages": receipts}}, true
	}
}

// modelReply is one answer of the fake model: a tool call when Tool is set,
// else Text.
type modelReply struct {
	Text  string
	Tool  string
	Input any // the tool's arguments, marshaled to a JSON object
}

// messagesRequest is the part of a Messages API request the fake model
// looks at.
type messagesRequest struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Tools  []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Messages []message `json:"messages"`
}

// message is one entry of a request's messages.
type message struct {
	Role    string         `json:"role"`
	Content []contentBlock `json:"content"`
}

// contentBlock is a text, tool_use or tool_result block.
type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

// toolResult is a tool_result block with the name of the tool it answers.
type toolResult struct {
	Name    string
	Text    string
	IsError bool
}

// UnmarshalJSON accepts content given as a plain string, as the API does.
func (m *message) UnmarshalJSON(data []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	m.Role = raw.Role
	var s string
	if json.Unmarshal(raw.Content, &s) == nil {
		m.Content = []contentBlock{{Type: "text", Text: s}}
		return nil
	}
	return json.Unmarshal(raw.Content, &m.Content)
}

// text is the text of the block: a text block's text or a tool_result's
// content, whether a string or text blocks.
func (b contentBlock) text() string {
	if b.Type != "tool_result" {
		return b.Text
	}
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var parts []contentBlock
	json.Unmarshal(b.Content, &parts)
	var texts []string
	for _, p := range parts {
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, "\n")
}

// text joins the texts of the message's blocks.
func (m message) text() string {
	var texts []string
	for _, b := range m.Content {
		if t := b.text(); t != "" {
			texts = append(texts, t)
		}
	}
	return strings.Join(texts, "\n")
}

// tool returns the name of the offered tool whose name ends with suffix,
// or "".
func (r *messagesRequest) tool(suffix string) string {
	for _, t := range r.Tools {
		if strings.HasSuffix(t.Name, suffix) {
			return t.Name
		}
	}
	return ""
}

// toolNames lists the offered tools.
func (r *messagesRequest) toolNames() []string {
	var names []string
	for _, t := range r.Tools {
		names = append(names, t.Name)
	}
	return names
}

// last returns the last message, to which the model answers.
func (r *messagesRequest) last() message {
	if len(r.Messages) == 0 {
		return message{}
	}
	return r.Messages[len(r.Messages)-1]
}

// toolResults returns the tool results of the whole conversation, oldest
// first, each named after the tool_use it answers.
func (r *messagesRequest) toolResults() []toolResult {
	names := make(map[string]string)
	var results []toolResult
	for _, m := range r.Messages {
		for _, b := range m.Content {
			switch b.Type {
			case "tool_use":
				names[b.ID] = b.Name
			case "tool_result":
				results = append(results, toolResult{Name: names[b.ToolUseID], Text: b.text(), IsError: b.IsError})
			}
		}
	}
	return results
}

// lastToolResult returns the tool result in the last message, if it holds
// exactly one.
func (r *messagesRequest) lastToolResult() (toolResult, bool) {
	all := r.toolResults()
	n := 0
	for _, b := range r.last().Content {
		if b.Type == "tool_result" {
			n++
		}
	}
	if n != 1 {
		return toolResult{}, false
	}
	return all[len(all)-1], true
}

// callOnce is a rule that calls the offered tool whose name ends with
// suffix, with input, when the conversation has no result of it yet.
func callOnce(suffix string, input any) modelRule {
	return func(r *messagesRequest) (modelReply, bool) {
		name := r.tool(suffix)
		if name == "" {
			return modelReply{}, false
		}
		for _, res := range r.toolResults() {
			if res.Name == name {
				return modelReply{}, false
			}
		}
		return modelReply{Tool: name, Input: input}, true
	}
}

// newFakeModel starts a fake model on loopback that answers with rules,
// tried in order. When the test fails, the cleanup logs a summary of the
// requests.
func newFakeModel(t testing.TB, rules ...modelRule) *fakeModel {
	t.Helper()
	m := &fakeModel{rules: rules}
	srv := httptest.NewServer(http.HandlerFunc(m.serveHTTP))
	m.url = srv.URL
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		if t.Failed() || testing.Verbose() {
			t.Logf("hosttest: fake model requests:\n%s", m.summary())
		}
	})
	return m
}

func (m *fakeModel) serveHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, 64<<20))
	rec := &modelRequest{httpRecord: newHTTPRecord(req, body)}
	defer m.record(rec)
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	switch {
	case req.Method == http.MethodPost && req.URL.Path == "/v1/messages/count_tokens":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"input_tokens":1}`)
	case req.Method == http.MethodPost && req.URL.Path == "/v1/messages":
		var mr messagesRequest
		if err := json.Unmarshal(body, &mr); err != nil {
			apiError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
			return
		}
		rec.Messages = &mr
		rec.Reply = firstReply(m.rules, &mr, modelReply{Text: "OK"})
		id := fmt.Sprintf("toolu_hosttest%04d", m.serial())
		if mr.Stream {
			writeSSE(w, mr.Model, id, rec.Reply)
		} else {
			writeMessage(w, mr.Model, id, rec.Reply)
		}
	default:
		apiError(w, http.StatusNotFound, "not_found_error", req.Method+" "+req.URL.Path+" is not served here")
	}
}

// waitMessages waits up to timeout for a Messages request for which match
// is true, and returns it. done, when closed, ends the wait early: it is
// the channel of a process whose exit means no such request will come.
func (m *fakeModel) waitMessages(t testing.TB, timeout time.Duration, done <-chan struct{}, what string, match func(*messagesRequest) bool) *modelRequest {
	t.Helper()
	r, err := m.await(timeout, done, func(r *modelRequest) bool { return r.Messages != nil && match(r.Messages) })
	if err != nil {
		t.Fatalf("hosttest: no model request %s %v", what, err)
	}
	return r
}

// summary describes every recorded request on a few lines.
func (m *fakeModel) summary() string {
	reqs, _ := m.snapshot()
	var b strings.Builder
	for i, r := range reqs {
		fmt.Fprintf(&b, "#%d %s %s", i, r.Method, r.Path)
		if mr := r.Messages; mr != nil {
			last := mr.last()
			fmt.Fprintf(&b, " model=%s tools=%d messages=%d last %s: %s", mr.Model, len(mr.Tools), len(mr.Messages), last.Role, abbreviate(last.text(), 300))
			if r.Reply.Tool != "" {
				in, _ := json.Marshal(r.Reply.Input)
				fmt.Fprintf(&b, "\n    -> tool_use %s %s", r.Reply.Tool, in)
			} else {
				fmt.Fprintf(&b, "\n    -> text %q", r.Reply.Text)
			}
		} else if len(r.Body) > 0 {
			fmt.Fprintf(&b, " body: %s", abbreviate(string(r.Body), 300))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// abbreviate shortens s to about n bytes, on one line.
func abbreviate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}

// apiError writes an error in the Messages API's shape.
func apiError(w http.ResponseWriter, status int, kind, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{
		"type":  "error",
		"error": map[string]string{"type": kind, "message": msg},
	})
}

// usage is the token count every answer reports.
var usage = map[string]int{"input_tokens": 1, "output_tokens": 1}

// replyBlock returns the content block of reply, with the tool input in
// it, and its stop reason.
func replyBlock(reply modelReply, id string) (block map[string]any, input []byte, stop string) {
	if reply.Tool == "" {
		return map[string]any{"type": "text", "text": reply.Text}, nil, "end_turn"
	}
	input, err := json.Marshal(reply.Input)
	if err != nil || reply.Input == nil {
		input = []byte("{}")
	}
	return map[string]any{"type": "tool_use", "id": id, "name": reply.Tool, "input": json.RawMessage(input)}, input, "tool_use"
}

// writeMessage answers a request that does not stream.
func writeMessage(w http.ResponseWriter, model, id string, reply modelReply) {
	block, _, stop := replyBlock(reply, id)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "msg_" + id, "type": "message", "role": "assistant", "model": model,
		"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage,
	})
}

// writeSSE streams the answer as the Messages API does: message_start,
// one content block (a text_delta, or an input_json_delta with the tool's
// arguments), message_delta with the stop reason, message_stop.
func writeSSE(w http.ResponseWriter, model, id string, reply modelReply) {
	block, input, stop := replyBlock(reply, id)
	var delta map[string]any
	if reply.Tool == "" {
		block["text"] = ""
		delta = map[string]any{"type": "text_delta", "text": reply.Text}
	} else {
		block["input"] = map[string]any{}
		delta = map[string]any{"type": "input_json_delta", "partial_json": string(input)}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	var b bytes.Buffer
	event := func(name string, data map[string]any) {
		data["type"] = name
		j, _ := json.Marshal(data)
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", name, j)
	}
	event("message_start", map[string]any{"message": map[string]any{
		"id": "msg_" + id, "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage,
	}})
	event("content_block_start", map[string]any{"index": 0, "content_block": block})
	event("content_block_delta", map[string]any{"index": 0, "delta": delta})
	event("content_block_stop", map[string]any{"index": 0})
	event("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": 1},
	})
	event("message_stop", map[string]any{})
	w.Write(b.Bytes())
}

// noticeIDRE finds the notification id in an inbox notice.
var noticeIDRE = regexp.MustCompile(`receive_messages\(notification_id="([^"]+)"\)`)
