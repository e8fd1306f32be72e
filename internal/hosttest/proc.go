//go:build hosttest

package hosttest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/testutil"
)

// Bounds of the waits on processes.
const (
	buildTimeout = 5 * time.Minute
	startTimeout = 10 * time.Second
	// exitTimeout bounds the wait for a killed or finished process.
	exitTimeout = 10 * time.Second
)

// The binaries are built once per test binary run, into binDir.
var (
	buildOnce sync.Once
	binDir    string
	buildOut  []byte
	buildErr  error
	borrowed  bool // binDir belongs to another run
)

// binEnv names a folder that holds the binaries already built, for a test
// run that another one starts.
const binEnv = "INTERLINK_HOSTTEST_BIN"

// binaries builds interlink-bus and interlink-mcp without cgo, once per test
// binary run, and returns the folder that holds them.
func binaries(t testing.TB) string {
	t.Helper()
	root := repoRoot(t)
	buildOnce.Do(func() {
		if dir := os.Getenv(binEnv); dir != "" {
			binDir, borrowed = dir, true // built by the run that started this one
			return
		}
		binDir, buildErr = os.MkdirTemp("", "interlink-hosttest-bin-")
		if buildErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", binDir+string(filepath.Separator),
			"./cmd/interlink-bus", "./cmd/interlink-mcp")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("hosttest: go build: %v\n%s", buildErr, buildOut)
	}
	return binDir
}

// removeBinaries deletes what [binaries] built; TestMain calls it.
func removeBinaries() {
	if binDir != "" && !borrowed {
		os.RemoveAll(binDir)
	}
}

// hostEnv returns this process's environment for a spawned process,
// without the variables that point at the user's files or at the host this
// test may itself run under, and with HOME set to home and XDG_STATE_HOME to
// a folder inside it; extra comes last.
func hostEnv(home string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !inherited(name) {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "XDG_STATE_HOME="+filepath.Join(home, ".local", "state"))
	return append(env, extra...)
}

// inherited reports whether hostEnv passes the variable name on.
func inherited(name string) bool {
	for _, prefix := range []string{"INTERLINK_", "XDG_", "CLAUDE_PLUGIN_", "CODEX_"} {
		if strings.HasPrefix(name, prefix) {
			return false
		}
	}
	switch name {
	case "HOME", "USERPROFILE", "CLAUDECODE", "CLAUDE_CODE_SESSION_ID", "CLAUDE_CONFIG_DIR", "CLAUDE_PROJECT_DIR":
		return false
	}
	return true
}

// proc is a started process. It runs in a process group of its own, so that
// the children it spawns (an MCP server under a node client) end with it.
type proc struct {
	name   string
	cmd    *exec.Cmd
	stderr *testutil.LockedBuffer
	done   chan struct{} // closed when the process has exited
	err    error         // from Wait, valid after done
}

// start starts cmd, whose Stderr must be unset, and registers a cleanup that
// kills its process group by id and waits for it. The cleanup logs what the
// process wrote to stderr when the test failed or runs with -v, so failure
// messages need not repeat it.
func start(t testing.TB, name string, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{name: name, cmd: cmd, stderr: &testutil.LockedBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		t.Fatalf("hosttest: start %s: %v", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		// The group id is the leader's pid; the group outlives a leader
		// whose children still run.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(exitTimeout):
			t.Errorf("hosttest: %s (pid %d) still running %v after SIGKILL", name, cmd.Process.Pid, exitTimeout)
		}
		if t.Failed() || testing.Verbose() {
			t.Logf("hosttest: %s stderr:\n%s", name, p.stderr.String())
		}
	})
	return p
}

// wait waits up to timeout for the process to exit and returns Wait's error.
func (p *proc) wait(t testing.TB, timeout time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		t.Fatalf("hosttest: %s still running after %v", p.name, timeout)
		return nil
	}
}

// listeningRE finds the address in the bus's "bus listening" log line.
var listeningRE = regexp.MustCompile(`msg="bus listening" addr=(\S+)`)

// startBus starts interlink-bus on a free loopback port, with its queues in
// memory, and returns its base URL.
func startBus(t testing.TB, home string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(binaries(t), "interlink-bus"), "--addr", "127.0.0.1:0", "--log-level", "debug")
	cmd.Env = hostEnv(home)
	p := start(t, "interlink-bus", cmd)
	deadline := time.After(startTimeout)
	for {
		if m := listeningRE.FindStringSubmatch(p.stderr.String()); m != nil {
			return "http://" + m[1]
		}
		select {
		case <-p.done:
			t.Fatalf("hosttest: interlink-bus exited before listening (%v)", p.err)
		case <-deadline:
			t.Fatalf("hosttest: interlink-bus did not listen within %v", startTimeout)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// keygen creates a secret key file at path with interlink-mcp keygen.
func keygen(t testing.TB, home, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binaries(t), "interlink-mcp"), "keygen", "--out", path)
	cmd.Env = hostEnv(home)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hosttest: interlink-mcp keygen: %v\n%s", err, out)
	}
}
