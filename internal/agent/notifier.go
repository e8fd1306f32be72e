package agent

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"

	"github.com/interlink-go/interlink/internal/codex"
	"github.com/interlink-go/interlink/internal/delivery"
	"github.com/interlink-go/interlink/internal/inbound"
	"github.com/interlink-go/interlink/internal/mailbox"
)

// sink returns how notices of the session id reach the host: Claude
// channels, codex queue for the thread, or the configured sink.
func (a *Agent) sink(id string, failed *codex.Failed) delivery.Sink {
	switch {
	case a.cfg.Channels:
		return delivery.Channel{Send: a.client.send}
	case a.cfg.Host == HostCodex && a.cfg.CodexBin != "":
		return &delivery.Codex{Bin: a.cfg.CodexBin, Thread: id, Failed: failed, Logger: a.log, Pause: a.cfg.Timing.QueuePause}
	}
	return a.cfg.Sink
}

// notifier tells the host about what arrived: notices while messages worth
// its attention are unread, and pairing notices. Every notice of the
// session passes it, which makes it the place for anything that must see
// each wake-up of the host, such as a per-peer budget.
type notifier struct {
	mailbox *mailbox.Mailbox
	sink    delivery.Sink // nil: notices are only logged
	every   time.Duration // between two looks at the mailbox
	retry   time.Duration // between attempts on the lock, a record, a sink
	log     *slog.Logger
}

// run wakes the host while attention-worthy messages are unread.
//
// Only one process per identity and session issues notices: run first
// takes the mailbox's notifier lock, trying again every retry while another
// process holds it, and keeps it until ctx ends. Then, every tick, it asks
// the mailbox for a notice (the mailbox decides, with its expiry and
// back-off, whether one is due), hands it to the sink, and records the
// outcome. Only the recording is retried: a handoff is never repeated
// because its status could not be written, and a notice that was lost
// anyway expires and is replaced by a fresh one.
func (n *notifier) run(ctx context.Context) {
	lock, ok := n.lock(ctx)
	if !ok {
		return
	}
	defer func() { _ = lock.Unlock() }()
	n.log.Debug("notifier lock held", "path", lock.Path())

	tick := time.NewTicker(n.every)
	defer tick.Stop()
	for {
		n.once(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// lock takes the notifier lock, waiting until it is free or ctx ends.
func (n *notifier) lock(ctx context.Context) (*flock.Flock, bool) {
	path := n.mailbox.NotifierLockPath()
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
			n.log.Warn("notifier lock", "path", path, "err", err)
		case got:
			return lock, true
		case !logged:
			n.log.Info("another process issues this session's notices; waiting", "path", path)
			logged = true
		}
		if !sleep(ctx, n.retry) {
			return nil, false
		}
	}
}

// once issues at most one notice.
func (n *notifier) once(ctx context.Context) {
	nt, err := n.mailbox.Reserve(ctx)
	if err != nil {
		n.log.Warn("notice reservation failed", "err", err)
		return
	}
	if nt == nil {
		return
	}
	state, err := n.sink.Notice(ctx, nt.ID, mailbox.NoticeText(nt.ID))
	if err != nil {
		n.log.Warn("notice not delivered", "notice", nt.ID, "attempt", nt.Attempt, "err", err)
		state = mailbox.StateDeliveryFailed
	} else {
		n.log.Debug("notice delivered", "notice", nt.ID, "messages", len(nt.Messages), "state", state)
	}
	for {
		err := n.mailbox.Finish(ctx, nt.ID, state)
		if err == nil {
			return
		}
		n.log.Warn("notice outcome not recorded; will retry", "notice", nt.ID, "err", err)
		if !sleep(ctx, n.retry) {
			return
		}
	}
}

// pairingNoticeAttempts is how often a pairing notice the sink refuses is
// tried in all, retry apart, before it is given up; the request stays in
// the pairing file, where list_pair_requests finds it.
const pairingNoticeAttempts = 3

// pairing hands a pairing notice to the host, tried up to
// pairingNoticeAttempts times while ctx lives.
func (n *notifier) pairing(ctx context.Context, pn inbound.Notice) error {
	if n.sink == nil {
		n.log.Info("pairing notice not shown: no host sink", "kind", pn.Kind, "msg_id", pn.MsgID)
		return nil
	}
	rec := delivery.Record{Sender: pn.Sender, MsgID: pn.MsgID, Content: pn.Text}
	var err error
	for attempt := 1; attempt <= pairingNoticeAttempts; attempt++ {
		if err = n.sink.Text(ctx, rec); err == nil {
			return nil
		}
		if attempt == pairingNoticeAttempts {
			break
		}
		n.log.Warn("pairing notice not delivered; will retry", "attempt", attempt, "err", err)
		if !sleep(ctx, n.retry) {
			break
		}
	}
	return fmt.Errorf("pairing notice %s not delivered: %w", pn.MsgID, err)
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
