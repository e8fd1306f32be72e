package agent

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"

	"github.com/interlink-go/interlink/internal/budget"
	"github.com/interlink-go/interlink/internal/codex"
	"github.com/interlink-go/interlink/internal/delivery"
	"github.com/interlink-go/interlink/internal/e2e"
	"github.com/interlink-go/interlink/internal/host"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/inbound"
	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/policy"
	"github.com/interlink-go/interlink/internal/protocol"
	"github.com/interlink-go/interlink/internal/untrusted"
)

// sink returns how notices of the session id reach the host: Claude
// channels, codex queue for the thread, or the configured sink.
func (a *Agent) sink(id string, failed *codex.Failed) delivery.Sink {
	switch {
	case a.cfg.Channels:
		return delivery.Channel{Send: a.client.send}
	case a.cfg.Host == host.Codex && a.cfg.CodexBin != "":
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
	// budget counts the wake-ups each peer causes; nil counts nothing.
	budget *budget.Budget
	// petname returns the name to show for a sender key.
	petname func(sender identity.PublicKey) string
	// receipts, if set, is told which messages a notice the host took
	// covered: they reached the surfaced stage.
	receipts *e2e.Emitter
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
			n.warn(ctx, "notifier lock", "path", path, "err", err)
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

// once issues at most one notice. Messages of peers whose wake-ups are
// paused are left out of it; a notice that reached the host counts a
// wake-up for each peer it is the first to announce a message of, and a
// peer that this pauses gets one notice saying so.
func (n *notifier) once(ctx context.Context) {
	nt, err := n.mailbox.ReserveSkipping(ctx, n.paused())
	if err != nil {
		n.warn(ctx, "notice reservation failed", "err", err)
		return
	}
	if nt == nil {
		return
	}
	state, err := n.sink.Notice(ctx, nt.ID, mailbox.NoticeText(nt.ID))
	switch {
	case err != nil && ctx.Err() != nil:
		// Stopping cut the handoff short, and the outcome could not be
		// recorded with ctx anyway: the notice expires and is replaced.
		n.log.Debug("notice handoff stopped", "notice", nt.ID, "err", err)
		return
	case err != nil:
		n.log.Warn("notice not delivered", "notice", nt.ID, "attempt", nt.Attempt, "err", err)
		state = mailbox.StateDeliveryFailed
	default:
		n.log.Debug("notice delivered", "notice", nt.ID, "messages", len(nt.Messages), "state", state)
		n.countWake(ctx, nt.Fresh)
		// A channel notification or a codex queue turn is in the host's
		// hands; a notice queued for the Stop hook is not yet, and its
		// messages are surfaced when the model fetches them.
		if n.receipts != nil && (state == mailbox.StateNotificationSent || state == mailbox.StateHostQueued) {
			n.receipts.Reached(e2e.Surfaced, nt.Messages)
		}
	}
	for {
		_, err := n.mailbox.Finish(ctx, nt.ID, state)
		if err == nil {
			return
		}
		n.warn(ctx, "notice outcome not recorded; will retry", "notice", nt.ID, "err", err)
		if !sleep(ctx, n.retry) {
			return
		}
	}
}

// warn logs a failure as a warning, or, once ctx has ended, at debug
// level: the process is stopping, and an operation it cut short is no
// fault to report.
func (n *notifier) warn(ctx context.Context, msg string, args ...any) {
	if ctx.Err() != nil {
		n.log.Debug(msg+" (stopping)", args...)
		return
	}
	n.log.Warn(msg, args...)
}

// paused returns whom to leave out of the next notice: the senders whose
// wake-ups are paused, or nil for nobody.
func (n *notifier) paused() func(sender string) bool {
	if n.budget == nil {
		return nil
	}
	keys, err := n.budget.Paused()
	if err != nil {
		n.log.Warn("budget unreadable; nobody is paused", "err", err)
		return nil
	}
	if len(keys) == 0 {
		return nil
	}
	return func(sender string) bool {
		k, err := identity.ParsePublicKey(sender)
		return err == nil && keys[k]
	}
}

// countWake counts one wake-up for each sender of fresh, the messages a
// notice that reached the host was the first to announce, and tells the
// host about each peer this pauses.
func (n *notifier) countWake(ctx context.Context, fresh []mailbox.Receipt) {
	if n.budget == nil || len(fresh) == 0 {
		return
	}
	var peers []budget.Peer
	seen := map[identity.PublicKey]bool{}
	for _, r := range fresh {
		k, err := identity.ParsePublicKey(r.Sender)
		if err != nil || seen[k] {
			continue
		}
		seen[k] = true
		peers = append(peers, budget.Peer{Key: k, Name: n.petname(k)})
	}
	paused, err := n.budget.Woke(ctx, peers)
	if err != nil {
		n.warn(ctx, "wake-up not counted", "err", err)
		return
	}
	wake, _ := n.budget.Limits()
	for _, p := range paused {
		n.log.Info("wake-ups paused", "peer", p.Name, "sender", p.Key.Fingerprint(), "limit", wake.String())
		id, err := identity.NewMsgID(nil)
		if err != nil {
			n.log.Warn("pause notice not sent", "err", err)
			continue
		}
		rec := delivery.Record{Sender: protocol.SystemSender, MsgID: id, Content: PauseText(p.Name, wake)}
		if err := n.sink.Text(ctx, rec); err != nil {
			n.warn(ctx, "pause notice not delivered", "peer", p.Name, "err", err)
		}
	}
}

// petnames returns how a sender key is named in a pause notice: its
// petname in peers, "self" for own, else its fingerprint.
func petnames(peers *policy.Store, own identity.PublicKey) func(identity.PublicKey) string {
	return func(k identity.PublicKey) string {
		if pol, err := peers.Load(); err == nil {
			if name, ok := pol.Petname(k); ok {
				return name
			}
		}
		if k == own {
			return protocol.SelfSender
		}
		return k.Fingerprint()
	}
}

// PauseText is the notice that tells the model wake-ups from peer are
// paused after reaching limit.
func PauseText(peer string, limit budget.Limit) string {
	return fmt.Sprintf("Wake-ups from %s are paused: its messages woke this session %d times within %s without a prompt "+
		"from your operator, which looks like an exchange running by itself. Its messages are still received, and "+
		"receive_messages lists them, but they no longer start a turn. Do not answer %s just to keep the conversation "+
		"going: tell your operator what the exchange is about and let them decide. Their next prompt resumes the wake-ups.",
		untrusted.Quote(peer), limit.N, limit.Window(), untrusted.Quote(peer))
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
