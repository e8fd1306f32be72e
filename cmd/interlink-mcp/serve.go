package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"runtime"
	"strings"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/cmdline"
	"github.com/interlink-go/interlink/internal/codex"
	"github.com/interlink-go/interlink/internal/delivery"
	"github.com/interlink-go/interlink/internal/host"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/inbox"
	"github.com/interlink-go/interlink/internal/policy"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/setup"
)

const serveUsage = `Usage: interlink-mcp [options]

Runs the MCP server of one host session on stdin and stdout. stdout carries
JSON-RPC only; logs go to stderr. The server stops when stdin closes, or on
SIGINT or SIGTERM, after taking the session off the relays' rosters.

Options:
    --key PATH         secret key file. Env INTERLINK_KEY; default
                       ~/.config/interlink/id.key
    --peers PATH       peer policy; the file must exist. Env INTERLINK_PEERS;
                       default ~/.config/interlink/peers.json
    --url URL[,URL]    relay base URLs, https:// or http://; repeat the flag or
                       separate with commas. Env INTERLINK_URL; default
                       http://127.0.0.1:9440
    --name NAME        name claimed on the roster. Env INTERLINK_NAME;
                       default the key's fingerprint
    --session ID       session id. Env INTERLINK_SESSION, then
                       CLAUDE_CODE_SESSION_ID; default a random id
    --state-dir DIR    state root (mailbox, pairing, task markers). Env
                       INTERLINK_STATE_DIR; default $XDG_STATE_HOME/interlink,
                       else ~/.local/state/interlink
    --host HOST        claude or codex. Env INTERLINK_HOST; default claude.
                       A Codex server waits for its thread's hooks to bind
                       it (bind_codex_session) before it does anything
    --codex-bin PATH   the codex executable for codex queue (Codex host).
                       Env INTERLINK_CODEX_BIN; default codex, from PATH
    --wake-budget N/D  at most N automatic wake-ups of the host by one peer
                       within D, until the operator's next prompt; then
                       that peer's messages wait without waking the session.
                       Env INTERLINK_WAKE_BUDGET; default 20/10m; off for none
    --send-budget N/D  at most N messages to one peer within D until the
                       operator's next prompt. Env INTERLINK_SEND_BUDGET;
                       default 30/10m; off for none
    --discoverable yes|no
                       whether strangers may see this session on a relay
                       that requires signed requests: yes shows them its
                       name, key and route, never its folder, git label or
                       summary, which only peers see there; no hides it
                       from everyone but its peers. Env
                       INTERLINK_DISCOVERABLE; default yes
    --receipts yes|no  whether to exchange signed delivery receipts with
                       peers that take them: yes tells a sender when its
                       message was stored, shown to the model and
                       acknowledged, and shows how far this session's own
                       messages got. Env INTERLINK_RECEIPTS; default yes
    --log-level LEVEL  debug, info, warn or error. Env INTERLINK_LOG_LEVEL;
                       default info
    --db PATH          accepted for compatibility and ignored. Env
                       INTERLINK_AGENT_DB
    -h, --help         show this help

A flag wins over its environment variable; a variable set to the empty
string counts as unset.

Notices about waiting messages go to the session's notice inbox, where
'interlink-mcp wait' (the Claude Code Stop hook) picks them up; with
INTERLINK_CHANNELS=1 (or true) they are sent as Claude channel
notifications instead, and with --host codex they are handed to
'codex queue' for the bound thread.
`

