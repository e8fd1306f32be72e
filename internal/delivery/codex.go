package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
	"time"

	"github.com/interlink-go/interlink/internal/budget"
	"github.com/interlink-go/interlink/internal/codex"
	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/render"
)

// Limits of a codex queue handoff.
const (
	// MaxQueueText is the longest text handed to codex queue, in bytes: the
	// text is one command-line argument.
	MaxQueueText = 12 << 10
	// QueueTimeout bounds one codex queue run. A run that times out is not
	// repeated: whether it queued the text is unknown.
	QueueTimeout = 30 * time.Second
	// QueueAttempts and QueuePause: a failing run is tried up to three times,
	// two seconds apart.
	QueueAttempts = 3
	QueuePause    = 2 * time.Second
)

// QueueError is a failed handoff to codex queue. Retryable tells whether
// another attempt may succeed.
type QueueError struct {
	Err       error
	Retryable bool
}

func (e *QueueError) Error() string { return "codex queue: " + e.Err.Error() }
func (e *QueueError) Unwrap() error { return e.Err }

// Queue runs `<bin> queue --thread <thread> --message <text>` once: the
// arguments are passed as they are, never through a shell, and the
// command's output is discarded. The text must be at most [MaxQueueText]
// bytes and hold no NUL byte.
//
// Codex starts a turn with the text as its prompt and runs the prompt hook
// for it, so the text goes with [budget.WakeLine] in front: that turn is
// not the operator's. Every codex queue run passes here, a saved failure
// handed over again included.
func Queue(ctx context.Context, bin, thread, text string) error {
	if err := codex.ValidThread(thread); err != nil {
		return &QueueError{Err: err}
	}
	text = budget.MarkWake(text)
	if len(text) > MaxQueueText {
		return &QueueError{Err: fmt.Errorf("text of %d bytes exceeds the %d-byte limit; see failed_deliveries", len(text), MaxQueueText)}
	}
	if strings.IndexByte(text, 0) >= 0 {
		return &QueueError{Err: errors.New("text holds a NUL byte")}
	}
	ctx, cancel := context.WithTimeout(ctx, QueueTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "queue", "--thread", thread, "--message", text)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	switch {
	case err == nil:
		return nil
	case ctx.Err() == context.DeadlineExceeded:
		return &QueueError{Err: fmt.Errorf("no answer within %v; the text may or may not be queued, so it is not retried", QueueTimeout)}
	case ctx.Err() != nil:
		return &QueueError{Err: ctx.Err()}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return &QueueError{Err: fmt.Errorf("exit status %d", ee.ExitCode()), Retryable: true}
	}
	return &QueueError{Err: err} // could not start: missing or not executable
}

// Codex is the Codex CLI sink: every text is handed to `codex queue` for the
// bound thread, which starts a turn on it. What could not be handed over is
// saved in the failed-delivery store for the operator.
type Codex struct {
	Bin    string
	Thread string
	Failed *codex.Failed
	Logger *slog.Logger
	// Pause is the wait between attempts; zero means QueuePause.
	Pause time.Duration
}

// queueText renders r as the attributed block codex queue receives: the
// same text a Claude listener would print.
func queueText(r Record) (string, error) {
	line, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	return render.Line(string(line)), nil
}

// deliver tries the handoff up to QueueAttempts times.
func (s *Codex) deliver(ctx context.Context, text string) error {
	pause := s.Pause
	if pause == 0 {
		pause = QueuePause
	}
	var err error
	for attempt := 1; attempt <= QueueAttempts; attempt++ {
		err = Queue(ctx, s.Bin, s.Thread, text)
		if err == nil {
			return nil
		}
		var qe *QueueError
		if !errors.As(err, &qe) || !qe.Retryable || attempt == QueueAttempts {
			break
		}
		s.log().Debug("codex queue failed; trying again", "attempt", attempt, "err", err)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
	return err
}

func (s *Codex) log() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// Notice queues the notice. On success saved notice entries are cleared,
// since this one supersedes them; on failure the notice is saved (best
// effort: the mailbox issues a new notice later anyway).
func (s *Codex) Notice(ctx context.Context, id, text string) (mailbox.State, error) {
	rec := NoticeRecord(id, text)
	q, err := queueText(rec)
	if err != nil {
		return "", err
	}
	if err := s.deliver(ctx, q); err != nil {
		if _, serr := s.Failed.Save(codex.Entry{MsgID: id, Sender: rec.Sender, Text: q, Reason: err.Error(), Notice: true}); serr != nil {
			s.log().Warn("failed notice not saved", "notice", id, "err", serr)
		}
		return "", err
	}
	if err := s.Failed.ClearNotices(); err != nil {
		s.log().Warn("saved notices not cleared", "err", err)
	}
	return mailbox.StateHostQueued, nil
}

// Text queues a full-text record (a pairing notice). When every attempt
// fails it is saved for failed_deliveries; a save that fails too is logged,
// and the record is given up.
func (s *Codex) Text(ctx context.Context, r Record) error {
	q, err := queueText(r)
	if err != nil {
		return err
	}
	if err := s.deliver(ctx, q); err != nil {
		if _, serr := s.Failed.Save(codex.Entry{MsgID: r.MsgID, Sender: r.Sender, Text: q, Reason: err.Error()}); serr != nil {
			s.log().Error("pairing notice lost: not queued and not saved", "msg_id", r.MsgID, "queue_err", err, "save_err", serr)
		}
	}
	return nil
}

// Retry hands a saved entry's text to codex queue once more, without
// further attempts.
func (s *Codex) Retry(ctx context.Context, e codex.Entry) error {
	return Queue(ctx, s.Bin, s.Thread, e.Text)
}
