package main

import (
	"context"
	"io"
	"time"

	"github.com/interlink-go/interlink/internal/budget"
)

const turnUsage = `Usage: interlink-mcp turn [--session ID] [--state-dir DIR]

The UserPromptSubmit hook that records the operator's turn: when the person
at the session types a prompt, the session's wake-up and send budgets start
counting again, so peers paused for waking the session too often wake it
again and sends refused for going past the budget go out again. It reads
the hook's JSON from stdin for the session id and the prompt.

Claude Code runs this hook for every turn, also for the ones it starts by
itself: the wake-ups of the Stop hook and of background tasks. A prompt
that carries Interlink's wake-up line or Claude Code's task notification
is not the operator's, and changes nothing; nor does hook input without a
prompt. Run by hand from a terminal, it records the operator's turn.

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

// runTurn runs the prompt hook. Whatever happens it exits 0.
func runTurn(c *cli, _ context.Context, args []string, stdin io.Reader) int {
	fset := newFlagSet("turn")
	var session, stateDir string
	fset.StringVar(&session, "session", "", "")
	fset.StringVar(&stateDir, "state-dir", "", "")
	if _, ok := c.parseFlags(fset, args, turnUsage, "turn: ", exitOK, ""); !ok {
		return exitOK
	}
	in := readHookInput(stdin)
	session, err := c.sessionID(session, func() string { return in.sessionID }, mainSession)
	if err != nil {
		c.fail(exitOK, "turn: session id "+session+": "+err.Error())
		return exitOK
	}
	if !in.terminal && !in.hasPrompt {
		c.fail(exitOK, "turn: the hook input holds no prompt; nothing recorded (run it as a UserPromptSubmit hook)")
		return exitOK
	}
	root, err := c.stateRoot(stateDir)
	if err != nil {
		c.fail(exitOK, "turn: state folder: "+err.Error())
		return exitOK
	}
	if in.terminal {
		// A person typed the command itself.
		err = budget.RecordTurn(root, session, time.Now())
	} else {
		_, err = budget.RecordPrompt(root, session, in.prompt, time.Now())
	}
	if err != nil {
		c.fail(exitOK, "turn: "+err.Error())
	}
	return exitOK
}
