//go:build hosttest

package hosttest

import (
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rpcConn is a JSON-RPC 2.0 peer over a process's stdin and stdout, one
// message per line: the codex app server, or an MCP server. It is used by
// one goroutine at a time.
type rpcConn struct {
	p      *proc
	stdin  io.WriteCloser
	stdout *lineQueue
	lastID int
	// seen holds the notifications and server requests read so far, in
	// order.
	seen []rpcMessage
}

// rpcMessage is a JSON-RPC request, notification or response.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc,omitempty"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// rpcError is the error of a response.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string {
	s := fmt.Sprintf("%s (code %d)", e.Message, e.Code)
	if len(e.Data) > 0 {
		s += "; data: " + string(e.Data)
	}
	return s
}

// startRPC starts cmd, whose Stdin, Stdout and Stderr must be unset, as a
// JSON-RPC peer.
func startRPC(t testing.TB, name string, cmd *exec.Cmd) *rpcConn {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &rpcConn{stdin: stdin, stdout: newLineQueue()}
	cmd.Stdout = c.stdout
	c.p = start(t, name, cmd)
	return c
}

// send writes one message.
func (c *rpcConn) send(t testing.TB, msg rpcMessage) {
	t.Helper()
	msg.JSONRPC = "2.0"
	data, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.stdin.Write(append(data, '\n')); err != nil {
		t.Fatalf("hosttest: %s: write: %v", c.p.name, err)
	}
}

// notify sends a notification.
func (c *rpcConn) notify(t testing.TB, method string, params any) {
	t.Helper()
	raw, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	c.send(t, rpcMessage{Method: method, Params: raw})
}

// next reads the next message, waiting until the deadline. A request from
// the peer is refused and, like a notification, added to seen.
func (c *rpcConn) next(t testing.TB, deadline time.Time, what string) rpcMessage {
	t.Helper()
	exited := false
	for {
		if line, ok := c.stdout.next(); ok {
			var msg rpcMessage
			if err := json.Unmarshal(line, &msg); err != nil {
				t.Fatalf("hosttest: %s: bad line %q: %v", c.p.name, line, err)
			}
			if msg.Method == wsErrorMethod {
				t.Fatalf("hosttest: %s: %s", c.p.name, msg.Params)
			}
			if msg.Method != "" {
				c.seen = append(c.seen, msg)
				if len(msg.ID) > 0 {
					t.Logf("%s: refusing its request %s %s", c.p.name, msg.Method, codexShorten(string(msg.Params), 300))
					c.send(t, rpcMessage{ID: msg.ID, Error: &rpcError{Code: -32601, Message: "the test does not answer " + msg.Method}})
				}
			}
			return msg
		}
		select {
		case <-c.stdout.added:
		case <-c.p.done:
			// Lines written before the exit may not have been read yet.
			if exited {
				t.Fatalf("hosttest: %s exited (%v) while waiting for %s", c.p.name, c.p.err, what)
			}
			exited = true
		case <-time.After(time.Until(deadline)):
			t.Fatalf("hosttest: %s: no %s within the time allowed", c.p.name, what)
		}
	}
}

// call sends a request and returns its result, or its error.
func (c *rpcConn) call(t testing.TB, timeout time.Duration, method string, params any) (json.RawMessage, *rpcError) {
	t.Helper()
	raw, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	c.lastID++
	id := json.RawMessage(strconv.Itoa(c.lastID))
	c.send(t, rpcMessage{ID: id, Method: method, Params: raw})
	deadline := time.Now().Add(timeout)
	for {
		msg := c.next(t, deadline, "answer to "+method)
		if msg.Method == "" && string(msg.ID) == string(id) {
			return msg.Result, msg.Error
		}
	}
}

// mustCall is call for a request that must succeed; it decodes the result
// into result unless that is nil.
func (c *rpcConn) mustCall(t testing.TB, timeout time.Duration, method string, params, result any) json.RawMessage {
	t.Helper()
	raw, rerr := c.call(t, timeout, method, params)
	if rerr != nil {
		t.Fatalf("%s: %s: %v", c.p.name, method, rerr)
	}
	if result != nil {
		if err := json.Unmarshal(raw, result); err != nil {
			t.Fatalf("%s: %s: result %s: %v", c.p.name, method, raw, err)
		}
	}
	return raw
}

// waitNotification returns the first notification, among those seen and
// those to come within timeout, with the method whose params match
// accepts. It fails the test, naming what, when none comes.
func (c *rpcConn) waitNotification(t testing.TB, timeout time.Duration, method, what string, match func(params json.RawMessage) bool) rpcMessage {
	t.Helper()
	for _, msg := range c.seen {
		if msg.Method == method && match(msg.Params) {
			return msg
		}
	}
	deadline := time.Now().Add(timeout)
	for {
		msg := c.next(t, deadline, what)
		if msg.Method == method && match(msg.Params) {
			return msg
		}
	}
}

// close closes stdin and waits for the process to exit.
func (c *rpcConn) close(t testing.TB) {
	t.Helper()
	c.stdin.Close()
	c.p.wait(t, exitTimeout)
}

// mcpInitialize runs the MCP handshake.
func (c *rpcConn) mcpInitialize(t testing.TB) {
	t.Helper()
	c.mustCall(t, startTimeout, "initialize", map[string]any{
		"protocolVersion": "2025-06-18",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "hosttest", "version": "0"},
	}, nil)
	c.notify(t, "notifications/initialized", map[string]any{})
}

