package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

const channelsUsage = `Usage: interlink-mcp channels [--channel ENTRY] [-- CLAUDE ARGS...]

Starts Claude Code with interlink's channel enabled: messages then arrive
as Claude channel notifications instead of through the Stop hook. It sets
INTERLINK_CHANNELS=1 and runs

    claude --dangerously-load-development-channels ENTRY CLAUDE ARGS...

ENTRY names the interlink MCP server the way Claude Code knows it:
server:interlink (the default) for a server added with 'claude mcp add
interlink', or plugin:interlink@MARKETPLACE for a plugin installed from a
marketplace. The Stop hook's listener steps aside by itself in this mode.

Options:
    --channel ENTRY  the channel entry; default server:interlink
    -h, --help       show this help
`

// runChannels runs Claude Code with the interlink channel. It returns only on
// failure (on Unix the process is replaced) or, where it cannot be
// replaced, with Claude Code's exit status.
func runChannels(c *cli, _ context.Context, args []string, _ io.Reader) int {
	entry := "server:interlink"
	for len(args) > 0 {
		switch a := args[0]; {
		case a == "--":
			args = args[1:]
			goto run
		case a == "-h" || a == "-help" || a == "--help":
			fmt.Fprint(c.stdout, channelsUsage)
			return exitOK
		case a == "--channel" || a == "-channel":
			if len(args) < 2 {
				return c.fail(exitUsage, "channels: --channel needs a value", "run 'interlink-mcp help channels'")
			}
			entry, args = args[1], args[2:]
		case strings.HasPrefix(a, "--channel="):
			entry, args = strings.TrimPrefix(a, "--channel="), args[1:]
		default:
			return c.fail(exitUsage, fmt.Sprintf("channels: unexpected argument %q; put Claude's arguments after --", a),
				"run 'interlink-mcp help channels'")
		}
	}
run:
	if key, err := c.configPath("", "--key", "INTERLINK_KEY", "id.key"); err == nil {
		if _, err := os.Stat(key); errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(c.stderr, "%s: warning: no key file at %s; the interlink server will not start (create one with 'interlink-mcp keygen --out %s')\n",
				progName, key, key)
		}
	}
	claude, err := exec.LookPath("claude")
	if err != nil {
		return c.fail(exitNotFound, "channels: claude is not on PATH", "install Claude Code, or add its folder to PATH")
	}
	argv := append([]string{claude, "--dangerously-load-development-channels", entry}, args...)
	env := append(os.Environ(), "INTERLINK_CHANNELS=1")
	return execClaude(c, argv, env)
}
