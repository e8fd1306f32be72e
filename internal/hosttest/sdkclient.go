//go:build hosttest

package hosttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// mcpSDKVersion is the @modelcontextprotocol/sdk release the tests drive
// servers with: the newest 1.x when it was pinned.
const mcpSDKVersion = "1.32.2"

// sdkScript is the node client, relative to the repository root.
const sdkScript = "testdata/hosttest/mcp-sdk-client.mjs"

// stepTimeout bounds one step beyond the time the step itself may take.
const stepTimeout = 45 * time.Second

// sdkClient is a node process running [sdkScript]: an MCP client from the
// official TypeScript SDK connected to a server it spawned. The test sends
// it steps and reads one result per step.
type sdkClient struct {
	p       *proc
	stdin   io.WriteCloser
	stdout  *lineQueue
	connect connectInfo
}

// connectInfo is the script's first line: what initialize returned.
type connectInfo struct {
	OK         bool `json:"ok"`
	ServerInfo struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"serverInfo"`
	Capabilities map[string]json.RawMessage `json:"capabilities"`
	Instructions string                     `json:"instructions"`
	PID          int                        `json:"pid"`
}

// stepResult is the script's answer to one step.
type stepResult struct {
	Op    string `json:"op"`
	OK    bool   `json:"ok"`
	Error *struct {
		Message string          `json:"message"`
		Code    *int            `json:"code"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	Text          string            `json:"text"`
	IsError       bool              `json:"isError"`
	Attempts      int               `json:"attempts"`
	Tools         []toolInfo        `json:"tools"`
	Notifications []json.RawMessage `json:"notifications"`
	MS            int               `json:"ms"`
}

// toolInfo is one entry of tools/list.
type toolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// startSDKClient installs the SDK if needed, starts the node client, which
// spawns the server as server[0] with the arguments server[1:] and the
// environment env, and waits for the connection.
func startSDKClient(t *testing.T, name string, env []string, server ...string) *sdkClient {
	t.Helper()
	sdk := installNPM(t, "@modelcontextprotocol/sdk", mcpSDKVersion)

	// The script imports the SDK by package name, which node resolves from
	// the script's own folder: give it one whose node_modules is the SDK's.
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(sdk, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(repoRoot(t), filepath.FromSlash(sdkScript)))
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, filepath.Base(sdkScript))
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command("node", append([]string{script}, server...)...)
	cmd.Dir = dir
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Not StdoutPipe: Wait would close it, and lose the last lines, as
	// soon as node exits. exec copies into a Writer until the end, and
	// Wait returns only after that.
	c := &sdkClient{stdin: stdin, stdout: newLineQueue()}
	cmd.Stdout = c.stdout
	c.p = start(t, name, cmd)

	line := c.read(t, startTimeout+stepTimeout)
	if err := json.Unmarshal(line, &c.connect); err != nil || !c.connect.OK {
		t.Fatalf("hosttest: %s: bad connect line %q: %v", name, line, err)
	}
	return c
}

// read returns the next stdout line of the script.
func (c *sdkClient) read(t testing.TB, timeout time.Duration) []byte {
	t.Helper()
	deadline := time.After(timeout)
	for {
		// Check for a line before the exit: both may be ready.
		if line, ok := c.stdout.next(); ok {
			return line
		}
		select {
		case <-c.stdout.added:
		case <-c.p.done:
			if line, ok := c.stdout.next(); ok {
				return line
			}
			t.Fatalf("hosttest: %s exited (%v)", c.p.name, c.p.err)
		case <-deadline:
			t.Fatalf("hosttest: %s: no answer within %v", c.p.name, timeout)
		}
	}
}

