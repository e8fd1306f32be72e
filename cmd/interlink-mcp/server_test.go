package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/testutil"
)

// onRoster reports whether the relay at url lists key#session.
func onRoster(url, key, session string) bool {
	ros := relay.FetchRoster(context.Background(), []*relay.Client{relay.New(url, nil)})
	for _, e := range ros.Entries {
		if e.Key.String() == key && e.Session.SessionID == session {
			return true
		}
	}
	return false
}

// The start of a Claude Code connection: the session id comes from
// --session, INTERLINK_SESSION, then
// CLAUDE_CODE_SESSION_ID; server/discover before initialize is answered
// with an error that does not end the session; stdout holds only JSON-RPC.
func TestServerSessionID(t *testing.T) {
	url := bustest.Start(t, nil)
	f := newAgentFiles(t)
	tests := []struct {
		env  []string
		args []string
		want string
	}{
		{[]string{"CLAUDE_CODE_SESSION_ID=claude-abc"}, nil, "claude-abc"},
		{[]string{"CLAUDE_CODE_SESSION_ID=claude-abc", "INTERLINK_SESSION=env-s"}, nil, "env-s"},
		{[]string{"CLAUDE_CODE_SESSION_ID=claude-abc", "INTERLINK_SESSION=   "}, nil, "claude-abc"},
		{[]string{"CLAUDE_CODE_SESSION_ID=claude-abc", "INTERLINK_SESSION=env-s"}, []string{"--session", "flag-s"}, "flag-s"},
	}
	for _, tt := range tests {
		p := launchMCP(t, f.env(url, tt.env...), tt.args...)
		if r := p.request("server/discover", map[string]any{}); r.Error == nil {
			t.Errorf("server/discover answered %s, want an error", r.Result)
		}
		res := p.initialize()
		caps, _ := res["capabilities"].(map[string]any)
		if exp, _ := caps["experimental"].(map[string]any); exp["claude/channel"] == nil {
			t.Errorf("capabilities = %v", caps)
		}
		if got := p.ok("get_my_session_id", nil); got != `{"session_id":"`+tt.want+`"}` {
			t.Errorf("env %v args %v: session = %s, want %s", tt.env, tt.args, got, tt.want)
		}
		if code := p.closeAndWait(); code != 0 {
			t.Errorf("exit status %d", code)
		}
		if junk := p.junkLines(); len(junk) > 0 {
			t.Errorf("stdout lines that are not JSON-RPC responses: %q", junk)
		}
	}
	// Without any, a random 8-hex id.
	p := launchMCP(t, f.env(url))
	p.initialize()
	got := p.ok("get_my_session_id", nil)
	if len(got) != len(`{"session_id":"12345678"}`) {
		t.Errorf("generated session = %s", got)
	}
}

