package setup

import (
	"embed"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/interlink-go/interlink/internal/paths"
	"github.com/interlink-go/interlink/internal/version"
)

//go:embed templates/claude/SKILL.md
var templates embed.FS

// File is one file of the Claude Code plugin.
type File struct {
	Name string // slash-separated, relative to the plugin folder
	Data []byte
}

// ClaudePluginDir returns the folder setup claude writes the plugin to
// unless told another: ~/.config/interlink/claude-plugin under home.
func ClaudePluginDir(home string) string {
	return filepath.Join(paths.ConfigDir(home), "claude-plugin")
}

// WriteClaudePlugin writes the files of the plugin for the binary bin into
// dir, creating folders as needed and replacing the plugin's files that
// are there. home and stateDir are as for [ClaudePlugin].
func WriteClaudePlugin(dir, bin, home, stateDir string) error {
	files, err := ClaudePlugin(bin, home, stateDir)
	if err != nil {
		return err
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// ClaudePlugin returns the files of the plugin for the binary bin: its
// manifest, the MCP server with its environment, the hooks (the Stop-hook
// listener, the progress reminder, the prompt hook that records the
// operator's turn) and the skill with the operating rules. home gives the
// default key and peers paths; stateDir, when set, is fixed for the server
// and the hooks. Every command names bin by the path given.
func ClaudePlugin(bin, home, stateDir string) ([]File, error) {
	manifest := map[string]any{
		"name":        "interlink",
		"description": "Signed messages between Claude Code and Codex sessions, with a trust gate and operator-approved pairing.",
		"version":     strings.TrimPrefix(version.String(), "v"),
	}
	defaultFile := func(name string) string { return filepath.Join(paths.ConfigDir(home), name) }
	env := map[string]string{
		"INTERLINK_KEY":       "${INTERLINK_KEY:-" + defaultFile("id.key") + "}",
		"INTERLINK_PEERS":     "${INTERLINK_PEERS:-" + defaultFile("peers.json") + "}",
		"INTERLINK_URL":       "${INTERLINK_URL:-http://127.0.0.1:9440}",
		"INTERLINK_CHANNELS":  "${INTERLINK_CHANNELS:-0}",
		"INTERLINK_NAME":      "${INTERLINK_NAME:-}",
		"INTERLINK_LOG_LEVEL": "${INTERLINK_LOG_LEVEL:-info}",
		// Claude Code hands the server only the variables declared here;
		// empty means the server's default (yes).
		"INTERLINK_DISCOVERABLE": "${INTERLINK_DISCOVERABLE:-}",
		"INTERLINK_RECEIPTS":     "${INTERLINK_RECEIPTS:-}",
	}
	hookArgs := ""
	if stateDir != "" {
		env["INTERLINK_STATE_DIR"] = stateDir
		hookArgs = " --state-dir " + ShellQuote(stateDir)
	} else {
		// The hooks see Claude Code's whole environment; the server sees only
		// what is declared here. Declaring these keeps both on one state root.
		env["INTERLINK_STATE_DIR"] = "${INTERLINK_STATE_DIR:-}"
		env["XDG_STATE_HOME"] = "${XDG_STATE_HOME:-}"
	}
	mcpJSON := map[string]any{
		"mcpServers": map[string]any{
			"interlink": map[string]any{"command": bin, "args": []string{}, "env": env},
		},
	}
	command := func(sub string) map[string]any {
		return map[string]any{"type": "command", "command": ShellQuote(bin) + " " + sub + hookArgs}
	}
	stop := command("wait")
	stop["async"] = true
	stop["asyncRewake"] = true
	stop["timeout"] = 3600
	hooks := map[string]any{
		"hooks": map[string]any{
			"Stop":        []any{map[string]any{"hooks": []any{stop}}},
			"PostToolUse": []any{map[string]any{"matcher": "Bash|Edit|Write", "hooks": []any{command("nudge")}}},
			// The operator's prompt resets the session's wake-up and send
			// budgets.
			"UserPromptSubmit": []any{map[string]any{"hooks": []any{command("turn")}}},
		},
	}
	skill, err := templates.ReadFile("templates/claude/SKILL.md")
	if err != nil {
		return nil, err
	}
	var files []File
	for _, f := range []struct {
		name string
		v    any
	}{
		{".claude-plugin/plugin.json", manifest},
		{".mcp.json", mcpJSON},
		{"hooks/hooks.json", hooks},
	} {
		data, err := json.MarshalIndent(f.v, "", "  ")
		if err != nil {
			return nil, err
		}
		files = append(files, File{f.name, append(data, '\n')})
	}
	return append(files, File{"skills/interlink/SKILL.md", skill}), nil
}