// do runs one step, which may itself take up to busy, and returns its result.
func (c *sdkClient) do(t testing.TB, busy time.Duration, step map[string]any) stepResult {
	t.Helper()
	data, err := json.Marshal(step)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.stdin.Write(append(data, '\n')); err != nil {
		t.Fatalf("hosttest: %s: send step: %v", c.p.name, err)
	}
	line := c.read(t, busy+stepTimeout)
	var r stepResult
	if err := json.Unmarshal(line, &r); err != nil {
		t.Fatalf("hosttest: %s: bad result line %q: %v", c.p.name, line, err)
	}
	if r.Op != step["op"] {
		t.Fatalf("hosttest: %s: result %q for step %v", c.p.name, line, step["op"])
	}
	return r
}

// call calls the tool name and returns the text of its result, which must
// be a success.
func (c *sdkClient) call(t testing.TB, name string, args map[string]any) string {
	t.Helper()
	r := c.do(t, 0, map[string]any{"op": "call", "name": name, "args": args})
	if !r.OK || r.IsError {
		t.Fatalf("%s: %s %v: %s", c.p.name, name, args, r.describe())
	}
	t.Logf("%s: %s %v:\n%s", c.p.name, name, args, r.Text)
	return r.Text
}

// callUntil calls the tool name every 200 ms, for up to timeout, until the
// text of its result contains want, and returns that text.
func (c *sdkClient) callUntil(t testing.TB, name string, args map[string]any, want string, timeout time.Duration) string {
	t.Helper()
	r := c.do(t, timeout, map[string]any{
		"op": "callUntil", "name": name, "args": args,
		"contains": want, "timeoutMs": timeout.Milliseconds(), "intervalMs": 200,
	})
	if !r.OK || r.IsError {
		t.Fatalf("%s: %s %v: want a result containing %q: %s", c.p.name, name, args, want, r.describe())
	}
	t.Logf("%s: %s %v (call %d):\n%s", c.p.name, name, args, r.Attempts, r.Text)
	return r.Text
}

// close closes the client, which ends the server, waits for node to exit
// and returns how long the SDK took to close the server.
func (c *sdkClient) close(t testing.TB) time.Duration {
	t.Helper()
	r := c.do(t, 0, map[string]any{"op": "close"})
	if !r.OK {
		t.Fatalf("%s: close: %s", c.p.name, r.describe())
	}
	c.stdin.Close()
	if err := c.p.wait(t, exitTimeout); err != nil {
		t.Fatalf("%s: node exited with %v", c.p.name, err)
	}
	return time.Duration(r.MS) * time.Millisecond
}

// describe says what a step returned, for failure messages.
func (r stepResult) describe() string {
	var b strings.Builder
	if r.Error != nil {
		b.WriteString("error: " + r.Error.Message)
		if r.Error.Code != nil {
			fmt.Fprintf(&b, " (code %d)", *r.Error.Code)
		}
		if len(r.Error.Data) > 0 && string(r.Error.Data) != "null" {
			b.WriteString("; data: " + string(r.Error.Data))
		}
		return b.String()
	}
	if r.IsError {
		b.WriteString("tool error: ")
	}
	b.WriteString(r.Text)
	return b.String()
}

// lineQueue collects what a process writes as complete lines.
type lineQueue struct {
	added chan struct{} // gets a value after a Write that completed a line

	mu      sync.Mutex // guards partial and lines
	partial []byte
	lines   [][]byte
}

func newLineQueue() *lineQueue {
	return &lineQueue{added: make(chan struct{}, 1)}
}

func (q *lineQueue) Write(p []byte) (int, error) {
	q.mu.Lock()
	q.partial = append(q.partial, p...)
	n := len(q.lines)
	for {
		i := bytes.IndexByte(q.partial, '\n')
		if i < 0 {
			break
		}
		q.lines = append(q.lines, bytes.Clone(q.partial[:i]))
		q.partial = q.partial[i+1:]
	}
	completed := len(q.lines) > n
	q.mu.Unlock()
	if completed {
		select {
		case q.added <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

// next removes and returns the oldest complete line, if there is one.
func (q *lineQueue) next() ([]byte, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.lines) == 0 {
		return nil, false
	}
	line := q.lines[0]
	q.lines = q.lines[1:]
	return line, true
}
