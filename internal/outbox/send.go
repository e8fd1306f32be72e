package outbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"

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

// Run sends the session's pending messages until ctx ends. Only one
// process of a session sends at a time: Run first takes the sender lock,
// trying again every [Options.LockRetry] while another process holds it,
// and keeps it until it returns. Holding it, Run starts one worker per
// route with pending messages and looks at the file every
// [Options.WatchEvery] for messages that other processes queued. It returns
// nil once ctx has ended and every worker has stopped; a post in flight is
// cancelled with ctx. A Run called while another is active in this Outbox
// returns [ErrRunning] at once.
func (o *Outbox) Run(ctx context.Context) error {
	o.mu.Lock()
	if o.running {
		o.mu.Unlock()
		return ErrRunning
	}
	o.running = true
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		o.running = false
		o.mu.Unlock()
	}()

	lock, ok := o.takeSenderLock(ctx)
	if !ok {
		return nil
	}
	o.sending.Store(true)
	defer func() {
		o.sending.Store(false)
		_ = lock.Unlock()
	}()
	o.log.Debug("outbox: sending for this session", "path", o.path)

	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		active = make(map[string]bool) // routes with a worker; guarded by mu
	)
	defer wg.Wait()
	tick := time.NewTicker(o.watchEvery)
	defer tick.Stop()
	for {
		changed := o.changed()
		if d, err := o.read(); err != nil {
			o.log.Warn("outbox unreadable; will retry", "err", err)
		} else {
			mu.Lock()
			for _, s := range d.entries {
				if s.State != StatePending || active[s.Route] {
					continue
				}
				rt := s.Route
				active[rt] = true
				wg.Go(func() {
					o.work(ctx, rt)
					mu.Lock()
					delete(active, rt)
					mu.Unlock()
					// Something may have been queued for rt after the
					// worker last looked: look again.
					o.broadcast()
				})
			}
			mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-tick.C:
		}
	}
}

// takeSenderLock takes the session's sender lock, waiting until it is free
// or ctx ends.
func (o *Outbox) takeSenderLock(ctx context.Context) (*flock.Flock, bool) {
	lock := flock.New(o.senderLock)
	logged := false
	for {
		err := os.MkdirAll(filepath.Dir(o.senderLock), 0o700)
		var got bool
		if err == nil {
			got, err = lock.TryLock()
		}
		switch {
		case err != nil:
			o.log.Warn("outbox: sender lock", "path", o.senderLock, "err", err)
		case got:
			return lock, true
		case !logged:
			o.log.Info("another process sends this session's messages; waiting", "path", o.senderLock)
			logged = true
		}
		t := time.NewTimer(o.lockRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, false
		case <-t.C:
		}
	}
}

