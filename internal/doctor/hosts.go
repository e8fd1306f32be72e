package doctor

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/inbox"
	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/runlock"
	"github.com/interlink-go/interlink/internal/statefile"
)

// mailboxWarn is the fill level, as a share of [mailbox.MaxRecords], from
// which the mailbox gets a warning.
const mailboxWarn = 0.75

// hookCommand is one command hook of Claude Code's hook configuration.
type hookCommand struct {
	Type        string `json:"type"`
	Command     string `json:"command"`
	Async       bool   `json:"async"`
	AsyncRewake bool   `json:"asyncRewake"`
}

// hookConfig is the "hooks" object of a plugin's hooks.json or of Claude
// Code's settings.json.
type hookConfig struct {
	Hooks map[string][]struct {
		Matcher string        `json:"matcher"`
		Hooks   []hookCommand `json:"hooks"`
	} `json:"hooks"`
}

// claudeSetup returns the command that writes the plugin doctor checks.
func (cfg Config) claudeSetup() string {
	if cfg.ClaudeSetup != "" {
		return cfg.ClaudeSetup
	}
	return "interlink-mcp setup claude"
}

// claude checks the Claude Code side: the plugin setup claude wrote, or,
// without one, hooks in Claude Code's settings.
func (r *report) claude(cfg Config) {
	const id = "claude"
	if cfg.ClaudePluginDir != "" {
		if _, err := os.Stat(filepath.Join(cfg.ClaudePluginDir, ".mcp.json")); err == nil {
			r.claudePlugin(cfg)
			return
		}
	}
	if cfg.ClaudeSettings != "" {
		var hc hookConfig
		if ok, err := readJSON(cfg.ClaudeSettings, &hc); err != nil {
			r.add(id, "Claude Code settings", Warn, fmt.Sprintf("%s: %v", cfg.ClaudeSettings, err), "fix the JSON of that file")
			return
		} else if ok && stopHook(hc, cfg.Binary) != nil {
			r.claudeStopHook(cfg, "Stop hook in "+cfg.ClaudeSettings, hc)
			return
		}
	}
	r.add(id, "Claude Code", Warn, fmt.Sprintf("no interlink plugin in %s and no interlink Stop hook in %s: idle sessions are not woken",
		cfg.ClaudePluginDir, cfg.ClaudeSettings),
		"run "+cfg.claudeSetup()+", then start Claude Code with the --plugin-dir it prints")
}

// claudePlugin checks the plugin's server command and its Stop hook.
func (r *report) claudePlugin(cfg Config) {
	const id = "claude"
	name := "Claude plugin " + cfg.ClaudePluginDir
	var mcp struct {
		MCPServers map[string]struct {
			Command string `json:"command"`
		} `json:"mcpServers"`
	}
	mcpPath := filepath.Join(cfg.ClaudePluginDir, ".mcp.json")
	if _, err := readJSON(mcpPath, &mcp); err != nil {
		r.add(id, name, Fail, fmt.Sprintf("%s: %v", mcpPath, err), "write it again: "+cfg.claudeSetup())
		return
	}
	srv, ok := mcp.MCPServers["interlink"]
	if !ok {
		r.add(id, name, Fail, mcpPath+" declares no interlink server", "write it again: "+cfg.claudeSetup())
		return
	}
	if st, detail := r.binaryCheck(cfg, srv.Command, "its server"); st != OK {
		r.add(id, name, st, detail, "write the plugin again with this binary: "+cfg.claudeSetup())
		return
	}
	var hc hookConfig
	hooksPath := filepath.Join(cfg.ClaudePluginDir, "hooks", "hooks.json")
	if _, err := readJSON(hooksPath, &hc); err != nil {
		r.add(id, name, Fail, fmt.Sprintf("%s: %v", hooksPath, err), "write it again: "+cfg.claudeSetup())
		return
	}
	r.claudeStopHook(cfg, name, hc)
}

