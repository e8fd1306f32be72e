package main

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/interlink-go/interlink/internal/paths"
	"github.com/interlink-go/interlink/internal/version"
)

//go:embed templates/claude/SKILL.md
var templates embed.FS

const setupUsage = `Usage: interlink-mcp setup claude [--dir DIR] [--state-dir DIR]
       interlink-mcp setup codex

Writes a Claude Code plugin for this interlink-mcp into DIR (default
~/.config/interlink/claude-plugin): the MCP server, the Stop hook that wakes
the session when a message arrives (interlink-mcp wait), the progress
reminder hook (interlink-mcp nudge), the prompt hook that records the
operator's turn for the wake-up and send budgets (interlink-mcp turn) and a
skill with the operating rules.
Every command names this binary by its absolute path; run setup again after
moving it. Existing files of the plugin are replaced.

setup codex prints the sections to merge into Codex's config.toml: the
interlink MCP server, run by this binary's absolute path in the Codex host
with CODEX_HOME repeated for codex queue, and the four lifecycle hooks that
bind a session to its thread. Trust the hooks in Codex's /hooks afterwards.

Options of setup claude:
    --dir DIR        where to write the plugin
    --state-dir DIR  a state root for the server and the hooks alike;
                     without it they use INTERLINK_STATE_DIR, else
                     $XDG_STATE_HOME/interlink, else ~/.local/state/interlink
    -h, --help       show this help
`

// setup writes host configuration.
func (c *cli) setup(args []string) int {
	if len(args) == 0 {
		return c.fail(exitUsage, "setup: name the host: setup claude", "run 'interlink-mcp help setup'")
	}
	switch args[0] {
	case "claude":
		return c.setupClaude(args[1:])
	case "-h", "-help", "--help":
		fmt.Fprint(c.stdout, setupUsage)
		return exitOK
	case "codex":
		return c.setupCodex(args[1:])
	}
	return c.fail(exitUsage, fmt.Sprintf("setup: unknown host %q", args[0]), "run 'interlink-mcp help setup'")
}

func (c *cli) setupClaude(args []string) int {
	fset := newFlagSet("setup claude")
	var dir, stateDir string
	fset.StringVar(&dir, "dir", "", "")
	fset.StringVar(&stateDir, "state-dir", "", "")
	if code, ok := c.parseFlags(fset, args, setupUsage, "setup claude: ", exitUsage, "run 'interlink-mcp help setup'"); !ok {
		return code
	}
	home, err := paths.Home(c.getenv)
	if err != nil {
		return c.fail(exitError, "setup claude: "+err.Error())
	}
	if dir == "" {
		dir = filepath.Join(home, ".config", "interlink", "claude-plugin")
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return c.fail(exitError, "setup claude: "+err.Error())
	}
	if stateDir != "" {
		if stateDir, err = filepath.Abs(stateDir); err != nil {
			return c.fail(exitError, "setup claude: "+err.Error())
		}
	}
	bin, err := c.executable()
	if err != nil {
		return c.fail(exitError, "setup claude: cannot find this program's path: "+err.Error())
	}
	files, err := claudePlugin(bin, home, stateDir)
	if err != nil {
		return c.fail(exitError, "setup claude: "+err.Error())
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return c.fail(exitError, "setup claude: "+err.Error())
		}
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return c.fail(exitError, "setup claude: "+err.Error())
		}
	}
	fmt.Fprintf(c.stdout, `Wrote the Claude Code plugin "interlink" to %s.

Load it for a session:
    claude --plugin-dir %s

Or register only the server, and copy the "hooks" of
%s into ~/.claude/settings.json to get the wake-ups:
    claude mcp add interlink -- %s
`, dir, shellQuote(dir), filepath.Join(dir, "hooks", "hooks.json"), shellQuote(bin))
	c.missingFiles(home)
	return exitOK
}

// missingFiles tells, after setup claude, which files the plugin's server
// needs that do not exist yet, and how to create each: it does not start
// without them, and Claude Code only shows that it failed. It looks where
// the plugin's server will, with this environment's INTERLINK_KEY and
// INTERLINK_PEERS.
func (c *cli) missingFiles(home string) {
	var todo []string
	for _, f := range []struct{ env, name, create string }{
		{"INTERLINK_KEY", "id.key", "interlink-mcp keygen --out %s"},
		{"INTERLINK_PEERS", "peers.json", "echo '{}' > %s"},
	} {
		path := c.getenv(f.env)
		if path == "" {
			path = filepath.Join(home, ".config", "interlink", f.name)
		}
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			todo = append(todo, "    "+fmt.Sprintf(f.create, shellQuote(path)))
		}
	}
	if len(todo) == 0 {
		return
	}
	fmt.Fprintf(c.stdout, `
The server needs files that do not exist yet; create them before starting
Claude Code (interlink-mcp doctor checks them):
%s
`, strings.Join(todo, "\n"))
}

// executable returns the absolute path of this program.
func (c *cli) executable() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return filepath.Abs(p)
}

type pluginFile struct {
	name string // slash-separated, relative to the plugin folder
	data []byte
}

// claudePlugin returns the files of the plugin for the binary bin. home
// gives the default key and peers paths; stateDir, when set, is fixed for
// the server and the hooks.
func claudePlugin(bin, home, stateDir string) ([]pluginFile, error) {
	manifest := map[string]any{
		"name":        "interlink",
		"description": "Signed messages between Claude Code and Codex sessions, with a trust gate and operator-approved pairing.",
		"version":     strings.TrimPrefix(version.String(), "v"),
	}
	defaultFile := func(name string) string { return filepath.Join(home, ".config", "interlink", name) }
	env := map[string]string{
		"INTERLINK_KEY":       "${INTERLINK_KEY:-" + defaultFile("id.key") + "}",
		"INTERLINK_PEERS":     "${INTERLINK_PEERS:-" + defaultFile("peers.json") + "}",
		"INTERLINK_URL":       "${INTERLINK_URL:-http://127.0.0.1:9440}",
		"INTERLINK_CHANNELS":  "${INTERLINK_CHANNELS:-0}",
		"INTERLINK_NAME":      "${INTERLINK_NAME:-}",
		"INTERLINK_LOG_LEVEL": "${INTERLINK_LOG_LEVEL:-info}",
	}
	hookArgs := ""
	if stateDir != "" {
		env["INTERLINK_STATE_DIR"] = stateDir
		hookArgs = " --state-dir " + shellQuote(stateDir)
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
		return map[string]any{"type": "command", "command": shellQuote(bin) + " " + sub + hookArgs}
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
	var files []pluginFile
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
		files = append(files, pluginFile{f.name, append(data, '\n')})
	}
	return append(files, pluginFile{"skills/interlink/SKILL.md", skill}), nil
}

// shellQuote quotes s for the shell that runs hook commands on this system.
func shellQuote(s string) string { return shellQuoteFor(runtime.GOOS, s) }

// shellQuoteFor quotes s for the shell of goos: single quotes on Unix-like
// systems, double quotes on Windows. Plain words stay as they are.
func shellQuoteFor(goos, s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@+=,", r))
	}) < 0 {
		return s
	}
	if goos == "windows" {
		return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
