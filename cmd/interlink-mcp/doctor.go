package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/interlink-go/interlink/internal/doctor"
	"github.com/interlink-go/interlink/internal/paths"
	"github.com/interlink-go/interlink/internal/setup"
)

const doctorUsage = `Usage: interlink-mcp doctor [options]

Checks the path from a session to its peers and says, for each step, OK,
WARN or FAIL, with what it found and what to do: the key file, peers.json,
the state folder, each relay (reachable, its clock against this machine's,
the session on its roster), the Claude Code plugin or settings (or, with
--host codex, Codex's config.toml), the Stop-hook listener and its pending
notices, the servers running for the session on this machine (more than
one share its mailbox), the session's mailbox, and the peers whose
wake-ups are paused. It only reads; nothing is created or changed.

It exits 0 when no check failed, 1 when one did, 2 on a usage error.

Options, read like the server's, with the same environment variables:
    --key PATH          secret key file (INTERLINK_KEY)
    --peers PATH        peer policy (INTERLINK_PEERS)
    --url URL[,URL]     relay URLs (INTERLINK_URL)
    --session ID        the session to check (INTERLINK_SESSION, then
                        CLAUDE_CODE_SESSION_ID); without one, the checks that
                        need a session are skipped and the roster check lists
                        this identity's sessions
    --state-dir DIR     state root (INTERLINK_STATE_DIR)
    --host HOST         claude or codex (INTERLINK_HOST); default claude
    --plugin-dir DIR    the Claude plugin folder; default the one setup
                        claude writes, ~/.config/interlink/claude-plugin
    --wake-budget N/D   the session's wake-up budget (INTERLINK_WAKE_BUDGET)
    --send-budget N/D   the session's send budget (INTERLINK_SEND_BUDGET)
    --json              print the results as JSON, for scripts
    -h, --help          show this help

Without a plugin folder, the hooks are looked for in Claude Code's
settings.json (under CLAUDE_CONFIG_DIR, else ~/.claude). Codex's config is
$CODEX_HOME/config.toml, else ~/.codex/config.toml.
`

// doctorReport is the JSON form of the results.
type doctorReport struct {
	OK     bool           `json:"ok"`
	Checks []doctor.Check `json:"checks"`
}

// runDoctor runs the checks and prints the results.
func runDoctor(c *cli, ctx context.Context, args []string, _ io.Reader) int {
	fset := newFlagSet("doctor")
	var f sessionFlags
	f.register(fset)
	var pluginDir string
	var asJSON bool
	fset.StringVar(&pluginDir, "plugin-dir", "", "")
	fset.BoolVar(&asJSON, "json", false, "")
	const hint = "run 'interlink-mcp help doctor'"
	if code, ok := c.parseFlags(fset, args, doctorUsage, "doctor: ", exitUsage, hint); !ok {
		return code
	}
	sc, code, ok := f.resolve(c, "doctor: ", hint)
	if !ok {
		return code
	}
	cfg := doctor.Config{Host: sc.host, KeyPath: sc.keyPath, PeersPath: sc.peersPath, URLs: sc.urls,
		StateRoot: sc.stateRoot, Wake: sc.wake, Send: sc.send}
	var err error
	if cfg.Session, err = f.sessionID(c, cfg.Host); err != nil {
		return c.fail(exitUsage, fmt.Sprintf("doctor: session id %q: %v", cfg.Session, err), hint)
	}
	cfg.Channels = channelMode(c.getenv)
	if cfg.Binary, err = c.executable(); err != nil {
		cfg.Binary = ""
	}
	home, err := paths.Home(c.getenv)
	if err != nil {
		return c.fail(exitError, "doctor: "+err.Error())
	}
	cfg.ClaudePluginDir = pluginDir
	if cfg.ClaudePluginDir == "" {
		cfg.ClaudePluginDir = setup.ClaudePluginDir(home)
	} else {
		// Fix lines must write the plugin where it is looked for.
		cfg.ClaudeSetup = "interlink-mcp setup claude --dir " + setup.ShellQuote(pluginDir)
	}
	claudeDir := c.getenv("CLAUDE_CONFIG_DIR")
	if claudeDir == "" {
		claudeDir = filepath.Join(home, ".claude")
	}
	cfg.ClaudeSettings = filepath.Join(claudeDir, "settings.json")
	cfg.CodexConfig = filepath.Join(setup.CodexHome(c.getenv), "config.toml")

	checks := doctor.Run(ctx, cfg)
	failed := doctor.Failed(checks)
	if asJSON {
		data, err := json.MarshalIndent(doctorReport{OK: !failed, Checks: checks}, "", "  ")
		if err != nil {
			return c.fail(exitError, "doctor: "+err.Error())
		}
		fmt.Fprintf(c.stdout, "%s\n", data)
	} else {
		printChecks(c.stdout, checks)
	}
	if failed {
		return exitError
	}
	return exitOK
}

// printChecks writes one line per check, a fix line under each that has
// one, and a summary.
func printChecks(w io.Writer, checks []doctor.Check) {
	// Names line up in a column, but a long one (a plugin path) does not
	// push every other line to the right.
	width := 0
	for _, ch := range checks {
		width = min(max(width, len(ch.Name)), 40)
	}
	var warns, fails int
	for _, ch := range checks {
		switch ch.Status {
		case doctor.Warn:
			warns++
		case doctor.Fail:
			fails++
		}
		fmt.Fprintf(w, "%-4s  %-*s  %s\n", strings.ToUpper(string(ch.Status)), width, ch.Name, ch.Detail)
		if ch.Fix != "" {
			fmt.Fprintf(w, "      %-*s  fix: %s\n", width, "", ch.Fix)
		}
	}
	fmt.Fprintf(w, "\n%d %s, %d %s, %d %s.\n", len(checks)-warns-fails, plural(len(checks)-warns-fails, "check passed", "checks passed"),
		warns, plural(warns, "warning", "warnings"), fails, plural(fails, "failure", "failures"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