// claudeStopHook checks the Stop hook of hc: present, asynchronous with
// asyncRewake, running this binary's wait.
func (r *report) claudeStopHook(cfg Config, name string, hc hookConfig) {
	const id = "claude"
	h := stopHook(hc, cfg.Binary)
	if h == nil {
		r.add(id, name, Fail, "no Stop hook running interlink-mcp wait: idle sessions are never woken",
			"write the plugin again: "+cfg.claudeSetup())
		return
	}
	if !h.Async || !h.AsyncRewake {
		r.add(id, name, Fail, "the Stop hook is not asynchronous with asyncRewake, so it cannot wake an idle session",
			`set "async": true and "asyncRewake": true on it, or write the plugin again: `+cfg.claudeSetup())
		return
	}
	bin, _ := waitBinary(h.Command)
	if st, detail := r.binaryCheck(cfg, bin, "its Stop hook"); st != OK {
		r.add(id, name, st, detail, "write the plugin again with this binary: "+cfg.claudeSetup())
		return
	}
	r.add(id, name, OK, "runs this interlink-mcp, with an asyncRewake Stop hook", "")
}

// stopHook returns the first Stop hook that runs some interlink-mcp's
// wait (a program whose name has "interlink" in it, or this binary), or
// nil.
func stopHook(hc hookConfig, binary string) *hookCommand {
	for _, group := range hc.Hooks["Stop"] {
		for i, h := range group.Hooks {
			bin, ok := waitBinary(h.Command)
			if h.Type == "command" && ok && (strings.Contains(filepath.Base(bin), "interlink") || sameFile(bin, binary)) {
				return &group.Hooks[i]
			}
		}
	}
	return nil
}

// waitBinary splits a hook command "BIN wait [ARGS]" as setup claude
// writes it, with BIN possibly in shell quotes, and returns BIN.
func waitBinary(command string) (string, bool) {
	command = strings.TrimSpace(command)
	i := strings.LastIndex(command, " wait")
	if i <= 0 || (i+len(" wait") < len(command) && command[i+len(" wait")] != ' ') {
		return "", false
	}
	return unquote(strings.TrimSpace(command[:i])), true
}

// binaryCheck compares a configured command with this binary: the same
// is fine, another existing one a warning, a missing one a failure. A
// command without a folder is looked up on this process's PATH, which may
// differ from the host's.
func (r *report) binaryCheck(cfg Config, command, what string) (Status, string) {
	if !strings.ContainsAny(command, `/\`) {
		// A bare name runs whatever PATH finds first.
		if found, err := exec.LookPath(command); err == nil {
			command = found
		}
	}
	if cfg.Binary == "" || sameFile(command, cfg.Binary) {
		return OK, ""
	}
	if _, err := os.Stat(command); err != nil {
		return Fail, fmt.Sprintf("%s runs %s, which does not exist", what, command)
	}
	return Warn, fmt.Sprintf("%s runs %s, not this binary (%s)", what, command, cfg.Binary)
}

// sameFile reports whether a and b name the same file, following links.
func sameFile(a, b string) bool {
	if a == b {
		return true
	}
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// unquote removes the shell quoting setup claude puts around a path.
func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '\'' && s[len(s)-1] == '\'' || s[0] == '"' && s[len(s)-1] == '"') {
		s = s[1 : len(s)-1]
		s = strings.ReplaceAll(s, `'\''`, `'`)
	}
	return s
}

