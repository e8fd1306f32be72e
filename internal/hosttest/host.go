//go:build hosttest

package hosttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/testutil"
)

// host runs the executable of an MCP host, such as claude or codex, in a
// project folder of a private HOME, with an environment of its own.
type host struct {
	name string // the executable's name in process names and messages
	bin  string
	home string
	dir  string   // the working directory: a project folder in home
	env  []string // hostEnv(home) without the host's own variables, then what the host adds
}

// newHost prepares to run bin, the executable called name, with home as
// HOME, in the folder home/project, and an environment that is
// [hostEnv]'s without the variables for which own is true. It creates the
// project folder and dirs.
func newHost(t testing.TB, name, bin, home string, own func(variable string) bool, dirs ...string) host {
	t.Helper()
	h := host{name: name, bin: bin, home: home, dir: filepath.Join(home, "project")}
	for _, d := range append([]string{h.dir}, dirs...) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, kv := range hostEnv(home) {
		if variable, _, _ := strings.Cut(kv, "="); !own(variable) {
			h.env = append(h.env, kv)
		}
	}
	return h
}

// command returns a command running the host with args in h's folder and
// environment.
func (h *host) command(args ...string) *exec.Cmd {
	cmd := exec.Command(h.bin, args...)
	cmd.Dir = h.dir
	cmd.Env = h.env
	return cmd
}

// run runs the host with args and no input for up to timeout and returns
// its stdout; a failed run fails the test. A run still going when the test
// ends is stopped with what it started, by [killDetached].
func (h *host) run(t testing.TB, timeout time.Duration, args ...string) string {
	t.Helper()
	cmd := h.command(args...)
	var stdout testutil.LockedBuffer
	cmd.Stdout = &stdout
	p := start(t, h.name+" "+strings.Join(args[:min(3, len(args))], " "), cmd)
	killDetached(t, p)
	if err := p.wait(t, timeout); err != nil {
		t.Fatalf("hosttest: %s %s: %v\nstdout:\n%s\nstderr:\n%s", h.name, strings.Join(args, " "), err, stdout.String(), p.stderr.String())
	}
	return stdout.String()
}
