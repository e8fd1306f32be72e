package main

import (
	"context"
	"io"
	"time"

	"github.com/interlink-go/interlink/internal/progress"
)

const nudgeUsage = `Usage: interlink-mcp nudge [--state-dir DIR]

The PostToolUse hook that reminds the model to report progress. It reads the
hook's JSON from stdin, and when this session is working on a peer's task
and has sent no update for longer than INTERLINK_PROGRESS_INTERVAL seconds
(default 60; 0 turns it off), it prints one hook answer with a reminder on
stdout. Otherwise it prints nothing.

It always exits 0: a problem is reported on stderr and never interrupts
the model.

Options:
    --state-dir DIR  state root, as for the server. Env INTERLINK_STATE_DIR;
                     default $XDG_STATE_HOME/interlink, else
                     ~/.local/state/interlink
    -h, --help       show this help
`

// runNudge runs the reminder hook. Whatever happens it exits 0.
func runNudge(c *cli, _ context.Context, args []string, stdin io.Reader) int {
	fset := newFlagSet("nudge")
	var stateDir string
	fset.StringVar(&stateDir, "state-dir", "", "")
	if _, ok := c.parseFlags(fset, args, nudgeUsage, "nudge: ", exitOK, ""); !ok {
		return exitOK
	}
	root, err := c.stateRoot(stateDir)
	if err != nil {
		c.fail(exitOK, "nudge: state folder: "+err.Error())
		return exitOK
	}
	if err := progress.Nudge(stdin, c.stdout, root, c.getenv, time.Now()); err != nil {
		c.fail(exitOK, "nudge: "+err.Error())
	}
	return exitOK
}
