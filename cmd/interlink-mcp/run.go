package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/interlink-go/interlink/internal/cmdline"
	"github.com/interlink-go/interlink/internal/version"
)

const progName = "interlink-mcp"

// Exit statuses. Usage errors get their own status so that scripts can tell
// a mistyped command line from a command that ran and failed.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
	// exitNotFound is the shell's status for a command it cannot find;
	// channels uses it when there is no claude to start, so that scripts
	// written for the original launcher see the same status.
	exitNotFound = 127
)

// usage is printed for --help. It lists only what this build can do.
const usage = `interlink-mcp connects a coding agent to other agents: it signs and sends
messages with the agent's Ed25519 key, and admits only messages from keys
listed in its peers.json.

Usage:
    interlink-mcp [options]              the MCP stdio server of one session
    interlink-mcp demo                   two agents talking through a local bus
    interlink-mcp keygen --out PATH [--force]
    interlink-mcp setup claude [--dir DIR] [--state-dir DIR]
    interlink-mcp setup codex
    interlink-mcp channels [-- CLAUDE ARGS...]
    interlink-mcp wait [--session ID] [--renew-after-secs N] [--state-dir DIR]
    interlink-mcp nudge [--state-dir DIR]
    interlink-mcp turn [--session ID] [--state-dir DIR]
    interlink-mcp doctor [options] [--json]
    interlink-mcp --version
    interlink-mcp --help

Commands:
    (none)      serve MCP on stdin and stdout; see 'interlink-mcp help serve'
    demo        show two sessions exchanging signed messages, then clean up
    keygen      create a secret key file and print its public key
    setup       write a Claude Code plugin, or print the Codex configuration
    channels    start Claude Code with interlink's channel enabled
    wait        the Claude Code Stop hook that wakes the session for new messages
    nudge       the PostToolUse hook that reminds the model to report progress
    turn        the UserPromptSubmit hook that records the operator's turn
    doctor      check the path to the peers and say what to fix

Options:
    -h, --help  show this help
    --version   print the version

Run 'interlink-mcp help COMMAND' for the options of a command.
`

// helpHint points at the usage text after a usage error.
const helpHint = "run 'interlink-mcp --help' for the commands of this build"

// cli holds what the commands need from the process, so that tests can run
// them with their own streams, environment and randomness. Its methods are
// the conventions every command shares; each command is a function of its
// own file.
type cli struct {
	stdout io.Writer // the command's intended output only
	stderr io.Writer // errors and hints
	getenv func(string) string
	random io.Reader // entropy for new keys; nil means crypto/rand
}

// command is a subcommand: its usage text, for help COMMAND, and the
// function that runs it with the arguments after its name.
type command struct {
	usage string
	run   func(c *cli, ctx context.Context, args []string, stdin io.Reader) int
}

// commands are the subcommands by name. The server has no name: it runs
// when no command is given, or only flags.
var commands = map[string]command{
	"keygen":   {keygenUsage, runKeygen},
	"setup":    {setupUsage, runSetup},
	"channels": {channelsUsage, runChannels},
	"wait":     {waitUsage, runWait},
	"nudge":    {nudgeUsage, runNudge},
	"turn":     {turnUsage, runTurn},
	"demo":     {demoUsage, runDemo},
	"doctor":   {doctorUsage, runDoctor},
}

// run runs interlink-mcp with the command-line arguments args (without the
// program name) and returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := &cli{stdout: stdout, stderr: stderr, getenv: os.Getenv}
	return c.run(ctx, args, stdin)
}

func (c *cli) run(ctx context.Context, args []string, stdin io.Reader) int {
	if len(args) == 0 {
		return runServe(c, ctx, args, stdin)
	}
	name, rest := args[0], args[1:]
	if cmd, ok := commands[name]; ok {
		return cmd.run(c, ctx, rest, stdin)
	}
	switch {
	case name == "-h" || name == "-help" || name == "--help" || name == "help":
		return c.help(rest)
	case name == "-version" || name == "--version":
		if len(rest) > 0 {
			return c.fail(exitUsage, fmt.Sprintf("unexpected argument %q after %s", rest[0], name), helpHint)
		}
		fmt.Fprintf(c.stdout, "%s %s\n", progName, version.String())
		return exitOK
	case len(name) > 0 && name[0] == '-':
		// Flags before any command configure the MCP stdio server.
		return runServe(c, ctx, args, stdin)
	default:
		return c.fail(exitUsage, fmt.Sprintf("unknown command %q", name), helpHint)
	}
}

// help prints the usage text, or that of the command named in args.
func (c *cli) help(args []string) int {
	switch {
	case len(args) == 0:
		fmt.Fprint(c.stdout, usage)
		return exitOK
	case len(args) > 1:
		return c.fail(exitUsage, fmt.Sprintf("unexpected argument %q", args[1]), helpHint)
	}
	text := serveUsage
	if args[0] != "serve" {
		cmd, ok := commands[args[0]]
		if !ok {
			return c.fail(exitUsage, fmt.Sprintf("no help for %q", args[0]), helpHint)
		}
		text = cmd.usage
	}
	fmt.Fprint(c.stdout, text)
	return exitOK
}

// fail writes msg as one line prefixed with the program name, then each hint
// on a line of its own, all to stderr, and returns code for run to exit with.
func (c *cli) fail(code int, msg string, hints ...string) int {
	return cmdline.Fail(c.stderr, progName, code, msg, hints...)
}
