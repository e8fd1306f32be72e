//go:build hosttest

package hosttest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
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

func errString(err error) string {
	if err == nil {
		return ""
	}
	return "(" + err.Error() + ")"
}

// claudeHost runs the claude executable with a private HOME, configuration
// folder and state folders, pointed at a fake model.
type claudeHost struct {
	bin  string
	home string
	dir  string   // the working directory: a project folder in home
	env  []string // see [newClaudeHost]
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
	h := &claudeHost{bin: bin, home: home, dir: filepath.Join(home, "project")}
	for _, d := range []string{h.dir, filepath.Join(home, ".claude-config")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, kv := range hostEnv(home) {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "ANTHROPIC_") || strings.HasPrefix(name, "CLAUDE_") {
			continue
		}
		h.env = append(h.env, kv)
	}
	h.env = append(h.env,
		"CLAUDE_CONFIG_DIR="+filepath.Join(home, ".claude-config"),
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"ANTHROPIC_API_KEY=sk-ant-hosttest-not-a-key",
		"ANTHROPIC_BASE_URL="+modelURL,
	)
	h.env = append(h.env, extra...)
	return h
}

// command returns a command running claude with args in h's folder and
// environment.
func (h *claudeHost) command(args ...string) *exec.Cmd {
	cmd := exec.Command(h.bin, args...)
	cmd.Dir = h.dir
	cmd.Env = h.env
	return cmd
}

// run runs claude with args and no input for up to timeout and returns
// its stdout; a failed run fails the test.
func (h *claudeHost) run(t testing.TB, timeout time.Duration, args ...string) string {
	t.Helper()
	cmd := h.command(args...)
	var stdout lockedBuffer
	cmd.Stdout = &stdout
	p := start(t, "claude "+strings.Join(args[:min(2, len(args))], " "), cmd)
	if err := p.wait(t, timeout); err != nil {
		t.Fatalf("hosttest: claude %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), p.stderr.String())
	}
	return stdout.String()
}

// claudeTurnTimeout bounds a claude run of a few turns against the fake
// model; each turn takes a second or two.
const claudeTurnTimeout = 60 * time.Second
