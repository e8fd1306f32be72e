package agent

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/pairing"
	"github.com/interlink-go/interlink/internal/relay"
)

// pairSender sends the session's queued pairing messages: knocks and
// confirmations. The queue is a file, so jobs survive a restart and are
// picked up by the next process of the session.
type pairSender struct {
	relays []*relay.Client
	signer *identity.Signer
	now    func() time.Time
	every  time.Duration // between two passes
	log    *slog.Logger
	kick   chan struct{} // wakes run for a pass; holds at most one
}

func newPairSender(relays []*relay.Client, signer *identity.Signer, now func() time.Time, every time.Duration, log *slog.Logger) *pairSender {
	return &pairSender{relays: relays, signer: signer, now: now, every: every, log: log, kick: make(chan struct{}, 1)}
}

// queued asks for a pass now: a tool added to the queue.
func (p *pairSender) queued() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// run sends the queue of store: a pass at start, every interval and
// whenever a tool queued something, until ctx ends.
func (p *pairSender) run(ctx context.Context, store *pairing.Store) {
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		p.pass(ctx, store)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-p.kick:
		}
	}
}

// pass tries each queued job once, in order. A job is re-signed with the
// current time (same msg_id, so a request id still matches) and offered to
// every relay through relay.Post; once one takes it, it is done. A job no
// relay takes ends the pass, to be retried on the next one. A job that could
// never be sent (it fails the checks of pairing.Resign) is dropped and
// logged.
//
// The done jobs leave the queue together when the pass ends, in one write
// of the pairing file: a queue of QueueCap jobs drains in one pass instead
// of rewriting the file once per job. A process that dies during a pass
// sends its done jobs again after the restart, which is harmless: the
// receiver drops a repeat as a replay, stores a repeated knock over the
// first, and ignores a confirmation it already acted on.
func (p *pairSender) pass(ctx context.Context, store *pairing.Store) {
	st, err := store.Load()
	if err != nil {
		p.log.Warn("pairing state unreadable; will retry", "err", err)
		return
	}
	var sent, dropped []string
	defer func() {
		if err := store.Drop(dropped...); err != nil {
			p.log.Warn("pairing jobs not dropped", "msg_ids", dropped, "err", err)
		}
		if err := store.Sent(sent...); err != nil {
			p.log.Warn("sent pairing jobs not removed; they may be sent again", "msg_ids", sent, "err", err)
		}
	}()
	for _, job := range st.Queued {
		m, err := pairing.Resign(job, p.signer, p.now())
		if err != nil {
			if errors.Is(err, pairing.ErrBadJob) {
				p.log.Warn("pairing job dropped", "msg_id", job.Msg.MsgID, "err", err)
				dropped = append(dropped, job.Msg.MsgID)
				continue
			}
			p.log.Warn("pairing job not sent", "msg_id", job.Msg.MsgID, "err", err)
			return
		}
		payload, err := m.MarshalJSON()
		if err != nil {
			p.log.Warn("pairing job not encodable", "msg_id", job.Msg.MsgID, "err", err)
			return
		}
		out := relay.Post(ctx, relay.Senders(p.relays), job.Route, payload)
		for _, f := range out.Failed {
			p.log.Debug("pairing send failed", "relay", f.URL, "msg_id", m.MsgID, "err", f.Err)
		}
		if len(out.Accepted) == 0 {
			return
		}
		p.log.Info("pairing message sent", "kind", string(m.Kind), "msg_id", m.MsgID, "relays", len(out.Accepted))
		sent = append(sent, m.MsgID)
	}
}
