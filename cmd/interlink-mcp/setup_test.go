package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/setup"
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
		// Set in the shell that starts Claude Code, they reach the
		// server; unset, they are empty, which is the default.
		"INTERLINK_DISCOVERABLE": "${INTERLINK_DISCOVERABLE:-}",
		"INTERLINK_RECEIPTS":     "${INTERLINK_RECEIPTS:-}",
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
	if h := stop[0].Hooks[0]; h.Type != "command" || h.Command != setup.ShellQuote(bin)+" wait" || !h.Async || !h.AsyncRewake || h.Timeout != 3600 {
		t.Errorf("Stop hook = %+v", h)
	}
	post := hooks.Hooks["PostToolUse"]
	if len(post) != 1 || post[0].Matcher != "Bash|Edit|Write" || post[0].Hooks[0].Command != setup.ShellQuote(bin)+" nudge" {
		t.Errorf("PostToolUse hooks = %+v", post)
	}
	prompt := hooks.Hooks["UserPromptSubmit"]
	if len(prompt) != 1 || len(prompt[0].Hooks) != 1 || prompt[0].Hooks[0].Command != setup.ShellQuote(bin)+" turn" || prompt[0].Hooks[0].Async {
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
	if cmd := hooks.Hooks["Stop"][0].Hooks[0].Command; cmd != setup.ShellQuote(bin)+" wait --state-dir "+setup.ShellQuote(state) {
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

// setup claude says which files the plugin's server needs that do not
// exist yet (the key file, peers.json), where the server will look for
// them, and how to create each; it says nothing of files that exist.
func TestSetupClaudeSaysWhichFilesAreMissing(t *testing.T) {
	for _, tc := range []struct {
		name       string
		env        func(home string) map[string]string
		create     []string // relative to home
		want, none []string // in stdout; %s is home
	}{
		{"neither", nil, nil,
			[]string{"interlink-mcp keygen --out %s/.config/interlink/id.key", "echo '{}' > %s/.config/interlink/peers.json"}, nil},
		{"no key", nil, []string{".config/interlink/peers.json"},
			[]string{"interlink-mcp keygen --out %s/.config/interlink/id.key"}, []string{"peers.json"}},
		{"no peers", nil, []string{".config/interlink/id.key"},
			[]string{"echo '{}' > %s/.config/interlink/peers.json"}, []string{"keygen"}},
		{"both", nil, []string{".config/interlink/id.key", ".config/interlink/peers.json"},
			nil, []string{"keygen", "peers.json", "do not exist"}},
		{"a key named by INTERLINK_KEY", func(home string) map[string]string {
			return map[string]string{"INTERLINK_KEY": filepath.Join(home, "keys", "work.key")}
		}, []string{".config/interlink/id.key", ".config/interlink/peers.json"},
			[]string{"interlink-mcp keygen --out %s/keys/work.key"}, []string{"id.key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			for _, f := range tc.create {
				p := filepath.Join(home, filepath.FromSlash(f))
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			env := map[string]string{"HOME": home}
			if tc.env != nil {
				maps.Copy(env, tc.env(home))
			}
			var out, errOut bytes.Buffer
			c := &cli{stdout: &out, stderr: &errOut, getenv: func(k string) string { return env[k] }}
			if code := c.run(t.Context(), []string{"setup", "claude"}, nil); code != 0 {
				t.Fatalf("setup claude = %d: %s", code, errOut.String())
			}
			for _, w := range tc.want {
				if w = strings.ReplaceAll(w, "%s", home); !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			tail := out.String()[strings.Index(out.String(), "claude mcp add"):]
			for _, n := range tc.none {
				if strings.Contains(tail, n) {
					t.Errorf("output mentions %q:\n%s", n, out.String())
				}
			}
		})
	}
}

// With --plugin-dir, every fix doctor gives for the Claude plugin writes
// the plugin into that folder: a missing plugin, a damaged .mcp.json, and a
// plugin without a Stop hook.
func TestDoctorFixesWriteThePluginWhereItLooks(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(t.TempDir(), "my plugin")
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T)
	}{
		{"missing", func(t *testing.T) {}},
		{"damaged .mcp.json", func(t *testing.T) {
			writeFile(t, filepath.Join(dir, ".mcp.json"), "{")
		}},
		{"no Stop hook", func(t *testing.T) {
			var out bytes.Buffer
			c := &cli{stdout: &out, stderr: &out, getenv: func(k string) string { return map[string]string{"HOME": home}[k] }}
			if code := c.run(t.Context(), []string{"setup", "claude", "--dir", dir}, nil); code != 0 {
				t.Fatalf("setup claude: %s", out.String())
			}
			writeFile(t, filepath.Join(dir, "hooks", "hooks.json"), `{"hooks":{}}`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			tc.prepare(t)
			var out, errOut bytes.Buffer
			c := &cli{stdout: &out, stderr: &errOut, getenv: func(k string) string { return map[string]string{"HOME": home}[k] }}
			c.run(t.Context(), []string{"doctor", "--json", "--plugin-dir", dir, "--url", "http://127.0.0.1:1"}, nil)
			var rep doctorReport
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("%v:\n%s%s", err, out.String(), errOut.String())
			}
			want := "interlink-mcp setup claude --dir " + setup.ShellQuote(dir)
			found := false
			for _, ch := range rep.Checks {
				if ch.ID != "claude" {
					continue
				}
				found = true
				if !strings.Contains(ch.Fix, want) {
					t.Errorf("fix %q, want it to name %q", ch.Fix, want)
				}
			}
			if !found {
				t.Errorf("no Claude check in %+v", rep.Checks)
			}
		})
	}
}

// writeFile writes data to path, making its folder.
func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
