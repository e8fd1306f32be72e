package agent

import (
	"context"
	"errors"
	"time"

	"github.com/interlink-go/interlink/internal/pairing"
	"github.com/interlink-go/interlink/internal/relay"
)

// kickPairing asks the pairing worker for a pass now.
func (a *Agent) kickPairing() {
	select {
	case a.pairKick <- struct{}{}:
	default:
	}
}

// pairingLoop sends the queued pairing messages (knocks and confirmations)
// of this session. It runs a pass at start, every PairRetry and whenever a
// tool queued something. The queue is a file, so jobs survive a restart and
// are picked up by the next process of the session.
func (a *Agent) pairingLoop(ctx context.Context) {
	t := time.NewTicker(a.cfg.Timing.PairRetry)
	defer t.Stop()
	for {
		a.pairingPass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.pairKick:
		}
	}
}

// pairingPass tries each queued job once, in order. A job is re-signed with
// the current time (same msg_id, so a request id still matches) and offered
// to every relay through relay.Post; once one takes it, it is done. A job no relay takes ends
// the pass, to be retried on the next one. A job that could never be sent
// (it fails the checks of pairing.Resign) is dropped and logged.
//
// The done jobs leave the queue together when the pass ends, in one write
// of the pairing file: a queue of QueueCap jobs drains in one pass instead
// of rewriting the file once per job. A process that dies during a pass
// sends its done jobs again after the restart, which is harmless: the
// receiver drops a repeat as a replay, stores a repeated knock over the
// first, and ignores a confirmation it already acted on.
func (a *Agent) pairingPass(ctx context.Context) {
	st, err := a.pairing.Load()
	if err != nil {
		a.log.Warn("pairing state unreadable; will retry", "err", err)
		return
	}
	var sent, dropped []string
	defer func() {
		if err := a.pairing.Drop(dropped...); err != nil {
			a.log.Warn("pairing jobs not dropped", "msg_ids", dropped, "err", err)
		}
		if err := a.pairing.Sent(sent...); err != nil {
			a.log.Warn("sent pairing jobs not removed; they may be sent again", "msg_ids", sent, "err", err)
		}
	}()
	for _, job := range st.Queued {
		m, err := pairing.Resign(job, a.signer, a.now())
		if err != nil {
			if errors.Is(err, pairing.ErrBadJob) {
				a.log.Warn("pairing job dropped", "msg_id", job.Msg.MsgID, "err", err)
				dropped = append(dropped, job.Msg.MsgID)
				continue
			}
			a.log.Warn("pairing job not sent", "msg_id", job.Msg.MsgID, "err", err)
			return
		}
		payload, err := m.MarshalJSON()
		if err != nil {
			a.log.Warn("pairing job not encodable", "msg_id", job.Msg.MsgID, "err", err)
			return
		}
		out := relay.Post(ctx, relay.Senders(a.relays), job.Route, payload)
		for _, f := range out.Failed {
			a.log.Debug("pairing send failed", "relay", f.URL, "msg_id", m.MsgID, "err", f.Err)
		}
		accepted := len(out.Accepted)
		if accepted == 0 {
			return
		}
		a.log.Info("pairing message sent", "kind", string(m.Kind), "msg_id", m.MsgID, "relays", accepted)
		sent = append(sent, m.MsgID)
	}
}
