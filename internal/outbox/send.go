package outbox

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gofrs/flock"
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
	o.log.Debug("outbox: sending for this session", "path", o.file.path)

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
		if d, err := o.file.read(); err != nil {
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
		d, err := o.file.read()
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
				if ok, asked = o.deliver.attempt(ctx, head); ok {
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
		d, err := o.file.read()
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
