package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/interlink-go/interlink/internal/paths"
	"github.com/interlink-go/interlink/internal/setup"
)

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

// runSetup writes host configuration.
func runSetup(c *cli, _ context.Context, args []string, _ io.Reader) int {
	if len(args) == 0 {
		return c.fail(exitUsage, "setup: name the host: setup claude", "run 'interlink-mcp help setup'")
	}
	switch args[0] {
	case "claude":
		return setupClaude(c, args[1:])
	case "-h", "-help", "--help":
		fmt.Fprint(c.stdout, setupUsage)
		return exitOK
	case "codex":
		return setupCodex(c, args[1:])
	}
	return c.fail(exitUsage, fmt.Sprintf("setup: unknown host %q", args[0]), "run 'interlink-mcp help setup'")
}

func setupClaude(c *cli, args []string) int {
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
		dir = setup.ClaudePluginDir(home)
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
	if err := setup.WriteClaudePlugin(dir, bin, home, stateDir); err != nil {
		return c.fail(exitError, "setup claude: "+err.Error())
	}
	fmt.Fprintf(c.stdout, `Wrote the Claude Code plugin "interlink" to %s.

Load it for a session:
    claude --plugin-dir %s

Or register only the server, and copy the "hooks" of
%s into ~/.claude/settings.json to get the wake-ups:
    claude mcp add interlink -- %s
`, dir, setup.ShellQuote(dir), filepath.Join(dir, "hooks", "hooks.json"), setup.ShellQuote(bin))
	missingFiles(c, home)
	return exitOK
}

// missingFiles tells, after setup claude, which files the plugin's server
// needs that do not exist yet, and how to create each: it does not start
// without them, and Claude Code only shows that it failed. It looks where
// the plugin's server will, with this environment's INTERLINK_KEY and
// INTERLINK_PEERS.
func missingFiles(c *cli, home string) {
	var todo []string
	for _, f := range []struct{ env, name, create string }{
		{"INTERLINK_KEY", "id.key", "interlink-mcp keygen --out %s"},
		{"INTERLINK_PEERS", "peers.json", "echo '{}' > %s"},
	} {
		path := c.getenv(f.env)
		if path == "" {
			path = filepath.Join(paths.ConfigDir(home), f.name)
		}
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			todo = append(todo, "    "+fmt.Sprintf(f.create, setup.ShellQuote(path)))
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

// setupCodex prints the Codex configuration for this binary.
func setupCodex(c *cli, args []string) int {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
			fmt.Fprint(c.stdout, setupUsage)
			return exitOK
		}
		return c.fail(exitUsage, fmt.Sprintf("setup codex: unexpected argument %q", args[0]), "run 'interlink-mcp help setup'")
	}
	bin, err := c.executable()
	if err != nil {
		return c.fail(exitError, "setup codex: cannot find this program's path: "+err.Error())
	}
	fmt.Fprint(c.stdout, setup.CodexConfig(bin, setup.CodexHome(c.getenv), false))
	return exitOK
}
