package main

// Tests of the Stop-hook listener as a process: notices, modes, renewal,
// the one listener per session, and the session id it shares with the
// server.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/budget"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/inbox"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/testutil"
)

// waitRun is one finished run of interlink-mcp wait.
type waitRun struct {
	code           int
	stdout, stderr string
}

// runWaitProcess runs interlink-mcp wait with env, stdin and args, bounded to 30 s.
func runWaitProcess(t testing.TB, env []string, stdin string, args ...string) waitRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "interlink-mcp", append([]string{"wait"}, args...)...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("wait %v did not finish", args)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("wait %v: %v", args, err)
	}
	return waitRun{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
}

// sendSigned posts a plain message from f (session from) to route rt.
func sendSigned(t testing.TB, url string, f *agentFiles, from string, to *agentFiles, rt, text string) identity.Message {
	t.Helper()
	id, err := identity.NewMsgID(nil)
	if err != nil {
		t.Fatal(err)
	}
	m := identity.Message{From: f.pubkey(), To: to.pubkey(), Text: text, TS: identity.Millis(time.Now()), MsgID: id,
		Kind: identity.KindMessage, ReplyTo: f.pubkey() + "#" + from}
	if err := f.signer.SignMessage(&m); err != nil {
		t.Fatal(err)
	}
	p, _ := m.MarshalJSON()
	if err := relay.New(url, nil).Send(context.Background(), rt, p); err != nil {
		t.Fatal(err)
	}
	return m
}

// noticeID extracts the id from a notice text.
func noticeID(t testing.TB, text string) string {
	t.Helper()
	_, rest, ok := strings.Cut(text, `notification_id="`)
	if !ok {
		t.Fatalf("no notification id in %q", text)
	}
	id, _, _ := strings.Cut(rest, `"`)
	return id
}

// A message at a running server becomes a notice that
// wait prints on stderr (no body) with exit 2; the cursor moves to the end
// of the inbox; the notice survives a server restart.
func TestWaitNotice(t *testing.T) {
	url := bustest.Start(t, nil)
	bob, alice := newAgentFiles(t), newAgentFiles(t)
	bob.admit(t, "alice", alice)
	env := bob.env(url, "INTERLINK_SESSION=b1")
	srv := launchMCP(t, env)
	srv.initialize()
	sendSigned(t, url, alice, "a1", bob, bob.pubkey()+"#b1", "the secret body")
	inboxPath := filepath.Join(bob.state, "inbox", "b1.jsonl")
	waitFor(t, "the notice in the inbox", func() bool {
		data, _ := os.ReadFile(inboxPath)
		return bytes.Contains(data, []byte("receive_messages"))
	})
	// Server 1 ends; a new server of the session takes over.
	if code := srv.closeAndWait(); code != 0 {
		t.Fatalf("server exit %d", code)
	}
	srv2 := launchMCP(t, env)
	srv2.initialize()

	r := runWaitProcess(t, bob.env(url), "", "--session", "b1")
	if r.code != 2 || r.stdout != "" {
		t.Fatalf("wait = %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "receive_messages") || !strings.Contains(r.stderr, `notification_id="`) ||
		strings.Contains(r.stderr, "the secret body") || !strings.HasPrefix(r.stderr, budget.WakeLine+"\n[interlink notice]") {
		t.Errorf("stderr = %q", r.stderr)
	}
	data, _ := os.ReadFile(inboxPath)
	cur, _ := os.ReadFile(filepath.Join(bob.state, "inbox", "b1.cursor"))
	if n, _ := strconv.Atoi(string(cur)); n != len(data) {
		t.Errorf("cursor %s, inbox %d bytes", cur, len(data))
	}
	got := srv2.ok("receive_messages", map[string]any{"notification_id": noticeID(t, r.stderr)})
	if !strings.Contains(got, "the secret body") {
		t.Errorf("receive_messages = %q", got)
	}
}

// The listener is silent in channel mode, prints a renewal notice when its
// time is up, never exits 2 on a usage error, and takes its session from
// the flag or environment, then the hook's input, then "main".
func TestWaitModes(t *testing.T) {
	f := newAgentFiles(t)
	env := f.env("http://127.0.0.1:1")

	// Channel mode: nothing at all.
	if r := runWaitProcess(t, append(env, "INTERLINK_CHANNELS=true"), "", "--session", "s1"); r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Errorf("channel mode: %+v", r)
	}
	// Renewal, cursor unchanged (absent).
	r := runWaitProcess(t, env, "", "--session", "s1", "--renew-after-secs", "1")
	if r.code != 2 || !strings.HasPrefix(r.stderr, budget.WakeLine+"\n[interlink listener renewal]") || r.stdout != "" {
		t.Errorf("renewal: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(f.state, "inbox", "s1.cursor")); !os.IsNotExist(err) {
		t.Errorf("cursor written by a renewal: %v", err)
	}
	// Usage errors are never status 2.
	for _, args := range [][]string{{"--renew-after-secs", "0"}, {"--renew-after-secs", "3001"}, {"--renew-after-secs", "x"}, {"--bogus"}, {"--session", "../up"}} {
		if r := runWaitProcess(t, env, "", args...); r.code == 2 || r.code == 0 {
			t.Errorf("wait %v: status %d", args, r.code)
		}
	}

	// Session sources: flag/env, then the hook payload, then "main".
	write := func(session, line string) {
		dir := filepath.Join(f.state, "inbox")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		fh, err := os.OpenFile(filepath.Join(dir, session+".jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		if _, err := fh.WriteString(line + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	rec := func(content string) string {
		b, _ := json.Marshal(map[string]string{"sender": "Interlink", "msg_id": "n1", "content": content})
		return string(b)
	}
	write("from-stdin", rec("for the payload session"))
	write("main", rec("for main"))
	write("from-env", rec("for the env session"))
	payload := `{"session_id":"from-stdin","hook_event_name":"Stop","stop_hook_active":false}`
	if r := runWaitProcess(t, env, payload); r.code != 2 || !strings.Contains(r.stderr, "for the payload session") {
		t.Errorf("session from stdin: %+v", r)
	}
	if r := runWaitProcess(t, env, "not json"); r.code != 2 || !strings.Contains(r.stderr, "for main") {
		t.Errorf("main fallback: %+v", r)
	}
	if r := runWaitProcess(t, append(env, "INTERLINK_SESSION=from-env"), payload); r.code != 2 || !strings.Contains(r.stderr, "for the env session") {
		t.Errorf("session from env: %+v", r)
	}
}

// While one listener holds the session, a second exits 0 at once.
func TestWaitDuplicateListener(t *testing.T) {
	f := newAgentFiles(t)
	env := f.env("http://127.0.0.1:1")
	first := exec.Command("interlink-mcp", "wait", "--session", "dup", "--renew-after-secs", "30")
	first.Env = env
	firstErr := &testutil.LockedBuffer{}
	first.Stderr = firstErr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = first.Process.Kill(); _ = first.Wait() })
	waitListening(t, f.state, "dup")
	start := time.Now()
	r := runWaitProcess(t, env, "", "--session", "dup")
	if r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Errorf("second listener: %+v", r)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("second listener took %v", d)
	}
	if s := firstErr.String(); s != "" {
		t.Errorf("first listener wrote %q", s)
	}
}

// waitListening waits until a listener holds the lock of session under
// state.
func waitListening(t testing.TB, state, session string) {
	t.Helper()
	box, err := inbox.Open(state, session)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the listener of "+session+" to hold its lock", func() bool {
		held, err := box.Listening()
		if err != nil {
			t.Fatal(err)
		}
		return held
	})
}