// A missing key or peers file, or an unusable relay URL or session id,
// ends the server at once with the setting to fix and, for a missing file,
// how to create it; INTERLINK_AGENT_DB is accepted and ignored.
func TestServerStartup(t *testing.T) {
	url := bustest.Start(t, nil)
	f := newAgentFiles(t)
	fails := []struct {
		env  []string
		want []string
	}{
		{[]string{"INTERLINK_KEY=" + filepath.Join(f.dir, "missing.key")}, []string{"--key / INTERLINK_KEY", "interlink-mcp keygen --out "}},
		{[]string{"INTERLINK_PEERS=" + filepath.Join(f.dir, "missing.json")}, []string{"--peers / INTERLINK_PEERS", "create it with the content {}"}},
		{[]string{"INTERLINK_URL=ws://relay.example"}, []string{"--url / INTERLINK_URL"}},
		{[]string{"INTERLINK_SESSION=../up"}, []string{"session id"}},
		{[]string{"CLAUDE_CODE_SESSION_ID=a/b"}, []string{"session id"}},
	}
	for _, tt := range fails {
		p := launchMCP(t, append(f.env(url), tt.env...))
		if code := p.wait(); code != 1 {
			t.Errorf("env %v: exit status %d, want 1", tt.env, code)
		}
		for _, w := range tt.want {
			if !strings.Contains(p.stderr.String(), w) {
				t.Errorf("env %v: stderr lacks %q:\n%s", tt.env, w, p.stderr.String())
			}
		}
	}
	p := launchMCP(t, f.env(url, "INTERLINK_AGENT_DB="+filepath.Join(f.dir, "agent.db")))
	p.initialize()
	p.ok("list_pending", nil)
	if code := p.closeAndWait(); code != 0 {
		t.Errorf("exit status %d", code)
	}
	if !strings.Contains(p.stderr.String(), "ignoring INTERLINK_AGENT_DB") {
		t.Errorf("no warning about INTERLINK_AGENT_DB:\n%s", p.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(f.dir, "agent.db")); !os.IsNotExist(err) {
		t.Errorf("agent.db was created: %v", err)
	}
}

// Closing stdin takes the session off the roster and exits 0.
func TestServerStdinClose(t *testing.T) {
	url := bustest.Start(t, nil)
	f := newAgentFiles(t)
	p := launchMCP(t, f.env(url, "INTERLINK_SESSION=s-close"))
	p.initialize()
	waitFor(t, "the session on the roster", func() bool { return onRoster(url, f.pubkey(), "s-close") })
	if code := p.closeAndWait(); code != 0 {
		t.Errorf("exit status %d\n%s", code, p.stderr.String())
	}
	if onRoster(url, f.pubkey(), "s-close") {
		t.Error("still on the roster after exit")
	}
}

// gate blocks one endpoint of a bus with 503 while set.
type gate struct {
	path    string
	route   string // with route set, only requests whose body names it as "me"
	blocked atomic.Bool
}

func (g *gate) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.blocked.Load() && r.URL.Path == g.path && g.names(r) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"blocked by the test"}`))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// names reports whether r's body names g.route as "me", or true when g
// has no route; it leaves the body for the handler to read.
func (g *gate) names(r *http.Request) bool {
	if g.route == "" {
		return true
	}
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var b struct {
		Me string `json:"me"`
	}
	return err == nil && json.Unmarshal(body, &b) == nil && b.Me == g.route
}

// The two-agent end-to-end test: two identities as separate processes on
// one bus, messages both ways, a sibling reached through self, prefix
// routing, a task from request to result, and a receiver killed between
// its mailbox commit and the bus ack.
func TestTwoAgents(t *testing.T) {
	af, bf := newAgentFiles(t), newAgentFiles(t)
	// The receiver killed is bob's sibling, which has sent nothing and so
	// gets no delivery receipts, only messages: acks are blocked on its
	// route alone, and nothing else queues ahead of the message.
	acks := &gate{path: "/ack", route: bf.pubkey() + "#b-side-7"}
	url := bustest.Start(t, &bustest.Options{Wrap: acks.wrap})
	af.admit(t, "bob", bf)
	bf.admit(t, "alice", af)

	alice := launchMCP(t, af.env(url, "INTERLINK_SESSION=a-main", "INTERLINK_NAME=alice"))
	alice.initialize()
	bob := launchMCP(t, bf.env(url, "INTERLINK_SESSION=b-main", "INTERLINK_NAME=bob"))
	bob.initialize()
	waitFor(t, "bob on the roster", func() bool { return onRoster(url, bf.pubkey(), "b-main") })
	waitFor(t, "alice on the roster", func() bool { return onRoster(url, af.pubkey(), "a-main") })

	// Both ways.
	res := alice.ok("send_message", map[string]any{"to": "bob", "text": "hello bob"})
	if !strings.HasPrefix(res, "queued for bob (b-main)") {
		t.Errorf("send = %q", res)
	}
	bob.waitText("receive_messages", nil, "hello bob")
	bob.ok("send_message", map[string]any{"to": "alice", "text": "hello alice"})
	alice.waitText("receive_messages", nil, "hello alice")

	// A sibling of bob's, reached through self by prefix.
	side := launchMCP(t, bf.env(url, "INTERLINK_SESSION=b-side-7"))
	side.initialize()
	waitFor(t, "bob's sibling on the roster", func() bool { return onRoster(url, bf.pubkey(), "b-side-7") })
	res = bob.ok("send_message", map[string]any{"to": "self", "session": "b-side", "text": "note to my sibling"})
	if !strings.HasPrefix(res, "queued for self (b-side-7)") {
		t.Errorf("self send = %q", res)
	}
	got := side.waitText("receive_messages", nil, "note to my sibling")
	if !strings.Contains(got, `sender="self"`) {
		t.Errorf("sibling view = %q", got)
	}
	// Prefix routing from alice; bob has two live sessions now.
	res = alice.ok("send_message", map[string]any{"to": "bob", "session": "b-si", "text": "for the side session"})
	if !strings.HasPrefix(res, "queued for bob (b-side-7)") {
		t.Errorf("prefix send = %q", res)
	}
	side.waitText("receive_messages", nil, "for the side session")

	// A task: request, update, result.
	alice.ok("send_message", map[string]any{"to": "bob", "session": "b-main", "text": "run the tests", "task_id": "t-9"})
	bob.waitText("receive_messages", nil, "run the tests")
	bob.ok("send_message", map[string]any{"to": "alice", "text": "half done", "task_id": "t-9", "status": "update"})
	alice.waitText("receive_messages", nil, "half done")
	bob.ok("send_message", map[string]any{"to": "alice", "text": "all green", "task_id": "t-9", "status": "result"})
	got = alice.waitText("receive_messages", nil, "all green")
	if !strings.Contains(got, `task="t-9" status="result"`) || strings.Contains(got, "half done") {
		t.Errorf("task view = %q", got)
	}

	// bob consumes everything so far.
	for _, r := range testutil.Receipts(t, bob.ok("receive_messages", map[string]any{"limit": 100})) {
		bob.ok("acknowledge_messages", map[string]any{"messages": []any{r}})
	}
	if got := bob.ok("receive_messages", nil); !strings.HasPrefix(got, "No unread") {
		t.Fatalf("bob not drained: %q", got)
	}
	for _, r := range testutil.Receipts(t, side.ok("receive_messages", map[string]any{"limit": 100})) {
		side.ok("acknowledge_messages", map[string]any{"messages": []any{r}})
	}
	if got := side.ok("receive_messages", nil); !strings.HasPrefix(got, "No unread") {
		t.Fatalf("bob's sibling not drained: %q", got)
	}

	// Killed between commit and ack: the bus keeps the message, the restarted
	// receiver gets it again, and it is shown once.
	acks.blocked.Store(true)
	alice.ok("send_message", map[string]any{"to": "bob", "session": "b-side-7", "text": "survive the crash"})
	mailbox := filepath.Join(bf.state, "mailbox", bf.pubkey(), "b-side-7.json")
	waitFor(t, "the commit to bob's mailbox", func() bool {
		data, _ := os.ReadFile(mailbox)
		return strings.Contains(string(data), "survive the crash")
	})
	if err := side.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	side.wait()
	acks.blocked.Store(false)
	side2 := launchMCP(t, bf.env(url, "INTERLINK_SESSION=b-side-7"))
	side2.initialize()
	waitFor(t, "the redelivery to be acknowledged", func() bool {
		d, err := relay.New(url, nil).Recv(context.Background(), bf.pubkey()+"#b-side-7", 0)
		return err == nil && !d.HasMessage
	})
	got = side2.ok("receive_messages", nil)
	if strings.Count(got, "survive the crash") != 1 {
		t.Fatalf("after restart: %q", got)
	}
	rs := testutil.Receipts(t, got)
	if len(rs) != 1 {
		t.Fatalf("receipts = %v", rs)
	}
	if got := side2.ok("acknowledge_messages", map[string]any{"messages": []any{rs[0]}}); !strings.HasPrefix(got, "Acknowledged 1 ") {
		t.Errorf("ack = %q", got)
	}
	if got := side2.ok("receive_messages", nil); !strings.HasPrefix(got, "No unread") {
		t.Errorf("shown twice: %q", got)
	}
	for _, p := range []*mcpProc{alice, bob, side2} {
		if code := p.closeAndWait(); code != 0 {
			t.Errorf("exit status %d", code)
		}
	}
}
