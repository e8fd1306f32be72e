//go:build hosttest

package hosttest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// claudeVersion is the @anthropic-ai/claude-code release the tests run.
const claudeVersion = "2.1.332"

// claudeCommandTimeout bounds a claude command that does not talk to the
// model, such as claude mcp list, which starts and checks every server.
const claudeCommandTimeout = 30 * time.Second

// claudeCLI installs Claude Code if needed and returns the path of an
// executable that prints claudeVersion for --version.
//
// The package's bin/claude.exe is a placeholder that its postinstall
// replaces with the native binary of the platform package (a hard link);
// if that did not happen, the platform package's own binary is used.
func claudeCLI(t *testing.T) string {
	t.Helper()
	modules := filepath.Join(installNPM(t, "@anthropic-ai/claude-code", claudeVersion), "node_modules", "@anthropic-ai")
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	platform := "claude-code-" + runtime.GOOS + "-" + arch
	candidates := []string{
		filepath.Join(modules, "claude-code", "bin", "claude.exe"),
		filepath.Join(modules, platform, "claude"),
		filepath.Join(modules, platform+"-musl", "claude"),
	}
	var failures []string
	for _, path := range candidates {
		if _, err := os.Stat(path); err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), claudeCommandTimeout)
		out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput()
		cancel()
		// It prints "2.1.332 (Claude Code)".
		if version, _, _ := strings.Cut(strings.TrimSpace(string(out)), " "); err == nil && version == claudeVersion {
			return path
		}
		failures = append(failures, path+": "+strings.TrimSpace(firstLines(out, 3))+" "+errString(err))
	}
	t.Fatalf("hosttest: no Claude Code executable printing %s for --version; tried:\n%s",
		claudeVersion, strings.Join(failures, "\n"))
	return ""
}

// errString is err in parentheses, or "" for nil.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return "(" + err.Error() + ")"
}

// claudeHost runs the claude executable with a private HOME, configuration
// folder and state folders, pointed at a fake model.
type claudeHost struct {
	host // env: see [newClaudeHost]
}

// newClaudeHost prepares to run bin with home as HOME: no variables of
// the test's own environment that configure Claude Code or the Anthropic
// API pass, CLAUDE_CONFIG_DIR is a folder in home, XDG_STATE_HOME is set
// as [hostEnv] sets it, nonessential traffic is off and the API is the one
// at modelURL, with a dummy key. extra comes last.
//
// With ANTHROPIC_BASE_URL on loopback, Claude Code 2.1.332 also skips its
// fetches of remote managed settings and policy limits, which without a
// network it retries for about 18 s before each command.
func newClaudeHost(t testing.TB, bin, home, modelURL string, extra ...string) *claudeHost {
	t.Helper()
	own := func(name string) bool {
		return strings.HasPrefix(name, "ANTHROPIC_") || strings.HasPrefix(name, "CLAUDE_")
	}
	h := &claudeHost{host: newHost(t, "claude", bin, home, own, filepath.Join(home, ".claude-config"))}
	h.env = append(h.env,
		"CLAUDE_CONFIG_DIR="+filepath.Join(home, ".claude-config"),
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"ANTHROPIC_API_KEY=sk-ant-hosttest-not-a-key",
		"ANTHROPIC_BASE_URL="+modelURL,
	)
	h.env = append(h.env, extra...)
	return h
}

// claudeTurnTimeout bounds a claude run of a few turns against the fake
// model; each turn takes a second or two.
const claudeTurnTimeout = 60 * time.Second

// readLine returns the next line q collects from the output of p, waiting
// up to timeout; it fails the test when p exits first.
func readLine(t testing.TB, p *proc, q *lineQueue, timeout time.Duration) []byte {
	t.Helper()
	deadline := time.After(timeout)
	for {
		// Check for a line before the exit: both may be ready.
		if line, ok := q.next(); ok {
			return line
		}
		select {
		case <-q.added:
		case <-p.done:
			if line, ok := q.next(); ok {
				return line
			}
			t.Fatalf("hosttest: %s exited (%v)", p.name, p.err)
		case <-deadline:
			t.Fatalf("hosttest: %s: no output line within %v", p.name, timeout)
		}
	}
}

