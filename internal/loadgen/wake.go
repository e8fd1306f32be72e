package loadgen

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/interlink-go/interlink/internal/loadgen/busclient"
	"github.com/interlink-go/interlink/internal/loadgen/latency"
	"github.com/interlink-go/interlink/internal/loadgen/measure"
	"github.com/interlink-go/interlink/internal/loadgen/payload"
	"github.com/interlink-go/interlink/internal/loadgen/target"
)

// wakeSettle is how long the sender waits after the waiter says it is about
// to poll, so that the poll is parked (not merely in flight) when the
// message arrives.
const wakeSettle = 2 * time.Millisecond

// idleWait is the timeout_ms of the idle long-polls: the bus's maximum, so
// they stay parked for the whole measurement.
const idleWait = 120 * time.Second

// wake measures how quickly a parked long-poll returns once a message
// arrives for it, with cfg.Idle other polls parked on routes of their own.
// One waiter polls a target route; the sender waits until the waiter's
// poll is parked, then sends; an operation is one wake-up, and its latency
// runs from just before the send to the moment the waiter has the message.
func (r *run) wake(ctx context.Context) (measure.Result, error) {
	before := r.target.RSS()
	idleCtx, stopIdle := context.WithCancel(ctx)
	idleDone, err := r.parkIdle(idleCtx, r.cfg.Idle)
	defer func() {
		stopIdle()
		select {
		case <-idleDone:
		case <-time.After(measure.Grace):
		}
	}()
	if err != nil {
		return measure.Result{Name: string(ModeWake)}, err
	}
	parked := r.target.RSS()

	t := r.meter.tally(string(ModeWake))
	sends := latency.NewRecorder(0) // how long the /send requests themselves took
	// The waiter says when it is about to poll, which is also when it has
	// finished with the previous message; the sender sends only then.
	ready := make(chan struct{})
	route := r.names.route("wake", 0)
	dials := r.client.Dials()
	elapsed, err := r.meter.phase(ctx, 2, func(ctx context.Context, i int) {
		if i == 0 {
			r.wakeSender(ctx, t, sends, route, ready)
		} else {
			r.wakeWaiter(ctx, t, route, ready)
		}
	})
	res := t.result(string(ModeWake), elapsed)
	res.RSSBefore, res.RSSAfter = before, r.target.RSS()
	// The wake latency includes the /send request; its own median shows
	// how much of the latency that is.
	res.Extra = []measure.Field{
		{Key: "idle", Value: strconv.Itoa(r.cfg.Idle)},
		{Key: "send_p50", Value: measure.Millis(sends.Summary().P50)},
		dialsField(r.client.Dials()-dials, res.Ops),
	}
	if r.cfg.Idle > 0 && parked != 0 {
		res.Extra = append(res.Extra, measure.Field{Key: "rss_parked", Value: measure.Bytes(parked)})
	}
	r.drain([]string{route})
	return res, err
}

// wakeSender sends one message each time the waiter is ready.
func (r *run) wakeSender(ctx context.Context, t *tally, sends *latency.Recorder, route string, ready <-chan struct{}) {
	for j := 0; ; j++ {
		select {
		case <-ready:
		case <-ctx.Done():
			return
		}
		sleep(ctx, wakeSettle)
		start := time.Now()
		err := r.client.Send(ctx, route, payload.Make("w-"+strconv.Itoa(j), r.meter.since(), r.cfg.Size))
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			sends.Add(time.Since(start))
		}
		if err != nil {
			// The waiter's poll times out and it says it is ready again.
			t.fail(ctx, err)
		}
	}
}

// wakeWaiter polls route, reporting each wake-up to the sender.
func (r *run) wakeWaiter(ctx context.Context, t *tally, route string, ready chan<- struct{}) {
	for {
		select {
		case ready <- struct{}{}:
		case <-ctx.Done():
			return
		}
		m, err := r.client.Recv(ctx, route, recvWait)
		now := r.meter.since()
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, busclient.ErrTimeout) {
			continue
		}
		if err != nil {
			t.fail(ctx, err)
			continue
		}
		_, sentAt, perr := payload.Parse(m.Payload)
		err = r.client.Ack(ctx, route, m.Ack)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			t.fail(ctx, err)
		case perr != nil:
			t.fail(ctx, perr)
		default:
			t.ok(now - sentAt)
		}
	}
}

// parkBatch is how many idle polls connect at once: enough to be quick,
// few enough not to overflow the listener's accept queue.
const parkBatch = 64

// parkIdle starts n long-polls, each on its own route and connection, and
// returns once they are all connected. They poll again whenever they time
// out, until ctx ends; done is closed when all of them have returned.
// Connecting them all is bounded by the run's duration.
func (r *run) parkIdle(ctx context.Context, n int) (done <-chan struct{}, err error) {
	ch := make(chan struct{})
	if n == 0 {
		close(ch)
		return ch, nil
	}
	if err := target.CheckOpenFiles(r.fdsFor(n)); err != nil {
		close(ch)
		return ch, fmt.Errorf("wake: %w", err)
	}
	idle := busclient.New(r.target.URL, false, 0)
	var wg sync.WaitGroup
	// Once the launching is over, successful or not, done closes when the
	// polls launched have all returned.
	defer func() {
		go func() {
			wg.Wait()
			idle.Close()
			close(ch)
		}()
	}()

	deadline := time.Now().Add(r.meter.window)
	for k := range n {
		wg.Go(func() {
			route := r.names.route("idle", k)
			for ctx.Err() == nil {
				_, err := idle.Recv(ctx, route, idleWait)
				if err != nil && !errors.Is(err, busclient.ErrTimeout) {
					sleep(ctx, 100*time.Millisecond)
				}
			}
		})
		if launched := int64(k + 1); launched%parkBatch == 0 || k == n-1 {
			for idle.Dials() < launched {
				if time.Now().After(deadline) || ctx.Err() != nil {
					return ch, fmt.Errorf("wake: only %d of %d idle polls connected within %v", idle.Dials(), n, r.meter.window)
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
	// A connected poll still has to reach the bus's handler and park.
	r.log.Info("idle polls connected", "n", n)
	time.Sleep(100*time.Millisecond + time.Duration(n)*10*time.Microsecond)
	return ch, nil
}

// fdsFor estimates the file descriptors n parked polls take in this
// process: one per client connection, and one more per server side when
// the bus runs here too, plus a margin for everything else.
func (r *run) fdsFor(n int) int {
	fds := n + 256 + r.cfg.Senders + r.cfg.Receivers
	if r.target.Local {
		fds += n
	}
	return fds
}
