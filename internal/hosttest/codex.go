//go:build hosttest

package hosttest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// codexVersion is the @openai/codex release the tests run.
const codexVersion = "0.171.0"

// codexCommandTimeout bounds a codex command that does not run a turn.
const codexCommandTimeout = 30 * time.Second

// codexCLI installs the Codex CLI if needed and returns the path of its
// npm launcher, bin/codex.js, which runs the native binary of the platform
// package. It fails the test unless codex --version prints codexVersion.
func codexCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(installNPM(t, "@openai/codex", codexVersion), "node_modules", "@openai", "codex", "bin", "codex.js")
	ctx, cancel := context.WithTimeout(context.Background(), codexCommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Env = hostEnv(t.TempDir())
	// It prints "codex-cli 0.171.0", and warnings on stderr.
	out, err := cmd.Output()
	if got := strings.TrimSpace(string(out)); err != nil || got != "codex-cli "+codexVersion {
		t.Fatalf("hosttest: %s --version: %q (error %v), want codex-cli %s", bin, got, err, codexVersion)
	}
	return bin
}

// codexHost runs codex with a private HOME and CODEX_HOME, configured by
// [newCodexHost].
type codexHost struct {
	host             // env: see [newCodexHost]
	codexHome string // home/.codex
	config    string // codexHome/config.toml
}

// newCodexHost prepares to run bin with home as HOME and home/.codex as
// CODEX_HOME. Its config.toml is what interlink-mcp setup codex prints,
// with serverEnv added to the interlink server's env table (Codex starts
// MCP servers with a filtered environment, so the test's settings must go
// there), default_tools_approval_mode "approve" for the server, and a
// custom model provider at the fake model's URL. No variable of the test's
// own environment that configures Codex or the OpenAI API passes.
func newCodexHost(t testing.TB, bin, home, modelURL string, serverEnv ...string) *codexHost {
	t.Helper()
	codexHome := filepath.Join(home, ".codex")
	own := func(name string) bool { return strings.HasPrefix(name, "OPENAI_") || name == "RUST_LOG" }
	h := &codexHost{host: newHost(t, "codex", bin, home, own, codexHome), codexHome: codexHome}
	h.config = filepath.Join(h.codexHome, "config.toml")
	h.env = append(h.env, "CODEX_HOME="+h.codexHome)

	setup := codexSetup(t, home, h.codexHome)
	// Codex runs the server by this absolute path, not from PATH.
	if want := "command = " + strconv.Quote(filepath.Join(binaries(t), "interlink-mcp")) + "\n"; !strings.Contains(setup, want) {
		t.Errorf("hosttest: interlink-mcp setup codex has no line %q:\n%s", want, setup)
	}
	var env strings.Builder
	for _, kv := range serverEnv {
		name, value, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&env, "%s = %s\n", name, strconv.Quote(value))
	}
	for _, edit := range []struct{ after, insert string }{
		{"args = [\"--host\", \"codex\"]\n", "default_tools_approval_mode = \"approve\"\n"},
		{"[mcp_servers.interlink.env]\n", env.String()},
	} {
		if !strings.Contains(setup, edit.after) {
			t.Fatalf("hosttest: interlink-mcp setup codex has no line %q:\n%s", edit.after, setup)
		}
		setup = strings.Replace(setup, edit.after, edit.after+edit.insert, 1)
	}
	config := fmt.Sprintf(`model = "hosttest-model"
model_provider = "hosttest"
model_reasoning_effort = "low"
check_for_update_on_startup = false

[analytics]
enabled = false

[features]
hooks = true
plugins = false
apps = false

[model_providers.hosttest]
name = "hosttest"
base_url = %s
wire_api = "responses"
requires_openai_auth = false
request_max_retries = 0
stream_max_retries = 0

%s`, strconv.Quote(modelURL), setup)
	if err := os.WriteFile(h.config, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return h
}

// codexSetup returns what interlink-mcp setup codex prints with
// CODEX_HOME set to codexHome.
func codexSetup(t testing.TB, home, codexHome string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binaries(t), "interlink-mcp"), "setup", "codex")
	cmd.Env = hostEnv(home, "CODEX_HOME="+codexHome)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hosttest: interlink-mcp setup codex: %v\n%s", err, stderr.String())
	}
	return string(out)
}

// codexHook is one entry of the app server's hooks/list.
type codexHook struct {
	Key         string `json:"key"`
	EventName   string `json:"eventName"`
	HandlerType string `json:"handlerType"`
	Server      string `json:"server"`
	Tool        string `json:"tool"`
	Matcher     string `json:"matcher"`
	TrustStatus string `json:"trustStatus"`
	CurrentHash string `json:"currentHash"`
	Source      string `json:"source"`
	Enabled     bool   `json:"enabled"`
}

// trustFlags returns the -c flags that trust hooks for one invocation, as
// if the operator had reviewed them, without saving anything. The keys
// hold the config file's path, whose dots a dotted -c path would split, so
// the whole hooks.state table is one inline table.
func trustFlags(hooks []codexHook) []string {
	var entries []string
	for _, h := range hooks {
		entries = append(entries, fmt.Sprintf("%s={trusted_hash=%s}", strconv.Quote(h.Key), strconv.Quote(h.CurrentHash)))
	}
	return []string{"-c", "hooks.state={" + strings.Join(entries, ",") + "}"}
}

// saveTrust trusts hooks in the config file, as reviewing them in /hooks
// does.
func saveTrust(t testing.TB, config string, hooks []codexHook) {
	t.Helper()
	var b strings.Builder
	for _, h := range hooks {
		fmt.Fprintf(&b, "\n[hooks.state.%s]\ntrusted_hash = %s\n", strconv.Quote(h.Key), strconv.Quote(h.CurrentHash))
	}
	f, err := os.OpenFile(config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(b.String()); err != nil {
		t.Fatal(err)
	}
}

// queueStub writes an executable that stands in for codex as interlink-mcp
// runs it: each run saves its arguments, NUL-terminated, in a file of its
// own in the returned folder, named run-<pid> for a queue command and
// other-<pid> for anything else, and exits 0 for queue, else 1.
func queueStub(t testing.TB, dir string) (bin, runs string) {
	t.Helper()
	runs = filepath.Join(dir, "stub-runs")
	if err := os.MkdirAll(runs, 0o755); err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "codex-queue-stub")
	script := fmt.Sprintf(`#!/bin/sh
dir=%s
name=other
[ "$1" = queue ] && name=run
printf '%%s\0' "$@" > "$dir/.$name-$$"
mv "$dir/.$name-$$" "$dir/$name-$$"
[ "$name" = run ]
`, shellQuote(runs))
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, runs
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// stubRuns returns the argument lists the stub saved, by file name.
func stubRuns(t testing.TB, runs string) map[string][]string {
	t.Helper()
	entries, err := os.ReadDir(runs)
	if err != nil {
		t.Fatal(err)
	}
	found := make(map[string][]string)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue // still being written
		}
		data, err := os.ReadFile(filepath.Join(runs, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		found[e.Name()] = strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
	}
	return found
}
