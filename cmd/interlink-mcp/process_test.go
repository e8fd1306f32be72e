package main

// Tests of the MCP server as a process: each starts the test binary as
// interlink-mcp (see TestMain) with pipes for stdin and stdout, speaks
// JSON-RPC to it, and closes, signals or kills it. Relays are in-process
// buses on 127.0.0.1. Every process is killed at cleanup.

import (
	"bufio"
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

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/testutil"
)

// rpcTimeout bounds every request to a server process.
const rpcTimeout = 20 * time.Second

// rpcReply is one JSON-RPC response.
type rpcReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// mcpProc is a running interlink-mcp server.
type mcpProc struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *testutil.LockedBuffer
	done   chan struct{} // closed when the process has exited
	code   int           // exit status, valid after done

	mu      sync.Mutex
	nextID  int
	pending map[int]chan rpcReply
	junk    []string // stdout lines that are not JSON-RPC responses
}

// cleanEnv returns this process's environment without INTERLINK_ and
// Claude variables, plus extra.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "INTERLINK_") || strings.HasPrefix(kv, "CLAUDE_CODE_SESSION_ID=") ||
			strings.HasPrefix(kv, "XDG_STATE_HOME=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// launchMCP starts interlink-mcp with args and env and returns at once.
func launchMCP(t testing.TB, env []string, args ...string) *mcpProc {
	t.Helper()
	path, err := exec.LookPath("interlink-mcp")
	if err != nil {
		t.Fatalf("interlink-mcp is not on PATH (TestMain puts it there): %v", err)
	}
	p := &mcpProc{t: t, stderr: &testutil.LockedBuffer{}, done: make(chan struct{}), pending: map[int]chan rpcReply{}}
	p.cmd = exec.Command(path, args...)
	p.cmd.Env = env
	p.cmd.Stderr = p.stderr
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	read := make(chan struct{})
	go p.readLoop(stdout, read)
	go func() {
		<-read // Wait closes the pipe; read it all first
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("stderr of %v:\n%s", args, p.stderr.String())
		}
	})
	return p
}

func (p *mcpProc) readLoop(r io.Reader, read chan struct{}) {
	defer close(read)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		var msg struct {
			ID *int `json:"id"`
			rpcReply
		}
		if err := json.Unmarshal([]byte(line), &msg); err != nil || msg.ID == nil {
			p.mu.Lock()
			p.junk = append(p.junk, line)
			p.mu.Unlock()
			continue
		}
		p.mu.Lock()
		ch := p.pending[*msg.ID]
		delete(p.pending, *msg.ID)
		p.mu.Unlock()
		if ch != nil {
			ch <- msg.rpcReply
		}
	}
}

// request sends a JSON-RPC request and waits for its reply.
func (p *mcpProc) request(method string, params any) rpcReply {
	p.t.Helper()
	p.mu.Lock()
	p.nextID++
	id := p.nextID
	ch := make(chan rpcReply, 1)
	p.pending[id] = ch
	p.mu.Unlock()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.t.Fatalf("%s: write: %v\nstderr:\n%s", method, err, p.stderr.String())
	}
	select {
	case r := <-ch:
		return r
	case <-p.done:
		p.t.Fatalf("%s: the server exited with status %d\nstderr:\n%s", method, p.code, p.stderr.String())
	case <-time.After(rpcTimeout):
		p.t.Fatalf("%s: no reply within %v", method, rpcTimeout)
	}
	return rpcReply{}
}

// notify sends a JSON-RPC notification.
func (p *mcpProc) notify(method string) {
	p.t.Helper()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method})
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.t.Fatal(err)
	}
}

// initialize runs the MCP handshake and returns the result.
func (p *mcpProc) initialize() map[string]any {
	p.t.Helper()
	r := p.request("initialize", map[string]any{
		"protocolVersion": "2025-06-18",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "process-test", "version": "1"},
	})
	if r.Error != nil {
		p.t.Fatalf("initialize: %s", r.Error.Message)
	}
	var res map[string]any
	if err := json.Unmarshal(r.Result, &res); err != nil {
		p.t.Fatal(err)
	}
	p.notify("notifications/initialized")
	return res
}

// call calls a tool; it returns the text, whether it is a tool error, and
// the JSON-RPC error message if there was one.
func (p *mcpProc) call(tool string, args map[string]any) (text string, isError bool, rpcErr string) {
	p.t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	r := p.request("tools/call", map[string]any{"name": tool, "arguments": args})
	if r.Error != nil {
		return "", false, r.Error.Message
	}
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || len(res.Content) != 1 {
		p.t.Fatalf("%s: result %s", tool, r.Result)
	}
	return res.Content[0].Text, res.IsError, ""
}

// ok calls a tool and fails the test unless it succeeds.
func (p *mcpProc) ok(tool string, args map[string]any) string {
	p.t.Helper()
	text, isErr, rpcErr := p.call(tool, args)
	if rpcErr != "" || isErr {
		p.t.Fatalf("%s(%v): %s%s", tool, args, rpcErr, text)
	}
	return text
}

// waitText calls a tool until its text contains want.
func (p *mcpProc) waitText(tool string, args map[string]any, want string) string {
	p.t.Helper()
	var text string
	waitFor(p.t, fmt.Sprintf("%s to show %q", tool, want), func() bool {
		text = p.ok(tool, args)
		return strings.Contains(text, want)
	})
	return text
}

// closeAndWait closes stdin and waits for the exit status.
func (p *mcpProc) closeAndWait() int {
	p.t.Helper()
	_ = p.stdin.Close()
	return p.wait()
}

// wait waits for the process to exit and returns its status.
func (p *mcpProc) wait() int {
	p.t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(15 * time.Second):
		p.t.Fatalf("the server did not exit\nstderr:\n%s", p.stderr.String())
	}
	return -1
}

// junkLines returns stdout lines that were not JSON-RPC responses.
func (p *mcpProc) junkLines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.junk...)
}

// agentFiles is an identity for a server process: key, peers and state.
type agentFiles struct {
	dir, key, peers, state string
	signer                 *identity.Signer
}

var seedByte byte = 100

// newAgentFiles writes a key file and an empty peers.json.
func newAgentFiles(t testing.TB) *agentFiles {
	t.Helper()
	seedByte++
	seed := bytes.Repeat([]byte{seedByte}, identity.SeedSize)
	s, err := identity.NewSigner(seed)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f := &agentFiles{dir: dir, key: filepath.Join(dir, "id.key"), peers: filepath.Join(dir, "peers.json"),
		state: filepath.Join(dir, "state"), signer: s}
	if err := os.WriteFile(f.key, identity.EncodeKeyFile(seed), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.peers, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *agentFiles) pubkey() string { return f.signer.Public().String() }

// admit writes peers.json with one peer.
func (f *agentFiles) admit(t testing.TB, petname string, other *agentFiles) {
	t.Helper()
	data := fmt.Sprintf(`{%q: {"key": %q}}`, petname, other.pubkey())
	if err := os.WriteFile(f.peers, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// env returns the environment that points a server at f and url.
func (f *agentFiles) env(url string, extra ...string) []string {
	return cleanEnv(append([]string{
		"INTERLINK_KEY=" + f.key,
		"INTERLINK_PEERS=" + f.peers,
		"INTERLINK_URL=" + url,
		"INTERLINK_STATE_DIR=" + f.state,
		"INTERLINK_LOG_LEVEL=debug",
		"HOME=" + f.dir,
	}, extra...)...)
}
