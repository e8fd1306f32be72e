package main

// Tests of the bus as a process: each starts the test binary as
// interlink-bus (see TestMain) on 127.0.0.1 with a free port, talks HTTP to
// it, and signals or kills it. Every process is killed at cleanup.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/testutil"
)

// startTimeout bounds how long a bus may take to log "bus listening".
const startTimeout = 10 * time.Second

// busProc is a running interlink-bus process.
type busProc struct {
	cmd  *exec.Cmd
	logs *testutil.LockedBuffer
	done chan struct{} // closed when the process has exited
	code int           // exit status, valid after done
	base string        // http://ADDR, once listening
}

// busEnv returns this process's environment without any INTERLINK_
// variable, plus extra.
func busEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "INTERLINK_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// launch starts interlink-bus with args and the environment env (see
// [busEnv]) and returns at once.
func launch(t testing.TB, env []string, args ...string) *busProc {
	t.Helper()
	path, err := exec.LookPath("interlink-bus")
	if err != nil {
		t.Fatalf("interlink-bus is not on PATH (TestMain puts it there): %v", err)
	}
	p := &busProc{logs: &testutil.LockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(path, args...)
	p.cmd.Env = env
	p.cmd.Stdout = p.logs
	p.cmd.Stderr = p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("interlink-bus %s output:\n%s", strings.Join(args, " "), p.logs.String())
		}
	})
	return p
}

var listeningRE = regexp.MustCompile(`msg="bus listening" addr=(\S+) cap=(\d+)`)

// startBus launches interlink-bus and waits until it logs that it listens.
func startBus(t testing.TB, env []string, args ...string) *busProc {
	t.Helper()
	p := launch(t, env, args...)
	testutil.EventuallyNil(t, startTimeout, "interlink-bus to listen", func() error {
		select {
		case <-p.done:
			t.Fatalf("interlink-bus exited with status %d before listening:\n%s", p.code, p.logs.String())
		default:
		}
		logs := p.logs.String()
		m := listeningRE.FindStringSubmatch(logs)
		if m == nil {
			return fmt.Errorf("its log so far:\n%s", logs)
		}
		p.base = "http://" + m[1]
		return nil
	})
	return p
}

// wait waits up to timeout for the process to exit and returns its status.
func (p *busProc) wait(t testing.TB, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(timeout):
		t.Fatalf("interlink-bus still running after %v:\n%s", timeout, p.logs.String())
		return -1
	}
}

// stop sends SIGTERM and requires a clean exit within a few seconds.
func (p *busProc) stop(t testing.TB) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, 5*time.Second); code != 0 {
		t.Fatalf("interlink-bus exited with status %d after SIGTERM, want 0:\n%s", code, p.logs.String())
	}
}

// httpc is the tests' HTTP client; the bound keeps a wedged bus from
// hanging a test.
var httpc = &http.Client{Timeout: 10 * time.Second}

// post sends body as JSON to the bus and returns the status code.
func post(t testing.TB, base, path string, body any) int {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpc.Post(base+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// send posts payload to route and requires 202.
func send(t testing.TB, base, route string, payload any) {
	t.Helper()
	if code := post(t, base, "/send", map[string]any{"to": route, "payload": payload}); code != http.StatusAccepted {
		t.Fatalf("send to %q: status %d", route, code)
	}
}

// polled is a /recv response.
type polled struct {
	Status   string `json:"status"`
	Ack      string `json:"ack"`
	Envelope struct {
		Payload json.RawMessage `json:"payload"`
	} `json:"envelope"`
}

// recv polls route without waiting.
func recv(t testing.TB, base, route string) polled {
	t.Helper()
	resp, err := httpc.Get(base + "/recv?timeout_ms=0&me=" + url.QueryEscape(route))
	if err != nil {
		t.Fatalf("recv %q: %v", route, err)
	}
	defer resp.Body.Close()
	var p polled
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("recv %q: status %d", route, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatalf("recv %q: %v", route, err)
	}
	return p
}

// drain polls and acknowledges route until it is empty and returns the
// payloads in the order received.
func drain(t testing.TB, base, route string) []string {
	t.Helper()
	var out []string
	for {
		p := recv(t, base, route)
		if p.Status != "message" {
			return out
		}
		out = append(out, string(p.Envelope.Payload))
		if code := post(t, base, "/ack", map[string]string{"me": route, "ack": p.Ack}); code != http.StatusOK {
			t.Fatalf("ack on %q: status %d", route, code)
		}
	}
}

// get fetches path and returns the status and body.
func get(t testing.TB, base, path string) (int, string) {
	t.Helper()
	resp, err := httpc.Get(base + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// logLines returns the log lines whose msg is msg.
func logLines(logs, msg string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		if strings.Contains(sc.Text(), fmt.Sprintf("msg=%q", msg)) {
			out = append(out, sc.Text())
		}
	}
	return out
}
