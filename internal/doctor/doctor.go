// Package doctor checks the path from one session to its peers and says,
// for each step, whether it holds and what to do when it does not: the key
// file, peers.json, the state folder, each relay (reachable, its clock, this
// session on its roster), the host's configuration (the Claude plugin or
// settings, the Codex config), the Stop-hook listener with the notice
// inbox, the server processes of the session on this machine, and the
// mailbox.
//
// It only reads. Files it looks at are never created or changed, and the
// listener check does not take the listener's lock on Linux (see
// [inbox.Inbox.Listening]).
//
// It never waits on a file. Whatever it reads must be a regular file: a
// named pipe, which would keep a reader waiting for a writer, or a device
// is reported, not read, and files are opened without blocking (see
// [statefile.Read]). And every check that reads local files has a deadline
// ([Config.CheckTimeout]): a check that has not answered by then, say on
// a stalled network mount, is reported as such and left behind, and the
// next check runs.
package doctor

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/interlink-go/interlink/internal/budget"
	"github.com/interlink-go/interlink/internal/host"
	"github.com/interlink-go/interlink/internal/identity"
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
	// ID names the kind of check: key, peers, state, relays, relay, size,
	// clock, roster, claude, listener, servers, mailbox, budgets, codex. Several checks may share
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
	// Host is the host application; empty means [host.Claude].
	Host host.Kind
	// Channels reports that notices go out as Claude channel
	// notifications, so no Stop-hook listener is needed.
	Channels bool
	// Binary is the absolute path of this interlink-mcp, which the host's
	// configuration should run.
	Binary string
	// ClaudePluginDir is the plugin folder setup claude wrote; empty means
	// none is checked.
	ClaudePluginDir string
	// ClaudeSetup is the command that writes the plugin into
	// ClaudePluginDir, as fix lines give it; empty means
	// "interlink-mcp setup claude", which writes the default folder.
	ClaudeSetup string
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
	// CheckTimeout bounds each check that reads local files; zero means
	// [DefaultCheckTimeout].
	CheckTimeout time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Run runs every check that applies to cfg, in order, and returns their
// results. It stops early only when ctx ends.
func Run(ctx context.Context, cfg Config) []Check {
	if cfg.Host == "" {
		cfg.Host = host.Claude
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.CheckTimeout <= 0 {
		cfg.CheckTimeout = DefaultCheckTimeout
	}
	var r report
	type key struct {
		own identity.PublicKey
		ok  bool
	}
	k, _ := local(ctx, cfg, &r, "key", "key file", cfg.KeyPath, func(r *report) key {
		own, ok := r.key(cfg)
		return key{own, ok}
	})
	own, haveKey := k.own, k.ok
	run := func(id, name, paths string, check func(r *report)) {
		local(ctx, cfg, &r, id, name, paths, func(r *report) struct{} { check(r); return struct{}{} })
	}
	run("peers", "peers.json", cfg.PeersPath, func(r *report) { r.peers(cfg) })
	run("state", "state folder", cfg.StateRoot, func(r *report) { r.state(cfg) })
	r.relays(ctx, cfg, own, haveKey)
	switch {
	case cfg.Host == host.Codex:
		run("codex", "Codex config "+cfg.CodexConfig, cfg.CodexConfig, func(r *report) { r.codex(cfg) })
	case !cfg.Channels:
		run("claude", "Claude Code", cfg.ClaudePluginDir+" and "+cfg.ClaudeSettings, func(r *report) { r.claude(cfg) })
		run("listener", "Stop-hook listener", "the notice inbox under "+cfg.StateRoot, func(r *report) { r.listener(cfg) })
	}
	if haveKey {
		run("servers", "server processes", "the mailbox folder under "+cfg.StateRoot, func(r *report) { r.servers(cfg, own) })
		run("mailbox", "mailbox", "the mailbox under "+cfg.StateRoot, func(r *report) { r.mailbox(cfg, own) })
		run("budgets", "wake-up budget", "the budget file under "+cfg.StateRoot, func(r *report) { r.budgets(cfg, own) })
	}
	return r.checks
}

// DefaultCheckTimeout bounds each check that reads local files, unless
// [Config.CheckTimeout] says otherwise.
const DefaultCheckTimeout = 10 * time.Second

// local runs check, which reads local files, on a goroutine of its own,
// and waits for it at most cfg.CheckTimeout, or until ctx ends. If it
// finished, its results join r and local returns its value and true.
// Otherwise r gets one failed check with id and name that says which
// files (paths) did not answer, and local returns false: the check is left
// behind, and ends when its read does, at the latest when this short-lived
// command exits. Nothing it does later reaches r.
func local[T any](ctx context.Context, cfg Config, r *report, id, name, paths string, check func(r *report) T) (T, bool) {
	type result struct {
		checks []Check
		v      T
	}
	done := make(chan result, 1) // buffered: a late result is dropped
	go func() {
		var sub report
		v := check(&sub)
		done <- result{sub.checks, v}
	}()
	t := time.NewTimer(cfg.CheckTimeout)
	defer t.Stop()
	select {
	case res := <-done:
		r.checks = append(r.checks, res.checks...)
		return res.v, true
	case <-t.C:
		r.add(id, name, Fail, fmt.Sprintf("no answer within %s from %s: something there keeps its reader waiting "+
			"(a named pipe, a device, a stalled network mount)", cfg.CheckTimeout, paths),
			"put a regular file there, or fix the mount, then run doctor again")
	case <-ctx.Done():
		r.add(id, name, Fail, fmt.Sprintf("stopped before reading %s: %v", paths, ctx.Err()), "")
	}
	var zero T
	return zero, false
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