// listener checks that a Stop-hook listener waits when notices do.
func (r *report) listener(cfg Config) {
	const id, name = "listener", "Stop-hook listener"
	if cfg.Session == "" {
		return
	}
	box, err := inbox.Open(cfg.StateRoot, cfg.Session)
	if err != nil {
		r.add(id, name, Fail, oneLine(err.Error()), "")
		return
	}
	for _, p := range []string{box.Path(), box.CursorPath()} {
		if err := statefile.Check(p); err != nil {
			r.add(id, name, Warn, "could not read the notice inbox: "+err.Error(), "move it aside; the server starts a new one")
			return
		}
	}
	on, err := box.Listening()
	if err != nil {
		r.add(id, name, Warn, "could not tell whether a listener waits: "+oneLine(err.Error()), "")
		return
	}
	n, more, err := box.Backlog()
	if err != nil {
		r.add(id, name, Warn, "could not read the notice inbox: "+oneLine(err.Error()), "")
		return
	}
	count := fmt.Sprint(n)
	if more {
		count += " or more"
	}
	switch {
	case on && n == 0:
		r.add(id, name, OK, "a listener waits for session "+cfg.Session+"; no notice is pending", "")
	case on:
		r.add(id, name, OK, fmt.Sprintf("a listener waits for session %s and %s %s pending; it wakes the session within a second",
			cfg.Session, count, plural(n, "notice is", "notices are")), "")
	case n == 0:
		r.add(id, name, OK, "no listener waits and no notice is pending (the Stop hook starts one after each turn)", "")
	default:
		r.add(id, name, Warn, fmt.Sprintf("%s %s pending for session %s and no listener waits: the session is not woken until its current turn ends",
			count, plural(n, "notice is", "notices are"), cfg.Session),
			"if the session is idle, check that Claude Code runs the plugin's Stop hook (/hooks)")
	}
}

// servers checks how many server processes run for the session on this
// machine: each marks itself with a lock file beside the session's
// mailbox (see [runlock]). Two or more share the mailbox, which is seldom
// meant: two host sessions given one session id each fetch and
// acknowledge what was meant for the other.
func (r *report) servers(cfg Config, own identity.PublicKey) {
	const id, name = "servers", "server processes"
	if cfg.Session == "" {
		return
	}
	mb, err := mailbox.Open(cfg.StateRoot, own, cfg.Session, nil)
	if err != nil {
		r.add(id, name, Warn, oneLine(err.Error()), "")
		return
	}
	pids, err := runlock.Running(filepath.Dir(mb.Path()), cfg.Session)
	if err != nil {
		r.add(id, name, Warn, "could not tell which servers run: "+oneLine(err.Error()), "")
		return
	}
	words := make([]string, len(pids))
	for i, p := range pids {
		words[i] = strconv.Itoa(p)
	}
	switch len(pids) {
	case 0:
		r.add(id, name, OK, "no server of session "+cfg.Session+" runs on this machine", "")
	case 1:
		r.add(id, name, OK, fmt.Sprintf("one server runs for session %s (process %d)", cfg.Session, pids[0]), "")
	default:
		r.add(id, name, Warn, fmt.Sprintf("%d servers run for session %s (processes %s): they share its mailbox, so each fetches and acknowledges messages meant for the other",
			len(pids), cfg.Session, strings.Join(words, ", ")),
			"give each session its own id (do not set one --session or INTERLINK_SESSION for several), or stop all but one")
	}
}

// mailbox checks how full the session's mailbox is.
func (r *report) mailbox(cfg Config, own identity.PublicKey) {
	const id, name = "mailbox", "mailbox"
	if cfg.Session == "" {
		return
	}
	mb, err := mailbox.Open(cfg.StateRoot, own, cfg.Session, nil)
	if err != nil {
		r.add(id, name, Fail, oneLine(err.Error()), "")
		return
	}
	recs, err := mb.Records()
	if err != nil {
		r.add(id, name, Fail, fmt.Sprintf("%s cannot be read: %s", mb.Path(), oneLine(err.Error())),
			"move the damaged file aside; the server starts a new one and relays deliver again what they still hold")
		return
	}
	// The mailbox file holds unread messages only; read ones are
	// tombstones, which do not count against its bounds.
	detail := fmt.Sprintf("%d unread %s (limit %d)", len(recs), plural(len(recs), "message", "messages"), mailbox.MaxRecords)
	if float64(len(recs)) >= mailboxWarn*mailbox.MaxRecords {
		r.add(id, name, Warn, detail+": when it is full, new messages wait on the relay",
			"fetch and acknowledge the unread messages")
		return
	}
	r.add(id, name, OK, detail, "")
}

