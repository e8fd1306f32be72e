package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/interlink-go/interlink/internal/budget"
	"github.com/interlink-go/interlink/internal/host"
	"github.com/interlink-go/interlink/internal/route"
)

// defaultURL is the relay used when neither --url nor INTERLINK_URL is set.
const defaultURL = "http://127.0.0.1:9440"

// sessionHint says what a session id may not be, after a server could not
// use one.
var sessionHint = fmt.Sprintf("a session id may not be empty, '.' or '..', longer than %d bytes, or hold / \\ : NUL or control characters",
	route.MaxSessionLen)

// sessionFlags are the options that the server and doctor share, declared
// once: the identity, its peers and relays, the session, its state and
// budgets, and the host.
type sessionFlags struct {
	key, peers, session, stateDir, host, wake, send string
	urls                                            urlList
}

// urlList is a repeatable flag of comma-separated URLs.
type urlList []string

func (u *urlList) String() string { return strings.Join(*u, ",") }

func (u *urlList) Set(s string) error {
	*u = append(*u, s)
	return nil
}

// register declares the options on fset.
func (f *sessionFlags) register(fset *flag.FlagSet) {
	fset.StringVar(&f.key, "key", "", "")
	fset.StringVar(&f.peers, "peers", "", "")
	fset.Var(&f.urls, "url", "")
	fset.StringVar(&f.session, "session", "", "")
	fset.StringVar(&f.stateDir, "state-dir", "", "")
	fset.StringVar(&f.host, "host", "", "")
	fset.StringVar(&f.wake, "wake-budget", "", "")
	fset.StringVar(&f.send, "send-budget", "", "")
}

// sessionConfig is what the shared options resolve to, but the session id,
// which each command takes on its own terms from [cli.sessionID].
type sessionConfig struct {
	host               host.Kind
	keyPath, peersPath string
	urls               []string
	stateRoot          string
	wake, send         budget.Limit
}

// resolve resolves the options from their flags, the environment and the
// defaults. On a mistake it reports it, behind prefix (the command's name
// and ": ", or ""), with hint after a usage error, and returns false and
// the status to exit with.
func (f *sessionFlags) resolve(c *cli, prefix, hint string) (cfg sessionConfig, code int, ok bool) {
	value, source := c.setting(f.host, "--host", "INTERLINK_HOST", string(host.Claude))
	var err error
	if cfg.host, err = host.Parse(value); err != nil {
		return cfg, c.fail(exitUsage, fmt.Sprintf("%s%s %q: %v", prefix, source, value, err), hint), false
	}
	if cfg.keyPath, err = c.configPath(f.key, "--key", "INTERLINK_KEY", "id.key"); err != nil {
		return cfg, c.fail(exitError, prefix+err.Error()), false
	}
	if cfg.peersPath, err = c.configPath(f.peers, "--peers", "INTERLINK_PEERS", "peers.json"); err != nil {
		return cfg, c.fail(exitError, prefix+err.Error()), false
	}
	cfg.urls = f.urls
	if len(cfg.urls) == 0 {
		v, _ := c.setting("", "--url", "INTERLINK_URL", defaultURL)
		cfg.urls = []string{v}
	}
	for _, b := range []struct {
		limit           *budget.Limit
		flag, name, env string
		def             budget.Limit
	}{
		{&cfg.wake, f.wake, "--wake-budget", "INTERLINK_WAKE_BUDGET", budget.DefaultWake},
		{&cfg.send, f.send, "--send-budget", "INTERLINK_SEND_BUDGET", budget.DefaultSend},
	} {
		value, source := c.setting(b.flag, b.name, b.env, b.def.String())
		if *b.limit, err = budget.ParseLimit(value); err != nil {
			return cfg, c.fail(exitUsage, fmt.Sprintf("%s%s: %v", prefix, source, err), hint), false
		}
	}
	if cfg.stateRoot, err = c.stateRoot(f.stateDir); err != nil {
		return cfg, c.fail(exitError, fmt.Sprintf("%sstate folder: %v", prefix, err), "set --state-dir or INTERLINK_STATE_DIR"), false
	}
	return cfg, exitOK, true
}

// sessionID returns the session the options name for a session of h:
// --session, else INTERLINK_SESSION, else, under Claude Code,
// CLAUDE_CODE_SESSION_ID; "" when none is set. The server and doctor both
// read and check it here, through [cli.sessionID].
func (f *sessionFlags) sessionID(c *cli, h host.Kind) (string, error) {
	if h != host.Claude {
		return c.sessionID(f.session)
	}
	return c.sessionID(f.session, func() string { return c.getenv("CLAUDE_CODE_SESSION_ID") })
}
