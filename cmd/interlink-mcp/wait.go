package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/interlink-go/interlink/internal/budget"
	"github.com/interlink-go/interlink/internal/inbox"
	"github.com/interlink-go/interlink/internal/paths"
	"github.com/interlink-go/interlink/internal/render"
)

// exitWake is the status with which the listener wakes Claude Code: an
// asyncRewake Stop hook that exits 2 starts a new turn showing its stderr.
const exitWake = 2

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

// wait runs the Stop-hook listener. Only its protocol output goes to
// stderr; a failure exits 1, never 2, so that it cannot wake the model with
// an error message.
func (c *cli) wait(ctx context.Context, args []string, stdin io.Reader) int {
	fset := newFlagSet("wait")
	var session, renew, stateDir string
	fset.StringVar(&session, "session", "", "")
	fset.StringVar(&renew, "renew-after-secs", "", "")
	fset.StringVar(&stateDir, "state-dir", "", "")
	// Exit 1, never 2, on a usage error: 2 would wake the model with it.
	if code, ok := c.parseFlags(fset, args, waitUsage, "wait: ", exitError, "run 'interlink-mcp help wait'"); !ok {
		return code
	}
	renewAfter := inbox.DefaultRenewAfter
	if renew != "" {
		n, err := strconv.Atoi(renew)
		if err != nil || n < 1 || n > 3000 {
			return c.fail(exitError, fmt.Sprintf("wait: --renew-after-secs %q: want a whole number from 1 to 3000", renew))
		}
		renewAfter = time.Duration(n) * time.Second
	}
	if channelMode(c.getenv) {
		return exitOK
	}
	session, err := c.hookSessionID(session, func() hookInput { return readHookInput(stdin) })
	if err != nil {
		return c.fail(exitError, fmt.Sprintf("wait: session id %q: %v", session, err))
	}
	explicitState, _ := c.setting(stateDir, "--state-dir", "INTERLINK_STATE_DIR", "")
	root, err := paths.StateRoot(c.getenv, explicitState)
	if err != nil {
		return c.fail(exitError, "wait: state folder: "+err.Error(), "set --state-dir or INTERLINK_STATE_DIR")
	}
	box, err := inbox.Open(root, session)
	if err != nil {
		return c.fail(exitError, "wait: "+err.Error())
	}
	if err := box.Create(); err != nil {
		return c.fail(exitError, "wait: "+err.Error())
	}
	release, ok, err := box.Listen()
	if err != nil {
		return c.fail(exitError, "wait: "+err.Error())
	}
	if !ok {
		return exitOK // another listener serves this session
	}
	defer release()
	// End quietly, consuming nothing, if the host goes away meanwhile.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watch := newParentWatch()
	go func() {
		t := time.NewTicker(inbox.DefaultPoll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if watch.gone() {
					cancel()
					return
				}
			}
		}
	}()
	batch, renewal, err := box.Wait(ctx, renewAfter, inbox.DefaultPoll)
	if err != nil {
		if ctx.Err() != nil {
			return exitOK // stopped by a signal or orphaned: nothing shown, nothing consumed
		}
		return c.fail(exitError, "wait: "+err.Error())
	}
	// What the listener prints becomes the prompt of the turn it starts,
	// so it starts with the wake line: the prompt hook must not take that
	// turn for the operator's (see budget.Typed).
	if renewal {
		if _, err := fmt.Fprintln(c.stderr, budget.MarkWake(inbox.RenewalText)); err != nil {
			return exitError
		}
		return exitWake
	}
	out := make([]string, len(batch.Lines))
	for i, l := range batch.Lines {
		out[i] = render.Line(l)
	}
	if _, err := io.WriteString(c.stderr, budget.MarkWake(strings.Join(out, "\n"))+"\n"); err != nil {
		// Not shown, so not consumed: the next listener prints it again.
		return exitError
	}
	if err := box.Commit(batch.End); err != nil {
		// Shown but not marked: the next listener may show it again, which
		// is better than losing it.
		return exitWake
	}
	return exitWake
}
