package agent

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"

	"github.com/interlink-go/interlink/internal/mailbox"
)

// notifyLoop wakes the host while attention-worthy messages are unread.
//
// Only one process per identity and session issues notices: the loop first
// takes the mailbox's notifier lock, trying again every LockRetry while
// another process holds it, and keeps it until ctx ends. Then, every Notify
// tick, it asks the mailbox for a notice (the mailbox decides, with its
// expiry and back-off, whether one is due), hands it to the sink, and
// records the outcome. Only the recording is retried: a handoff is never
// repeated because its status could not be written, and a notice that was
// lost anyway expires and is replaced by a fresh one.
func (a *Agent) notifyLoop(ctx context.Context) {
	lock, ok := a.notifierLock(ctx)
	if !ok {
		return
	}
	defer func() { _ = lock.Unlock() }()
	a.log.Debug("notifier lock held", "path", lock.Path())

	tick := time.NewTicker(a.cfg.Timing.Notify)
	defer tick.Stop()
	for {
		a.notifyOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// notifierLock takes the notifier lock, waiting until it is free or ctx
// ends.
func (a *Agent) notifierLock(ctx context.Context) (*flock.Flock, bool) {
	path := a.mailbox.NotifierLockPath()
	lock := flock.New(path)
	logged := false
	for {
		err := os.MkdirAll(filepath.Dir(path), 0o700)
		var got bool
		if err == nil {
			got, err = lock.TryLock()
		}
		switch {
		case err != nil:
			a.log.Warn("notifier lock", "path", path, "err", err)
		case got:
			return lock, true
		case !logged:
			a.log.Info("another process issues this session's notices; waiting", "path", path)
			logged = true
		}
		if !sleep(ctx, a.cfg.Timing.LockRetry) {
			return nil, false
		}
	}
}

// notifyOnce issues at most one notice.
func (a *Agent) notifyOnce(ctx context.Context) {
	n, err := a.mailbox.Reserve(ctx)
	if err != nil {
		a.log.Warn("notice reservation failed", "err", err)
		return
	}
	if n == nil {
		return
	}
	state, err := a.sink.Notice(ctx, n.ID, mailbox.NoticeText(n.ID))
	if err != nil {
		a.log.Warn("notice not delivered", "notice", n.ID, "attempt", n.Attempt, "err", err)
		state = mailbox.StateDeliveryFailed
	} else {
		a.log.Debug("notice delivered", "notice", n.ID, "messages", len(n.Messages), "state", state)
	}
	for {
		err := a.mailbox.Finish(ctx, n.ID, state)
		if err == nil {
			return
		}
		a.log.Warn("notice outcome not recorded; will retry", "notice", n.ID, "err", err)
		if !sleep(ctx, a.cfg.Timing.LockRetry) {
			return
		}
	}
}

// sleep waits d or until ctx ends, and reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
