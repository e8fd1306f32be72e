package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// setup claude writes a plugin whose commands name this binary by absolute
// path, whose server declares the environment the hooks see, and whose
// hooks are the Stop listener and the progress reminder.
func TestSetupClaude(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(t.TempDir(), "plugin")
	var out, errOut bytes.Buffer
	c := &cli{stdout: &out, stderr: &errOut, getenv: func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}}
	if code := c.run(t.Context(), []string{"setup", "claude", "--dir", dir}, nil); code != 0 {
		t.Fatalf("setup claude = %d: %s", code, errOut.String())
	}
	bin, err := c.executable()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "claude --plugin-dir "+dir) {
		t.Errorf("output lacks the load command:\n%s", out.String())
	}
	var manifest struct{ Name string }
	readJSON(t, filepath.Join(dir, ".claude-plugin", "plugin.json"), &manifest)
	if manifest.Name != "interlink" {
		t.Errorf("plugin name %q", manifest.Name)
	}
	var mcpCfg struct {
		MCPServers map[string]struct {
			Command string
			Args    []string
			Env     map[string]string
		} `json:"mcpServers"`
	}
	readJSON(t, filepath.Join(dir, ".mcp.json"), &mcpCfg)
	srv := mcpCfg.MCPServers["interlink"]
	if srv.Command != bin || !filepath.IsAbs(srv.Command) {
		t.Errorf("server command %q, want %q", srv.Command, bin)
	}
	wantEnv := map[string]string{
		"INTERLINK_KEY":       "${INTERLINK_KEY:-" + filepath.Join(home, ".config", "interlink", "id.key") + "}",
		"INTERLINK_PEERS":     "${INTERLINK_PEERS:-" + filepath.Join(home, ".config", "interlink", "peers.json") + "}",
		"INTERLINK_URL":       "${INTERLINK_URL:-http://127.0.0.1:9440}",
		"INTERLINK_CHANNELS":  "${INTERLINK_CHANNELS:-0}",
		"INTERLINK_STATE_DIR": "${INTERLINK_STATE_DIR:-}",
		"XDG_STATE_HOME":      "${XDG_STATE_HOME:-}",
	}
	for k, v := range wantEnv {
		if srv.Env[k] != v {
			t.Errorf("env %s = %q, want %q", k, srv.Env[k], v)
		}
	}
	for _, k := range []string{"INTERLINK_NAME", "INTERLINK_LOG_LEVEL"} {
		if _, ok := srv.Env[k]; !ok {
			t.Errorf("env %s not declared", k)
		}
	}
	var hooks struct {
		Hooks map[string][]struct {
			Matcher string
			Hooks   []struct {
				Type        string
				Command     string
				Async       bool
				AsyncRewake bool `json:"asyncRewake"`
				Timeout     int
			}
		}
	}
	readJSON(t, filepath.Join(dir, "hooks", "hooks.json"), &hooks)
	stop := hooks.Hooks["Stop"]
	if len(stop) != 1 || len(stop[0].Hooks) != 1 {
		t.Fatalf("Stop hooks = %+v", stop)
	}
	if h := stop[0].Hooks[0]; h.Type != "command" || h.Command != shellQuote(bin)+" wait" || !h.Async || !h.AsyncRewake || h.Timeout != 3600 {
		t.Errorf("Stop hook = %+v", h)
	}
	post := hooks.Hooks["PostToolUse"]
	if len(post) != 1 || post[0].Matcher != "Bash|Edit|Write" || post[0].Hooks[0].Command != shellQuote(bin)+" nudge" {
		t.Errorf("PostToolUse hooks = %+v", post)
	}
	prompt := hooks.Hooks["UserPromptSubmit"]
	if len(prompt) != 1 || len(prompt[0].Hooks) != 1 || prompt[0].Hooks[0].Command != shellQuote(bin)+" turn" || prompt[0].Hooks[0].Async {
		t.Errorf("UserPromptSubmit hooks = %+v", prompt)
	}
	skill, err := os.ReadFile(filepath.Join(dir, "skills", "interlink", "SKILL.md"))
	if err != nil || !bytes.HasPrefix(skill, []byte("---\nname: interlink\n")) {
		t.Errorf("skill: %v %q", err, skill[:min(len(skill), 40)])
	}

	// With --state-dir the value is fixed in the server and in both hooks.
	state := filepath.Join(t.TempDir(), "st ate")
	out.Reset()
	if code := c.run(t.Context(), []string{"setup", "claude", "--dir", dir, "--state-dir", state}, nil); code != 0 {
		t.Fatalf("setup with --state-dir = %d: %s", code, errOut.String())
	}
	readJSON(t, filepath.Join(dir, ".mcp.json"), &mcpCfg)
	if got := mcpCfg.MCPServers["interlink"].Env["INTERLINK_STATE_DIR"]; got != state {
		t.Errorf("INTERLINK_STATE_DIR = %q", got)
	}
	readJSON(t, filepath.Join(dir, "hooks", "hooks.json"), &hooks)
	if cmd := hooks.Hooks["Stop"][0].Hooks[0].Command; cmd != shellQuote(bin)+" wait --state-dir "+shellQuote(state) {
		t.Errorf("Stop command with a state dir: %q", cmd)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func TestShellQuote(t *testing.T) {
	tests := []struct{ goos, in, want string }{
		{"linux", "/usr/bin/interlink-mcp", "/usr/bin/interlink-mcp"},
		{"linux", "/a b/c", "'/a b/c'"},
		{"darwin", "/it's", `'/it'\''s'`},
		{"linux", "", "''"},
		{"windows", `C:\Users\me\go\bin\interlink-mcp.exe`, `"C:\Users\me\go\bin\interlink-mcp.exe"`},
		{"windows", `C:/tools/interlink-mcp.exe`, `C:/tools/interlink-mcp.exe`},
		{"windows", `C:\Program Files\a"b`, `"C:\Program Files\a\"b"`},
	}
	for _, tt := range tests {
		if got := shellQuoteFor(tt.goos, tt.in); got != tt.want {
			t.Errorf("shellQuoteFor(%s, %q) = %q, want %q", tt.goos, tt.in, got, tt.want)
		}
	}
}
