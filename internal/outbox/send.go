package outbox

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/untrusted"
)

const (
	// sendTimeout bounds one post to one relay, on top of the relay
	// client's own timeout.
	sendTimeout = 30 * time.Second
	// errTextLimit caps the bytes kept from one relay's error.
	errTextLimit = 512
)

// Run delivers queued messages until ctx ends. It starts one worker per
// route with queued messages, and returns nil once ctx has ended and every
// worker has stopped; a send in flight is cancelled with ctx. Messages still
// queued stay pending for the next Run. A Run called while another is
// active returns [ErrRunning] at once.
func (o *Outbox) Run(ctx context.Context) error {
	o.mu.Lock()
	if o.running {
		o.mu.Unlock()
		return ErrRunning
	}
	o.running = true
	o.mu.Unlock()

	var wg sync.WaitGroup
	defer func() {
		wg.Wait()
		o.mu.Lock()
		o.running = false
		o.mu.Unlock()
	}()
	for {
		o.startWorkers(ctx, &wg)
		select {
		case <-ctx.Done():
			return nil
		case <-o.kick:
		}
	}
}

// startWorkers starts a worker for every route that has queued messages and
// no worker.
func (o *Outbox) startWorkers(ctx context.Context, wg *sync.WaitGroup) {
	if ctx.Err() != nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for route, q := range o.routes {
		if q.active || len(q.jobs) == 0 {
			continue
		}
		q.active = true
		wg.Go(func() { o.work(ctx, route, q) })
	}
}

// work delivers the queue of route, head first, until it is empty or ctx
// ends. It owns q while q.active is set.
func (o *Outbox) work(ctx context.Context, route string, q *queue) {
	for {
		o.mu.Lock()
		if ctx.Err() != nil || len(q.jobs) == 0 {
			q.active = false
			if len(q.jobs) == 0 {
				delete(o.routes, route)
			}
			o.mu.Unlock()
			return
		}
		j := q.jobs[0]
		o.mu.Unlock()

		// A wake-up left from before this attempt is spent: the attempt
		// is the retry it asked for. One that arrives during the attempt
		// cuts the wait below short.
		drain(q.wake)
		if o.attempt(ctx, q, j) {
			continue
		}
		t := time.NewTimer(o.retryEvery)
		select {
		case <-ctx.Done():
		case <-q.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// drain removes the token from c, if any.
func drain(c chan struct{}) {
	select {
	case <-c:
	default:
	}
}

// attempt posts the head job j of q to every relay and records the outcome.
// It reports whether j left the queue.
func (o *Outbox) attempt(ctx context.Context, q *queue, j *job) bool {
	o.resignIfOld(j)
	var (
		accepted []string
		errs     []string
		refused  = len(o.relays) > 0 // every relay refused for good
	)
	if len(o.relays) == 0 {
		errs = append(errs, "no relay configured")
	}
	for _, s := range o.relays {
		sctx, cancel := context.WithTimeout(ctx, sendTimeout)
		err := s.Send(sctx, j.route, j.payload)
		cancel()
		if err == nil {
			accepted = append(accepted, s.URL())
			continue
		}
		o.log.Debug("send failed", "msg_id", j.msg.MsgID, "relay", s.URL(), "error", err)
		errs = append(errs, errText(err))
		var se *relay.StatusError
		if !errors.As(err, &se) || !se.Permanent() {
			refused = false
		}
	}
	if len(accepted) == 0 && ctx.Err() != nil {
		// Stopped mid-attempt: the failures say nothing about the relays.
		return false
	}

	id := j.msg.MsgID
	o.mu.Lock()
	e := o.entries[id] // pending entries are never evicted
	e.Attempts++
	attempts := e.Attempts
	done := true
	switch {
	case len(accepted) > 0:
		e.State = StateBusAccepted
		e.AcceptedBy = accepted
		e.LastError = ""
	case refused:
		e.State = StateRejected
		e.LastError = strings.Join(errs, "; ")
	default:
		e.LastError = strings.Join(errs, "; ")
		done = false
	}
	if done {
		q.jobs[0] = nil
		q.jobs = q.jobs[1:]
		o.finishLocked(id)
	}
	o.mu.Unlock()

	switch {
	case len(accepted) > 0:
		o.log.Info("message accepted", "msg_id", id, "relay", strings.Join(accepted, " "), "attempts", attempts)
	case refused:
		o.log.Warn("message rejected", "msg_id", id, "reason", strings.Join(errs, "; "))
	}
	return done
}

// resignIfOld replaces j's message with a copy signed now when its
// signature is older than ResignAfter. The copy keeps the msg_id, so
// receivers still treat it as the same message. On failure j is kept as it
// is: an old signature may still reach a receiver in time.
func (o *Outbox) resignIfOld(j *job) {
	now := o.now()
	ms := identity.Millis(now)
	if ms < j.msg.TS || ms-j.msg.TS <= uint64(max(o.resignAfter.Milliseconds(), 0)) {
		return
	}
	m := j.msg
	m.TS = ms
	if err := o.signer.SignMessage(&m); err != nil {
		o.log.Error("re-sign failed", "msg_id", m.MsgID, "error", err)
		return
	}
	payload, err := m.MarshalJSON()
	if err != nil {
		o.log.Error("re-sign failed", "msg_id", m.MsgID, "error", err)
		return
	}
	j.msg, j.payload = m, payload
	o.log.Info("message re-signed", "msg_id", m.MsgID)
}

// errText returns err's text cleaned for display and cut to errTextLimit
// bytes. Relay errors carry an excerpt of a body the relay chose.
func errText(err error) string {
	s := untrusted.Clean(err.Error())
	if len(s) <= errTextLimit {
		return s
	}
	s = s[:errTextLimit]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}
