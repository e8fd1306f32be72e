// Package doctor checks the path from one session to its peers and says,
// for each step, whether it holds and what to do when it does not: the key
// file, peers.json, the state folder, each relay (reachable, its clock, this
// session on its roster), the host's configuration (the Claude plugin or
// settings, the Codex config), the Stop-hook listener with the notice
// inbox, and the mailbox.
//
// It only reads. Files it looks at are never created or changed, and the
// listener check does not take the listener's lock on Linux (see
// [inbox.Inbox.Listening]).
package doctor

import (
	"context"
	"net/http"
	"time"

	"github.com/interlink-go/interlink/internal/budget"
)

// Status is the outcome of one check.
type Status string

// Outcomes, from good to bad.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Check is the result of one check.
type Check struct {
	// ID names the kind of check: key, peers, state, relays, relay, clock,
	// roster, claude, listener, mailbox, budgets, codex. Several checks may share
	// one (a relay check per relay).
	ID string `json:"id"`
	// Name says what was checked, for a person: "key file", "relay
	// http://127.0.0.1:9440".
	Name string `json:"name"`
	// Status is the outcome.
	Status Status `json:"status"`
	// Detail is one line on what was found.
	Detail string `json:"detail"`
	// Fix is one line on what to do; empty when there is nothing to do.
	Fix string `json:"fix,omitempty"`
}

// Host names the host application a session runs under.
type Host string

// Hosts.
const (
	HostClaude Host = "claude"
	HostCodex  Host = "codex"
)

// Config is what the checks look at. Paths are resolved already, as the
// server resolves them from its flags and environment.
type Config struct {
	KeyPath   string
	PeersPath string
	// URLs are the relay URLs as given; they are parsed here.
	URLs []string
	// Session is the session id to look for; empty skips the checks that
	// need one.
	Session string
	// StateRoot is the state folder of the session's files.
	StateRoot string
	// Host is the host application; empty means [HostClaude].
	Host Host
	// Channels reports that notices go out as Claude channel
	// notifications, so no Stop-hook listener is needed.
	Channels bool
	// Binary is the absolute path of this interlink-mcp, which the host's
	// configuration should run.
	Binary string
	// ClaudePluginDir is the plugin folder setup claude wrote; empty means
	// none is checked.
	ClaudePluginDir string
	// ClaudeSettings is Claude Code's user settings file, checked for the
	// hooks when there is no plugin folder.
	ClaudeSettings string
	// CodexConfig is Codex's config.toml, checked in the Codex host.
	CodexConfig string
	// Wake and Send are the session's budgets, as the server has them.
	Wake, Send budget.Limit
	// HTTPClient makes the relay requests; nil means the relay package's
	// default.
	HTTPClient *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Run runs every check that applies to cfg, in order, and returns their
// results. It stops early only when ctx ends.
func Run(ctx context.Context, cfg Config) []Check {
	if cfg.Host == "" {
		cfg.Host = HostClaude
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	var r report
	own, haveKey := r.key(cfg)
	r.peers(cfg)
	r.state(cfg)
	r.relays(ctx, cfg, own, haveKey)
	switch {
	case cfg.Host == HostCodex:
		r.codex(cfg)
	case !cfg.Channels:
		r.claude(cfg)
		r.listener(cfg)
	}
	if haveKey {
		r.mailbox(cfg, own)
		r.budgets(cfg, own)
	}
	return r.checks
}

// Failed reports whether any check failed.
func Failed(checks []Check) bool {
	for _, c := range checks {
		if c.Status == Fail {
			return true
		}
	}
	return false
}

// report collects checks.
type report struct{ checks []Check }

func (r *report) add(id, name string, st Status, detail, fix string) {
	r.checks = append(r.checks, Check{ID: id, Name: name, Status: st, Detail: detail, Fix: fix})
}
