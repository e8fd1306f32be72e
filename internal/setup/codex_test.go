package setup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// codex/config.toml in the repository is the generated snippet for a binary
// found on PATH, with the optional settings as comments. Regenerate it with
// INTERLINK_UPDATE_CODEX_CONFIG=1 go test -run TestCodexConfigFile.
func TestCodexConfigFile(t *testing.T) {
	path := filepath.Join("..", "..", "codex", "config.toml")
	want := CodexConfig("interlink-mcp", "", true)
	if os.Getenv("INTERLINK_UPDATE_CODEX_CONFIG") == "1" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s is out of date; regenerate it (see the test's comment)", path)
	}
}

func TestCodexConfig(t *testing.T) {
	got := CodexConfig("/opt/bin/interlink-mcp", "/home/u/.codex-work", false)
	for _, w := range []string{
		"[mcp_servers.interlink]\ncommand = \"/opt/bin/interlink-mcp\"\nargs = [\"--host\", \"codex\"]",
		"CODEX_HOME = \"/home/u/.codex-work\"",
		"[[hooks.PreToolUse]]\nmatcher = \"^mcp__interlink__\"\n[[hooks.PreToolUse.hooks]]\ntype = \"mcp_tool\"",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("config lacks %q:\n%s", w, got)
		}
	}
	for _, ev := range []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "Stop"} {
		input := `input = { thread_id = "${session_id}" }`
		if ev == "UserPromptSubmit" {
			// The prompt hook also passes the prompt, which restarts the
			// budgets when the operator typed it.
			input = `input = { thread_id = "${session_id}", prompt = "${prompt}" }`
		}
		if !strings.Contains(got, "[[hooks."+ev+".hooks]]\ntype = \"mcp_tool\"\nserver = \"interlink\"\ntool = \"bind_codex_session\"\n"+input+"\n") {
			t.Errorf("no binding hook for %s", ev)
		}
	}
	if strings.Contains(got, "INTERLINK_URL") {
		t.Error("comments in the printed snippet")
	}
}