// mcpToolResult is the result of an MCP tools/call, which is also what the
// app server's mcpServer/tool/call returns.
type mcpToolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

// text joins the result's text blocks.
func (r mcpToolResult) text() string {
	var texts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			texts = append(texts, c.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// mcpCall calls an MCP tool, which must succeed, and returns its text.
func (c *rpcConn) mcpCall(t testing.TB, name string, args map[string]any) string {
	t.Helper()
	var r mcpToolResult
	c.mustCall(t, stepTimeout, "tools/call", map[string]any{"name": name, "arguments": args}, &r)
	if r.IsError {
		t.Fatalf("%s: %s %v: tool error: %s", c.p.name, name, args, r.text())
	}
	t.Logf("%s: %s %v:\n%s", c.p.name, name, args, r.text())
	return r.text()
}

// appServer is a client of the codex app server: codex app-server over
// stdio, or the shared daemon through codex app-server proxy.
type appServer struct {
	*rpcConn
}

// startAppServer starts codex app-server over stdio with the extra
// arguments and initializes it.
func (h *codexHost) startAppServer(t testing.TB, name string, args ...string) *appServer {
	t.Helper()
	return newAppServer(t, startRPC(t, name, h.command(append([]string{"app-server"}, args...)...)))
}

// newAppServer initializes the app server at the other end of c. It also
// registers a cleanup that kills the processes c's process started, such
// as MCP servers, which may run in process groups of their own.
func newAppServer(t testing.TB, c *rpcConn) *appServer {
	t.Helper()
	killDetached(t, c.p)
	s := &appServer{c}
	s.mustCall(t, codexCommandTimeout, "initialize", map[string]any{
		"clientInfo":   map[string]any{"name": "interlink_hosttest", "title": "Interlink host test", "version": "0"},
		"capabilities": map[string]any{"experimentalApi": true},
	}, nil)
	s.notify(t, "initialized", map[string]any{})
	return s
}

// hooks returns the hooks that hooks/list reports for the folder dir.
func (s *appServer) hooks(t testing.TB, dir string) []codexHook {
	t.Helper()
	var res struct {
		Data []struct {
			Cwd    string          `json:"cwd"`
			Hooks  []codexHook     `json:"hooks"`
			Errors json.RawMessage `json:"errors"`
		} `json:"data"`
	}
	raw := s.mustCall(t, codexCommandTimeout, "hooks/list", map[string]any{"cwds": []string{dir}}, &res)
	var hooks []codexHook
	for _, d := range res.Data {
		hooks = append(hooks, d.Hooks...)
	}
	if len(hooks) == 0 {
		t.Logf("%s: hooks/list: %s", s.p.name, raw)
	}
	return hooks
}

// startThread starts a thread in the folder dir that asks no approval and
// runs read-only, and returns its id.
func (s *appServer) startThread(t testing.TB, dir string) string {
	t.Helper()
	var started struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	s.mustCall(t, codexCommandTimeout, "thread/start", map[string]any{
		"cwd": dir, "approvalPolicy": "never", "sandbox": "read-only",
	}, &started)
	return started.Thread.ID
}

// startTurn starts a turn of the thread with the user text text.
func (s *appServer) startTurn(t testing.TB, thread, text string) {
	t.Helper()
	s.mustCall(t, codexCommandTimeout, "turn/start", map[string]any{
		"threadId": thread, "input": []any{map[string]any{"type": "text", "text": text}},
	}, nil)
}

// hookRun is a hook/completed notification: a hook that ran.
type hookRun struct {
	ThreadID string `json:"threadId"`
	Run      struct {
		EventName   string          `json:"eventName"`
		HandlerType string          `json:"handlerType"`
		Status      string          `json:"status"`
		Entries     json.RawMessage `json:"entries"`
	} `json:"run"`
}

// hookRuns returns the hook/completed notifications seen so far, in order.
func (s *appServer) hookRuns() []hookRun {
	var runs []hookRun
	for _, msg := range s.seen {
		if msg.Method == "hook/completed" {
			var n hookRun
			json.Unmarshal(msg.Params, &n)
			runs = append(runs, n)
		}
	}
	return runs
}

// toolCall calls an interlink tool through the app server for the thread.
func (s *appServer) toolCall(t testing.TB, thread, tool string, args map[string]any) (mcpToolResult, *rpcError) {
	t.Helper()
	raw, rerr := s.call(t, stepTimeout, "mcpServer/tool/call", map[string]any{
		"threadId": thread, "server": "interlink", "tool": tool, "arguments": args,
	})
	var r mcpToolResult
	if rerr == nil {
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("%s: mcpServer/tool/call %s: result %s: %v", s.p.name, tool, raw, err)
		}
	}
	return r, rerr
}

// mustToolCall is toolCall for a call that must succeed; it returns the
// result's text.
func (s *appServer) mustToolCall(t testing.TB, thread, tool string, args map[string]any) string {
	t.Helper()
	r, rerr := s.toolCall(t, thread, tool, args)
	if rerr != nil || r.IsError {
		t.Fatalf("%s: %s %v for thread %s: error %v, result %q", s.p.name, tool, args, thread, rerr, r.text())
	}
	t.Logf("%s: %s %v:\n%s", s.p.name, tool, args, r.text())
	return r.text()
}
