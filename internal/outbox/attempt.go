package outbox

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/untrusted"
)

const (
	// errTextLimit caps the bytes kept from one relay's error.
	errTextLimit = 512
	// recordTimeout bounds writing an attempt's outcome, which happens even
	// after Run's context ended: an acceptance that is not recorded would
	// be sent again by the next process.
	recordTimeout = 5 * time.Second
)

// delivery makes one attempt at one pending message and records its
// outcome in the file: it gives up a message pending too long, signs
// again one whose signature is old, seals it for a recipient that asked,
// and posts it to every relay. Its fields are fixed at creation.
type delivery struct {
	file        *file
	relays      []Sender
	signer      *identity.Signer
	now         func() time.Time
	resignAfter time.Duration
	expireAfter time.Duration
	seal        func(m *identity.Message, plain []byte) ([]byte, bool, error)
	log         *slog.Logger
}

// attempt posts the pending entry s to every relay and records the
// outcome in the file. It reports whether s left the pending state and,
// when it did not, the longest wait a relay asked for (its Retry-After),
// or 0.
func (dv *delivery) attempt(ctx context.Context, s *stored) (bool, time.Duration) {
	now := dv.now()
	if expired(s, now, dv.expireAfter) {
		dv.record(s, func(e *stored, d *document, ms uint64) {
			e.LastError = "no relay accepted it within " + dv.expireAfter.String() + " of queueing"
			finish(d, e, StateExpired, ms)
		})
		dv.log.Warn("message expired", "msg_id", s.MsgID, "attempts", s.Attempts)
		return true, 0
	}
	orig, err := s.message()
	if err != nil {
		// It can never be sent; keeping it would block its route for good.
		dv.record(s, func(e *stored, d *document, ms uint64) {
			e.LastError = "the stored message is not a valid signed message: " + err.Error()
			finish(d, e, StateRejected, ms)
		})
		dv.log.Error("outbox: stored message undecodable; rejected", "msg_id", s.MsgID, "err", err)
		return true, 0
	}
	m, resigned := dv.resignIfOld(orig, now)
	payload := []byte(s.raw)
	if resigned {
		if payload, err = m.MarshalJSON(); err != nil {
			dv.log.Error("outbox: message not encodable", "msg_id", s.MsgID, "err", err)
			return false, 0
		}
	}
	wirePayload, sealed := payload, false
	if dv.seal != nil {
		if wirePayload, sealed, err = dv.seal(&m, payload); err != nil {
			// Sent as plaintext, it could reach a peer that asked for
			// sealed mail; so it waits for the next attempt.
			dv.log.Error("outbox: message not sealed; kept for the next attempt", "msg_id", s.MsgID, "err", err)
			dv.record(s, func(e *stored, d *document, ms uint64) {
				e.Attempts++
				e.LastError = "not sealed: " + err.Error()
			})
			return false, 0
		}
	}
	var out relay.Outcome
	if len(dv.relays) > 0 {
		out = relay.Post(ctx, dv.relays, s.Route, wirePayload)
	}
	if !out.OK() && ctx.Err() != nil {
		// Stopped mid-attempt: the failures say nothing about the relays.
		return false, 0
	}
	var errs []string
	if len(dv.relays) == 0 {
		errs = append(errs, "no relay configured")
	}
	for _, f := range out.Failed {
		dv.log.Debug("send failed", "msg_id", s.MsgID, "relay", f.URL, "error", f.Err)
		errs = append(errs, errText(f.Err))
	}
	reason := strings.Join(errs, "; ")
	var attempts int
	dv.record(s, func(e *stored, d *document, ms uint64) {
		e.Attempts++
		attempts = e.Attempts
		if resigned {
			e.raw = payload
		}
		switch {
		case out.OK():
			e.LastError = ""
			e.AcceptedBy = out.Accepted
			finish(d, e, StateBusAccepted, ms)
		case out.Refused():
			e.LastError = reason
			finish(d, e, StateRejected, ms)
		default:
			e.LastError = reason
		}
	})
	switch {
	case out.OK():
		dv.log.Info("message accepted", "msg_id", s.MsgID, "relay", strings.Join(out.Accepted, " "), "attempts", attempts, "sealed", sealed)
		return true, 0
	case out.Refused():
		dv.log.Warn("message rejected", "msg_id", s.MsgID, "reason", reason)
		return true, 0
	}
	var asked time.Duration
	for _, f := range out.Failed {
		if se, ok := errors.AsType[*relay.StatusError](f.Err); ok {
			asked = max(asked, se.RetryAfter)
		}
	}
	if asked > 0 {
		dv.log.Info("relay asked to wait; the message stays queued", "msg_id", s.MsgID, "wait", asked)
	}
	return false, asked
}

// record applies change to the pending entry that is still the attempted
// entry a, under the file lock: same msg_id, route and queueing time, so an
// entry withdrawn or replaced meanwhile (see [Outbox.Replace]) is not given
// the outcome of an attempt at another message. It runs even after Run's
// context ended, bounded by recordTimeout. A failure is logged: the entry
// then stays as it was, and a message a relay accepted may be sent again,
// which receivers drop as a replay.
func (dv *delivery) record(a *stored, change func(e *stored, d *document, now uint64)) {
	msgID := a.MsgID
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	now := identity.Millis(dv.now())
	err := dv.file.update(ctx, func(d *document) (bool, error) {
		for _, e := range d.entries {
			if e.MsgID == msgID && e.State == StatePending && e.Route == a.Route && e.QueuedAt == a.QueuedAt {
				change(e, d, now)
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		dv.log.Error("outbox: outcome not recorded; the message may be sent again", "msg_id", msgID, "err", err)
	}
}

// expired reports whether s has been pending longer than after at now. An
// entry without a queueing time counts from its signature.
func expired(s *stored, now time.Time, after time.Duration) bool {
	since := s.QueuedAt
	if since == 0 {
		since = s.TS
	}
	ms := identity.Millis(now)
	return ms > since && ms-since > uint64(max(after.Milliseconds(), 0))
}

// resignIfOld returns m signed again with the current time when its
// signature is older than ResignAfter, and whether it did. The copy keeps
// the msg_id, so receivers still treat it as the same message. On failure
// m is returned as it is: an old signature may still reach a receiver in
// time.
func (dv *delivery) resignIfOld(m identity.Message, now time.Time) (identity.Message, bool) {
	ms := identity.Millis(now)
	if ms < m.TS || ms-m.TS <= uint64(max(dv.resignAfter.Milliseconds(), 0)) {
		return m, false
	}
	c := m
	c.TS = ms
	if err := dv.signer.SignMessage(&c); err != nil {
		dv.log.Error("re-sign failed", "msg_id", m.MsgID, "error", err)
		return m, false
	}
	dv.log.Info("message re-signed", "msg_id", m.MsgID)
	return c, true
}

// errText returns err's text cleaned for display and cut to errTextLimit
// bytes. Relay errors carry an excerpt of a body the relay chose.
func errText(err error) string {
	return cutText(untrusted.Clean(err.Error()), errTextLimit)
}
