package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/interlink-go/interlink/internal/doctor"
	"github.com/interlink-go/interlink/internal/paths"
	"github.com/interlink-go/interlink/internal/route"
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

// doctor runs the checks and prints the results.
func (c *cli) doctor(ctx context.Context, args []string) int {
	fset := newFlagSet("doctor")
	var key, peers, session, stateDir, host, pluginDir, wake, send string
	var urls urlList
	var asJSON bool
	fset.StringVar(&key, "key", "", "")
	fset.StringVar(&peers, "peers", "", "")
	fset.Var(&urls, "url", "")
	fset.StringVar(&session, "session", "", "")
	fset.StringVar(&stateDir, "state-dir", "", "")
	fset.StringVar(&host, "host", "", "")
	fset.StringVar(&pluginDir, "plugin-dir", "", "")
	fset.StringVar(&wake, "wake-budget", "", "")
	fset.StringVar(&send, "send-budget", "", "")
	fset.BoolVar(&asJSON, "json", false, "")
	const hint = "run 'interlink-mcp help doctor'"
	if code, ok := c.parseFlags(fset, args, doctorUsage, "doctor: ", exitUsage, hint); !ok {
		return code
	}
	var cfg doctor.Config
	var err error
	value, source := c.setting(host, "--host", "INTERLINK_HOST", string(doctor.HostClaude))
	cfg.Host = doctor.Host(value)
	if cfg.Host != doctor.HostClaude && cfg.Host != doctor.HostCodex {
		return c.fail(exitUsage, fmt.Sprintf("doctor: %s %q: want claude or codex", source, value), hint)
	}
	if cfg.KeyPath, err = c.configPath(key, "--key", "INTERLINK_KEY", "id.key"); err != nil {
		return c.fail(exitError, "doctor: "+err.Error())
	}
	if cfg.PeersPath, err = c.configPath(peers, "--peers", "INTERLINK_PEERS", "peers.json"); err != nil {
		return c.fail(exitError, "doctor: "+err.Error())
	}
	cfg.URLs = urls
	if len(cfg.URLs) == 0 {
		v, _ := c.setting("", "--url", "INTERLINK_URL", defaultURL)
		cfg.URLs = []string{v}
	}
	explicit, _ := c.setting(session, "--session", "INTERLINK_SESSION", "")
	cfg.Session = strings.TrimSpace(explicit)
	if cfg.Session == "" && cfg.Host == doctor.HostClaude {
		cfg.Session = strings.TrimSpace(c.getenv("CLAUDE_CODE_SESSION_ID"))
	}
	if cfg.Session != "" {
		if err := route.ValidateSession(cfg.Session); err != nil {
			return c.fail(exitUsage, fmt.Sprintf("doctor: session id %q: %v", cfg.Session, err), hint)
		}
	}
	explicitState, _ := c.setting(stateDir, "--state-dir", "INTERLINK_STATE_DIR", "")
	if cfg.StateRoot, err = paths.StateRoot(c.getenv, explicitState); err != nil {
		return c.fail(exitError, "doctor: state folder: "+err.Error(), "set --state-dir or INTERLINK_STATE_DIR")
	}
	if cfg.Wake, cfg.Send, err = c.budgets(wake, send); err != nil {
		return c.fail(exitUsage, "doctor: "+err.Error(), hint)
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
		cfg.ClaudePluginDir = filepath.Join(home, ".config", "interlink", "claude-plugin")
	} else {
		// Fix lines must write the plugin where it is looked for.
		cfg.ClaudeSetup = "interlink-mcp setup claude --dir " + shellQuote(pluginDir)
	}
	claudeDir := c.getenv("CLAUDE_CONFIG_DIR")
	if claudeDir == "" {
		claudeDir = filepath.Join(home, ".claude")
	}
	cfg.ClaudeSettings = filepath.Join(claudeDir, "settings.json")
	codexHome := c.getenv("CODEX_HOME")
	if codexHome == "" {
		codexHome = filepath.Join(home, ".codex")
	}
	cfg.CodexConfig = filepath.Join(codexHome, "config.toml")

	checks := doctor.Run(ctx, cfg)
	failed := doctor.Failed(checks)
	if asJSON {
		data, err := json.MarshalIndent(doctorReport{OK: !failed, Checks: checks}, "", "  ")
		if err != nil {
			return c.fail(exitError, "doctor: "+err.Error())
		}
		fmt.Fprintf(c.stdout, "%s\n", data)
	} else {
		printChecks(c, checks)
	}
	if failed {
		return exitError
	}
	return exitOK
}

// printChecks writes one line per check, a fix line under each that has
// one, and a summary.
func printChecks(c *cli, checks []doctor.Check) {
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
		fmt.Fprintf(c.stdout, "%-4s  %-*s  %s\n", strings.ToUpper(string(ch.Status)), width, ch.Name, ch.Detail)
		if ch.Fix != "" {
			fmt.Fprintf(c.stdout, "      %-*s  fix: %s\n", width, "", ch.Fix)
		}
	}
	fmt.Fprintf(c.stdout, "\n%d %s, %d %s, %d %s.\n", len(checks)-warns-fails, plural(len(checks)-warns-fails, "check passed", "checks passed"),
		warns, plural(warns, "warning", "warnings"), fails, plural(fails, "failure", "failures"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