// claudeResult is the result event of a turn, the only output of
// --output-format json and the last event of a turn in stream-json.
type claudeResult struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	IsError   bool   `json:"is_error"`
	Result    string `json:"result"`
	SessionID string `json:"session_id"`
	NumTurns  int    `json:"num_turns"`
}

// claudeSession is claude --print in stream-json mode: a session that
// takes user messages on stdin, one JSON line each, and writes events on
// stdout, until its stdin closes.
type claudeSession struct {
	p      *proc
	stdin  io.WriteCloser
	events *lineQueue
}

// startSession starts claude with args, which must select stream-json
// input and output.
func (h *claudeHost) startSession(t testing.TB, args ...string) *claudeSession {
	t.Helper()
	cmd := h.command(args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &claudeSession{stdin: stdin, events: newLineQueue()}
	cmd.Stdout = s.events
	s.p = start(t, "claude session", cmd)
	killDetached(t, s.p)
	return s
}

// send writes a user message.
func (s *claudeSession) send(t testing.TB, text string) {
	t.Helper()
	line, err := json.Marshal(map[string]any{
		"type":    "user",
		"message": map[string]any{"role": "user", "content": text},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.stdin.Write(append(line, '\n')); err != nil {
		t.Fatalf("hosttest: claude session: write a user message: %v", err)
	}
}

// nextResult skips events up to the next result, which it returns.
func (s *claudeSession) nextResult(t testing.TB, timeout time.Duration) claudeResult {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		line := readLine(t, s.p, s.events, time.Until(deadline))
		var r claudeResult
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("hosttest: claude session: bad event %q: %v", line, err)
		}
		if r.Type == "result" {
			t.Logf("claude session: result %s", abbreviate(string(line), 400))
			return r
		}
	}
}

// newUUID returns a random (version 4) UUID.
func newUUID(t testing.TB) string {
	t.Helper()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// wakeTimeout bounds the time from a peer's send to the turn that the Stop
// hook starts: delivery through the bus, the server's notice (checked every
// second) and the listener's poll (every 400 ms).
const wakeTimeout = 20 * time.Second

// killDetached registers a cleanup, which runs before the one of [start],
// that stops p's process group, then kills every process descended from p
// and the process group of each. Claude Code starts hooks in process groups
// of their own, so killing p's group alone would leave a Stop hook's
// interlink-mcp wait running for up to its renewal time. It finds the
// processes in /proc; elsewhere it only logs that it could not.
func killDetached(t testing.TB, p *proc) {
	t.Cleanup(func() {
		select {
		case <-p.done:
			return // its pid may belong to another process by now
		default:
		}
		pid := p.cmd.Process.Pid
		syscall.Kill(-pid, syscall.SIGSTOP) // no new children meanwhile
		procs, err := descendants(pid)
		if err != nil {
			t.Logf("hosttest: cannot find the processes %s started: %v", p.name, err)
		}
		own := syscall.Getpgrp()
		for _, d := range procs {
			if d.pgid != pid && d.pgid != own {
				syscall.Kill(-d.pgid, syscall.SIGKILL)
			}
			syscall.Kill(d.pid, syscall.SIGKILL)
		}
	})
}

// procInfo is a process and its parent and group, from /proc.
type procInfo struct{ pid, ppid, pgid int }

// descendants returns the processes descended from pid.
func descendants(pid int) ([]procInfo, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	children := make(map[int][]procInfo)
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // it ended
		}
		// "pid (comm) state ppid pgrp ...", where comm may hold anything.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 3 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgid, _ := strconv.Atoi(f[2])
		children[ppid] = append(children[ppid], procInfo{n, ppid, pgid})
	}
	var found []procInfo
	queue := []int{pid}
	for len(queue) > 0 {
		for _, c := range children[queue[0]] {
			found = append(found, c)
			queue = append(queue, c.pid)
		}
		queue = queue[1:]
	}
	return found, nil
}