// runServe runs the MCP server until stdin closes or ctx ends.
func runServe(c *cli, ctx context.Context, args []string, stdin io.Reader) int {
	fset := newFlagSet(progName)
	var f sessionFlags
	f.register(fset)
	var name, codexBin, logLevel, db, discoverable, receipts string
	fset.StringVar(&name, "name", "", "")
	fset.StringVar(&discoverable, "discoverable", "", "")
	fset.StringVar(&receipts, "receipts", "", "")
	fset.StringVar(&codexBin, "codex-bin", "", "")
	fset.StringVar(&logLevel, "log-level", "", "")
	fset.StringVar(&db, "db", "", "")
	if code, ok := c.parseFlags(fset, args, serveUsage, "", exitUsage, helpHint); !ok {
		return code
	}

	value, source := c.setting(logLevel, "--log-level", "INTERLINK_LOG_LEVEL", "info")
	level, err := cmdline.ParseLogLevel(value)
	if err != nil {
		return c.fail(exitUsage, fmt.Sprintf("%s %q: %v", source, value, err), helpHint)
	}
	log := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: level}))

	sc, code, ok := f.resolve(c, "", helpHint)
	if !ok {
		return code
	}
	cfg := agent.Config{Logger: log, Host: sc.host, KeyPath: sc.keyPath, PeersPath: sc.peersPath, URLs: sc.urls,
		StateRoot: sc.stateRoot, WakeBudget: sc.wake, SendBudget: sc.send}
	cfg.Name, _ = c.setting(name, "--name", "INTERLINK_NAME", "")
	discover, err := c.yesNo(discoverable, "--discoverable", "INTERLINK_DISCOVERABLE")
	if err != nil {
		return c.fail(exitUsage, err.Error(), helpHint)
	}
	withReceipts, err := c.yesNo(receipts, "--receipts", "INTERLINK_RECEIPTS")
	if err != nil {
		return c.fail(exitUsage, err.Error(), helpHint)
	}
	cfg.Hidden, cfg.NoReceipts = !discover, !withReceipts
	if cfg.Host == host.Claude {
		cfg.Session, err = f.sessionID(c, cfg.Host)
		if err == nil && cfg.Session == "" {
			cfg.Session, err = route.NewSessionID()
		}
		if err != nil {
			return c.fail(exitError, fmt.Sprintf("session id: %v", err), sessionHint)
		}
	} else if explicit, _ := c.setting(f.session, "--session", "INTERLINK_SESSION", ""); explicit != "" {
		log.Warn("a Codex session takes its id from its thread when the hooks bind it; ignoring the session setting", "session", explicit)
	}
	if v, src := c.setting(db, "--db", "INTERLINK_AGENT_DB", ""); v != "" {
		log.Warn("the agent keeps no database; ignoring "+src, "path", v)
	}
	if cfg.Cwd, err = os.Getwd(); err != nil {
		log.Warn("working folder unknown", "err", err)
	}
	// How notices reach the host: codex queue for Codex; Claude channels
	// when enabled; else the notice inbox that the Stop-hook listener
	// (interlink-mcp wait) reads.
	switch {
	case cfg.Host == host.Codex:
		bin, src := c.setting(codexBin, "--codex-bin", "INTERLINK_CODEX_BIN", "codex")
		found, err := codex.LookupHere(bin, runtime.GOOS)
		switch {
		case errors.Is(err, codex.ErrShim):
			return c.fail(exitError, fmt.Sprintf("%s %q: %v", src, bin, err))
		case err != nil:
			log.Warn("codex executable not found; notices will fail and be saved for failed_deliveries", "codex", bin, "err", err)
			found = bin
		}
		cfg.CodexBin = found
	case channelMode(c.getenv):
		cfg.Channels = true
	default:
		box, err := inbox.Open(cfg.StateRoot, cfg.Session)
		if err != nil {
			return c.fail(exitError, err.Error())
		}
		if cfg.Sink, err = delivery.NewInbox(box); err != nil {
			// The error says "inbox:" and the path already.
			var hints []string
			if errors.Is(err, inbox.ErrSymlink) {
				hints = append(hints, "the notice inbox is never opened through a link; remove the link and start again")
			}
			return c.fail(exitError, err.Error(), hints...)
		}
	}

	a, err := agent.New(cfg)
	if err != nil {
		return c.fail(exitError, err.Error(), startHints(err, cfg.KeyPath)...)
	}
	if perm, exposed, err := identity.KeyFileExposed(cfg.KeyPath); err == nil && exposed {
		log.Warn("the key file can be read by other users, who could sign as this identity; run: chmod 600 "+setup.ShellQuote(cfg.KeyPath),
			"path", cfg.KeyPath, "mode", fmt.Sprintf("%04o", perm))
	}
	if cfg.Host == host.Codex {
		log.Info("interlink-mcp starting for Codex; waiting for the thread's hooks to bind the session",
			"relays", strings.Join(cfg.URLs, ","), "state", cfg.StateRoot, "codex", cfg.CodexBin)
	} else {
		log.Info("interlink-mcp starting", "session", a.Session(), "route", a.Route().String(),
			"relays", strings.Join(cfg.URLs, ","), "state", cfg.StateRoot)
	}
	if err := a.Serve(ctx, stdin, c.stdout); err != nil {
		return c.fail(exitError, fmt.Sprintf("serving MCP: %v", err))
	}
	log.Info("interlink-mcp stopped", "session", a.Session())
	return exitOK
}

// startHints says how to fix a setting the agent could not use, when the
// fix is to create a missing file.
func startHints(err error, keyPath string) []string {
	se, ok := errors.AsType[*agent.SettingError](err)
	switch {
	case !ok:
		return nil
	case se.Flag == "--key" && errors.Is(err, fs.ErrNotExist):
		return []string{"create one with 'interlink-mcp keygen --out " + keyPath + "'"}
	case se.Flag == "--peers" && errors.Is(err, policy.ErrMissing):
		return []string{"create it with the content {} and list peers in it (see docs/PEERS.md)"}
	}
	return nil
}
