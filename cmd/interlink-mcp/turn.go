package main

import (
	"io"
	"time"

	"github.com/interlink-go/interlink/internal/budget"
	"github.com/interlink-go/interlink/internal/paths"
)

const turnUsage = `Usage: interlink-mcp turn [--session ID] [--state-dir DIR]

The UserPromptSubmit hook that records the operator's turn: when the person
at the session writes a prompt, the session's wake-up and send budgets start
counting again, so peers paused for waking the session too often wake it
again and sends refused for going past the budget go out again. It reads
the hook's JSON from stdin for the session id.

It prints nothing and always exits 0: a prompt hook's output would become
part of the prompt, and its failure would hold the prompt back. A problem
is reported on stderr.

Options:
    --session ID     the session; default the hook input's session_id
    --state-dir DIR  state root, as for the server. Env INTERLINK_STATE_DIR;
                     default $XDG_STATE_HOME/interlink, else
                     ~/.local/state/interlink
    -h, --help       show this help
`

// turn runs the prompt hook. Whatever happens it exits 0.
func (c *cli) turn(args []string, stdin io.Reader) int {
	fset := newFlagSet("turn")
	var session, stateDir string
	fset.StringVar(&session, "session", "", "")
	fset.StringVar(&stateDir, "state-dir", "", "")
	if _, ok := c.parseFlags(fset, args, turnUsage, "turn: ", exitOK, ""); !ok {
		return exitOK
	}
	session, err := c.hookSessionID(session, stdin)
	if err != nil {
		c.fail(exitOK, "turn: session id "+session+": "+err.Error())
		return exitOK
	}
	explicitState, _ := c.setting(stateDir, "--state-dir", "INTERLINK_STATE_DIR", "")
	root, err := paths.StateRoot(c.getenv, explicitState)
	if err != nil {
		c.fail(exitOK, "turn: state folder: "+err.Error())
		return exitOK
	}
	if err := budget.RecordTurn(root, session, time.Now()); err != nil {
		c.fail(exitOK, "turn: "+err.Error())
	}
	return exitOK
}