// work sends the pending messages of route, oldest first, until none is
// left or ctx ends. After a failed attempt it waits RetryEvery (while
// draining, DrainRetryEvery), or less when a message for the same route
// is queued meanwhile; messages for other routes do not hurry it. When a
// relay asked for a longer wait (Retry-After, with 429 or 507), nothing
// hurries it: the route is tried again no sooner than that.
func (o *Outbox) work(ctx context.Context, rt string) {
	var (
		lastTry time.Time     // of the last failed attempt; zero: try now
		queued  int           // pending messages of rt at that attempt
		asked   time.Duration // the wait a relay asked for at that attempt
	)
	for ctx.Err() == nil {
		changed := o.changed()
		wait := o.retryEvery
		if o.draining.Load() {
			wait = DrainRetryEvery
		}
		due := !lastTry.IsZero() && time.Now().Before(lastTry.Add(asked))
		wait = max(wait, asked)
		d, err := o.read()
		if err != nil {
			o.log.Warn("outbox unreadable; will retry", "route", rt, "err", err)
			lastTry, asked = time.Now(), 0
		} else {
			head, n := headOf(&d, rt)
			if head == nil {
				return
			}
			if lastTry.IsZero() || !time.Now().Before(lastTry.Add(wait)) || (n > queued && !due) {
				var ok bool
				if ok, asked = o.attempt(ctx, head); ok {
					lastTry, asked = time.Time{}, 0
					continue
				}
				lastTry, queued = time.Now(), n
				wait = max(wait, asked)
			}
		}
		t := time.NewTimer(time.Until(lastTry.Add(wait)))
		select {
		case <-ctx.Done():
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
}

// headOf returns the oldest pending entry of route rt in d, or nil, and
// the number of pending entries of rt.
func headOf(d *document, rt string) (*stored, int) {
	var head *stored
	n := 0
	for _, s := range d.entries {
		if s.Route == rt && s.State == StatePending {
			if head == nil {
				head = s
			}
			n++
		}
	}
	return head, n
}

// attempt posts the pending entry s to every relay and records the
// outcome in the file. It reports whether s left the pending state and,
// when it did not, the longest wait a relay asked for (its Retry-After),
// or 0.
func (o *Outbox) attempt(ctx context.Context, s *stored) (bool, time.Duration) {
	now := o.now()
	if expired(s, now, o.expireAfter) {
		o.record(s, func(e *stored, d *document, ms uint64) {
			e.LastError = "no relay accepted it within " + o.expireAfter.String() + " of queueing"
			finish(d, e, StateExpired, ms)
		})
		o.log.Warn("message expired", "msg_id", s.MsgID, "attempts", s.Attempts)
		return true, 0
	}
	orig, err := s.message()
	if err != nil {
		// It can never be sent; keeping it would block its route for good.
		o.record(s, func(e *stored, d *document, ms uint64) {
			e.LastError = "the stored message is not a valid signed message: " + err.Error()
			finish(d, e, StateRejected, ms)
		})
		o.log.Error("outbox: stored message undecodable; rejected", "msg_id", s.MsgID, "err", err)
		return true, 0
	}
	m, resigned := o.resignIfOld(orig, now)
	payload := []byte(s.raw)
	if resigned {
		if payload, err = m.MarshalJSON(); err != nil {
			o.log.Error("outbox: message not encodable", "msg_id", s.MsgID, "err", err)
			return false, 0
		}
	}
	wirePayload, sealed := payload, false
	if o.seal != nil {
		if wirePayload, sealed, err = o.seal(&m, payload); err != nil {
			// Sent as plaintext, it could reach a peer that asked for
			// sealed mail; so it waits for the next attempt.
			o.log.Error("outbox: message not sealed; kept for the next attempt", "msg_id", s.MsgID, "err", err)
			o.record(s, func(e *stored, d *document, ms uint64) {
				e.Attempts++
				e.LastError = "not sealed: " + err.Error()
			})
			return false, 0
		}
	}
	var out relay.Outcome
	if len(o.relays) > 0 {
		out = relay.Post(ctx, o.relays, s.Route, wirePayload)
	}
	if !out.OK() && ctx.Err() != nil {
		// Stopped mid-attempt: the failures say nothing about the relays.
		return false, 0
	}
	var errs []string
	if len(o.relays) == 0 {
		errs = append(errs, "no relay configured")
	}
	for _, f := range out.Failed {
		o.log.Debug("send failed", "msg_id", s.MsgID, "relay", f.URL, "error", f.Err)
		errs = append(errs, errText(f.Err))
	}
	reason := strings.Join(errs, "; ")
	var attempts int
	o.record(s, func(e *stored, d *document, ms uint64) {
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
		o.log.Info("message accepted", "msg_id", s.MsgID, "relay", strings.Join(out.Accepted, " "), "attempts", attempts, "sealed", sealed)
		return true, 0
	case out.Refused():
		o.log.Warn("message rejected", "msg_id", s.MsgID, "reason", reason)
		return true, 0
	}
	var asked time.Duration
	for _, f := range out.Failed {
		if se, ok := errors.AsType[*relay.StatusError](f.Err); ok {
			asked = max(asked, se.RetryAfter)
		}
	}
	if asked > 0 {
		o.log.Info("relay asked to wait; the message stays queued", "msg_id", s.MsgID, "wait", asked)
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
func (o *Outbox) record(a *stored, change func(e *stored, d *document, now uint64)) {
	msgID := a.MsgID
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	now := identity.Millis(o.now())
	err := o.update(ctx, func(d *document) (bool, error) {
		for _, e := range d.entries {
			if e.MsgID == msgID && e.State == StatePending && e.Route == a.Route && e.QueuedAt == a.QueuedAt {
				change(e, d, now)
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		o.log.Error("outbox: outcome not recorded; the message may be sent again", "msg_id", msgID, "err", err)
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
func (o *Outbox) resignIfOld(m identity.Message, now time.Time) (identity.Message, bool) {
	ms := identity.Millis(now)
	if ms < m.TS || ms-m.TS <= uint64(max(o.resignAfter.Milliseconds(), 0)) {
		return m, false
	}
	c := m
	c.TS = ms
	if err := o.signer.SignMessage(&c); err != nil {
		o.log.Error("re-sign failed", "msg_id", m.MsgID, "error", err)
		return m, false
	}
	o.log.Info("message re-signed", "msg_id", m.MsgID)
	return c, true
}

// Drain makes this process's workers try pending messages every
// [DrainRetryEvery] instead of [Options.RetryEvery], and waits until no
// message is pending or ctx ends. It returns the number still pending.
// When this Outbox is not the session's sender (another process is), it
// returns at once: the messages are on disk, and that process sends them.
func (o *Outbox) Drain(ctx context.Context) int {
	o.draining.Store(true)
	defer o.draining.Store(false)
	o.broadcast()
	for {
		changed := o.changed()
		d, err := o.read()
		n := d.pendingCount()
		if err != nil {
			o.log.Warn("outbox unreadable while draining", "err", err)
		}
		if n == 0 && err == nil {
			return 0
		}
		if !o.sending.Load() {
			return n
		}
		t := time.NewTimer(DrainRetryEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return n
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
}

// pendingCount returns the number of pending messages in d.
func (d *document) pendingCount() int {
	n := 0
	for _, s := range d.entries {
		if s.State == StatePending {
			n++
		}
	}
	return n
}

// errText returns err's text cleaned for display and cut to errTextLimit
// bytes. Relay errors carry an excerpt of a body the relay chose.
func errText(err error) string {
	return cutText(untrusted.Clean(err.Error()), errTextLimit)
}
