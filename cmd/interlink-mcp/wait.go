package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/interlink-go/interlink/internal/inbox"
)

const waitUsage = `Usage: interlink-mcp wait [--session ID] [--renew-after-secs N] [--state-dir DIR]

The Claude Code Stop-hook listener. It waits for records in the session's
notice inbox (written by this session's interlink-mcp server), prints them
on stderr for the model and exits with status 2, which wakes the idle
session. After N seconds without a record it prints a renewal notice and
exits 2 as well, so that the next Stop starts a fresh listener before
Claude Code's one-hour limit for the hook.

It exits 0 at once, printing nothing, when INTERLINK_CHANNELS is on (the
server then notifies through channels) or when another listener of the
session is running. Errors exit 1.

The session is --session, else INTERLINK_SESSION, else the session_id of
the hook's JSON on stdin, else "main".

Options:
    --session ID          session id
    --renew-after-secs N  seconds to wait before a renewal, 1 to 3000;
                          default 3000
    --state-dir DIR       state root, as for the server. Env
                          INTERLINK_STATE_DIR; default
                          $XDG_STATE_HOME/interlink, else
                          ~/.local/state/interlink
    -h, --help            show this help
`

// runWait runs the Stop-hook listener of [inbox.Inbox.RunListener]. Only
// its protocol output goes to stderr; a failure exits 1, never 2, so that
// it cannot wake the model with an error message.
func runWait(c *cli, ctx context.Context, args []string, stdin io.Reader) int {
	fset := newFlagSet("wait")
	var session, renew, stateDir string
	fset.StringVar(&session, "session", "", "")
	fset.StringVar(&renew, "renew-after-secs", "", "")
	fset.StringVar(&stateDir, "state-dir", "", "")
	// Exit 1, never 2, on a usage error: 2 would wake the model with it.
	if code, ok := c.parseFlags(fset, args, waitUsage, "wait: ", exitError, "run 'interlink-mcp help wait'"); !ok {
		return code
	}
	opts := &inbox.ListenerOptions{}
	if renew != "" {
		n, err := strconv.Atoi(renew)
		if err != nil || n < 1 || n > 3000 {
			return c.fail(exitError, fmt.Sprintf("wait: --renew-after-secs %q: want a whole number from 1 to 3000", renew))
		}
		opts.RenewAfter = time.Duration(n) * time.Second
	}
	if channelMode(c.getenv) {
		return exitOK
	}
	session, err := c.sessionID(session, func() string { return readHookInput(stdin).sessionID }, mainSession)
	if err != nil {
		return c.fail(exitError, fmt.Sprintf("wait: session id %q: %v", session, err))
	}
	root, err := c.stateRoot(stateDir)
	if err != nil {
		return c.fail(exitError, "wait: state folder: "+err.Error(), "set --state-dir or INTERLINK_STATE_DIR")
	}
	box, err := inbox.Open(root, session)
	if err != nil {
		return c.fail(exitError, "wait: "+err.Error())
	}
	woke, err := box.RunListener(ctx, c.stderr, opts)
	switch {
	case errors.Is(err, inbox.ErrNotShown):
		return exitError // stderr failed: nothing more can be said there
	case err != nil:
		return c.fail(exitError, "wait: "+err.Error())
	case woke:
		return inbox.ExitWake
	}
	return exitOK
}
