package inbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/interlink-go/interlink/internal/budget"
	"github.com/interlink-go/interlink/internal/render"
)

// ExitWake is the exit status with which the listener's process wakes
// Claude Code: a Stop hook run with asyncRewake that exits 2 starts a new
// turn whose prompt is what the hook wrote on stderr. A listener that fails
// exits 1, never 2, so that it cannot wake the model with an error message.
const ExitWake = 2

// ErrNotShown reports that the listener could not write what it had to
// show. Nothing was consumed: the next listener shows it again.
var ErrNotShown = errors.New("inbox: could not show the records")

// ListenerOptions holds the optional settings of [Inbox.RunListener]. A nil
// *ListenerOptions, and every zero field, means the default.
type ListenerOptions struct {
	// RenewAfter is how long the listener waits before it asks for a
	// renewal; [DefaultRenewAfter] unless set.
	RenewAfter time.Duration
	// Poll is how often it looks for records and for its host;
	// [DefaultPoll] unless set.
	Poll time.Duration
	// HostGone reports whether the host that started the listener has
	// gone. Nil watches this process's parent and grandparent: Claude Code
	// runs a hook as `sh -c <command>` in a process group of its own, and
	// nothing ends the listener when Claude Code exits, so a change of
	// either (the orphan is adopted) counts as the host gone. Where a parent
	// cannot be watched, the listener ends at its renewal time.
	HostGone func() bool
}

// RunListener is the Stop-hook listener of the inbox's session. It writes
// on w only what the model is to read, and reports whether it wrote: the
// caller's process then exits [ExitWake], which wakes the idle session.
//
// The protocol:
//
//  1. It creates the inbox when missing and takes the session's listener
//     lock. When another listener holds it, that one serves the session:
//     RunListener returns false at once.
//  2. It waits for records past the cursor, watching its host. When the
//     host goes away or ctx ends, it returns false, having consumed
//     nothing.
//  3. It shows what it found: the batch of records, each rendered for the
//     model, behind the wake line ([budget.MarkWake]) so that the prompt
//     hook does not take the turn it starts for the operator's. After
//     [ListenerOptions.RenewAfter] without a record it shows the renewal
//     notice ([RenewalText]) instead, so that the next Stop starts a fresh
//     listener before Claude Code's one-hour limit for the hook. When the
//     write fails, the error wraps [ErrNotShown] and nothing is consumed.
//  4. It commits the cursor past what it showed. A failed commit is not an
//     error: the records were shown, and the next listener may show them
//     again, which is better than losing them.
func (b *Inbox) RunListener(ctx context.Context, w io.Writer, opts *ListenerOptions) (woke bool, err error) {
	var o ListenerOptions
	if opts != nil {
		o = *opts
	}
	if o.RenewAfter <= 0 {
		o.RenewAfter = DefaultRenewAfter
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if err := b.Create(); err != nil {
		return false, err
	}
	release, ok, err := b.Listen()
	if err != nil || !ok {
		return false, err
	}
	defer release()
	if o.HostGone == nil {
		o.HostGone = newParentWatch().gone
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go watchHost(ctx, cancel, o.HostGone, o.Poll)

	batch, renewal, err := b.Wait(ctx, o.RenewAfter, o.Poll)
	if err != nil {
		if ctx.Err() != nil {
			return false, nil // stopped, or the host is gone: nothing shown, nothing consumed
		}
		return false, err
	}
	if renewal {
		if _, err := fmt.Fprintln(w, budget.MarkWake(RenewalText)); err != nil {
			return false, fmt.Errorf("%w: %w", ErrNotShown, err)
		}
		return true, nil
	}
	out := make([]string, len(batch.Lines))
	for i, l := range batch.Lines {
		out[i] = render.Line(l)
	}
	if _, err := io.WriteString(w, budget.MarkWake(strings.Join(out, "\n"))+"\n"); err != nil {
		return false, fmt.Errorf("%w: %w", ErrNotShown, err)
	}
	_ = b.Commit(batch.End)
	return true, nil
}

// watchHost asks gone every poll until ctx ends, and cancels when it
// reports the host gone.
func watchHost(ctx context.Context, cancel func(), gone func() bool, poll time.Duration) {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if gone() {
				cancel()
				return
			}
		}
	}
}
