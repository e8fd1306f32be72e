package setup

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/interlink-go/interlink/internal/paths"
)

// codexHookEvents are the Codex lifecycle events whose hooks bind the
// session to its thread: the start of a session, then fallbacks for when
// the MCP server was not ready yet or was restarted.
var codexHookEvents = []struct{ event, matcher string }{
	{"SessionStart", ""},
	{"UserPromptSubmit", ""},
	{"PreToolUse", "^mcp__interlink__"},
	{"Stop", ""},
}

// CodexConfig returns the config.toml sections for Codex: the interlink MCP
// server (command bin in the Codex host) with its environment, and the four
// binding hooks. codexHome, when set, is repeated in the server's
// environment so that codex queue reaches the same Codex home and daemon.
// With comments, the optional settings are there as comments.
func CodexConfig(bin, codexHome string, comments bool) string {
	var b strings.Builder
	q := strconv.Quote
	b.WriteString(`# Interlink for Codex CLI. Merge these sections into ~/.codex/config.toml
# (or $CODEX_HOME/config.toml), keeping your other servers and hooks. Then
# restart Codex, review and trust the four Interlink hooks in /hooks, and
# send one prompt: the hooks bind this session to its thread.

[mcp_servers.interlink]
`)
	fmt.Fprintf(&b, "command = %s\nargs = [\"--host\", \"codex\"]\n\n[mcp_servers.interlink.env]\n", q(bin))
	if codexHome != "" {
		b.WriteString("# codex queue must use the same Codex home (and daemon) as this Codex.\n")
		fmt.Fprintf(&b, "CODEX_HOME = %s\n", q(codexHome))
	} else if comments {
		b.WriteString("# Set when Codex uses a custom home: codex queue must reach the same one.\n# CODEX_HOME = \"/home/you/.codex\"\n")
	}
	if comments {
		b.WriteString(`# INTERLINK_URL = "http://127.0.0.1:9440"
# INTERLINK_KEY = "/home/you/.config/interlink/id.key"
# INTERLINK_PEERS = "/home/you/.config/interlink/peers.json"
# INTERLINK_CODEX_BIN = "/path/to/codex"   # when codex is not on Codex's PATH
# INTERLINK_DISCOVERABLE = "no"   # strangers on a relay with --auth required do not see this session
# INTERLINK_RECEIPTS = "no"       # no end-to-end receipts, sent or asked for
`)
	}
	for _, h := range codexHookEvents {
		fmt.Fprintf(&b, "\n[[hooks.%s]]\n", h.event)
		if h.matcher != "" {
			fmt.Fprintf(&b, "matcher = %s\n", q(h.matcher))
		}
		fmt.Fprintf(&b, "[[hooks.%s.hooks]]\ntype = \"mcp_tool\"\nserver = \"interlink\"\ntool = \"bind_codex_session\"\n", h.event)
		if h.event == "UserPromptSubmit" {
			// The prompt of every turn goes to the server, which restarts
			// the wake-up and send budgets for one the operator typed.
			b.WriteString("input = { thread_id = \"${session_id}\", prompt = \"${prompt}\" }\n")
		} else {
			b.WriteString("input = { thread_id = \"${session_id}\" }\n")
		}
	}
	return b.String()
}

// CodexHome returns Codex's home folder as Codex finds it: CODEX_HOME, else
// .codex under the home folder; "" when neither is known. getenv looks up
// the environment.
func CodexHome(getenv func(string) string) string {
	if h := getenv("CODEX_HOME"); h != "" {
		return h
	}
	if h, err := paths.Home(getenv); err == nil {
		return filepath.Join(h, ".codex")
	}
	return ""
}