// codex checks Codex's config.toml for the interlink server and its hooks.
func (r *report) codex(cfg Config) {
	const id = "codex"
	name := "Codex config " + cfg.CodexConfig
	data, ok, err := statefile.Read(cfg.CodexConfig)
	if err == nil && !ok {
		r.add(id, name, Fail, "no Codex configuration at "+cfg.CodexConfig,
			"merge what interlink-mcp setup codex prints into it, then trust the hooks in Codex's /hooks")
		return
	}
	if err != nil {
		r.add(id, name, Fail, oneLine(err.Error()), "")
		return
	}
	text := string(data)
	section := tomlSection(text, "[mcp_servers.interlink]")
	if section == "" {
		r.add(id, name, Fail, "no [mcp_servers.interlink] section",
			"merge what interlink-mcp setup codex prints into it")
		return
	}
	command := tomlString(section, "command")
	if st, detail := r.binaryCheck(cfg, command, "the interlink server"); st != OK {
		r.add(id, name, st, detail, "merge what interlink-mcp setup codex prints into it again")
		return
	}
	if n := strings.Count(text, `tool = "bind_codex_session"`); n < len(codexHooks) {
		r.add(id, name, Warn, fmt.Sprintf("%d of the %d binding hooks (bind_codex_session) are configured: the session may stay unbound", n, len(codexHooks)),
			"merge the hooks that interlink-mcp setup codex prints, then trust them in /hooks")
		return
	}
	// Codex runs the prompt hook for every turn, also for the turn a
	// queued notice starts; only with the prompt can the server tell the
	// operator's prompt from its own notice. Hooks of older setups pass
	// operator_turn instead, which no longer restarts anything.
	if !strings.Contains(text, `prompt = "${prompt}"`) {
		r.add(id, name, Warn, "the UserPromptSubmit binding hook does not pass the prompt (prompt = \"${prompt}\"): "+
			"the operator's prompts do not restart the wake-up and send budgets",
			"merge the hooks that interlink-mcp setup codex prints again, then trust them in /hooks")
		return
	}
	r.add(id, name, OK, "runs this interlink-mcp, with the binding hooks", "")
}

// codexHooks are the events setup codex writes a binding hook for.
var codexHooks = []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "Stop"}

// tomlSection returns the lines of the table that starts with header, up
// to the next table header, or "" when there is no such table.
func tomlSection(text, header string) string {
	var b strings.Builder
	in := false
	for line := range strings.Lines(text) {
		t := strings.TrimSpace(line)
		switch {
		case t == header:
			in = true
		case in && strings.HasPrefix(t, "["):
			return b.String()
		case in:
			b.WriteString(line)
		}
	}
	if in && b.Len() == 0 {
		return "\n"
	}
	return b.String()
}

// tomlString returns the basic-string value of key in section, or "".
func tomlString(section, key string) string {
	for line := range strings.Lines(section) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || strings.TrimSpace(k) != key {
			continue
		}
		v = strings.TrimSpace(v)
		var s string
		if json.Unmarshal([]byte(v), &s) == nil {
			return s
		}
		return strings.Trim(v, `'"`)
	}
	return ""
}

// readJSON decodes the JSON file at path into v. It reports false, and
// no error, when the file does not exist. It reads as [statefile.Read]
// does: never from anything but a regular file.
func readJSON(path string, v any) (bool, error) {
	data, ok, err := statefile.Read(path)
	if err != nil || !ok {
		return false, err
	}
	return true, json.Unmarshal(data, v)
}
