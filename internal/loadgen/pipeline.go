package loadgen

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/interlink-go/interlink/internal/loadgen/busclient"
	"github.com/interlink-go/interlink/internal/loadgen/measure"
	"github.com/interlink-go/interlink/internal/loadgen/payload"
)

// pipeline measures throughput under concurrent load: S senders post as
// fast as they can, spreading their messages over the routes, while R
// receivers each long-poll one route and acknowledge what arrives. An
// operation is a delivered (received and acknowledged) message, and its
// latency runs from just before the send to the moment the receiver had
// it, read from the send time the payload carries.
//
// The senders keep at most cfg.Window messages in flight (sent and not
// yet delivered), so the queues stay short and the latency measures
// delivery rather than time spent waiting in a backlog. Without a window
// (Window < 0) senders that outpace the receivers build a backlog, and the
// latency grows with it; with a small queue cap messages are then dropped,
// which shows as sent minus delivered.
func (r *run) pipeline(ctx context.Context) (measure.Result, error) {
	t := r.meter.tally(string(ModePipeline))
	sent := &t.sent
	senders, receivers := r.cfg.Senders, r.cfg.Receivers
	var w window
	if r.cfg.Window > 0 {
		w = make(window, r.cfg.Window)
	}
	before := t.rssBefore(r.target.RSS())
	dials := r.client.Dials()
	elapsed, err := r.meter.phase(ctx, senders+receivers, func(ctx context.Context, i int) {
		if i < senders {
			r.pipeSender(ctx, t, w, sent, i)
			return
		}
		r.pipeReceiver(ctx, t, w, i-senders)
	})
	res := t.result(string(ModePipeline), elapsed)
	res.RSSBefore, res.RSSAfter = before, r.target.RSS()
	res.Extra = []measure.Field{
		{Key: "senders", Value: strconv.Itoa(senders)},
		{Key: "receivers", Value: strconv.Itoa(receivers)},
		{Key: "sent", Value: strconv.FormatInt(sent.Load(), 10)},
		{Key: "window", Value: strconv.Itoa(max(r.cfg.Window, 0))},
		dialsField(t.dials.Add(r.client.Dials()-dials), res.Ops),
	}
	r.drain(r.names.routes("pipe", receivers))
	return res, err
}

// pipeSender sends to the routes round robin, starting at its own index.
func (r *run) pipeSender(ctx context.Context, t *tally, w window, sent *atomic.Int64, i int) {
	routes := r.cfg.Routes
	for j := 0; ctx.Err() == nil; j++ {
		if !w.acquire(ctx) {
			return
		}
		route := r.names.route("pipe", (i+j)%routes)
		err := r.client.Send(ctx, route, payload.Make("s"+strconv.Itoa(i)+"-"+strconv.Itoa(j), r.meter.since(), r.cfg.Size))
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			w.release()
			t.fail(ctx, err)
		default:
			sent.Add(1)
		}
	}
}

// pipeReceiver long-polls route i and acknowledges each message.
func (r *run) pipeReceiver(ctx context.Context, t *tally, w window, i int) {
	route := r.names.route("pipe", i)
	for ctx.Err() == nil {
		m, err := r.client.Recv(ctx, route, recvWait)
		if errors.Is(err, busclient.ErrTimeout) {
			continue
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			t.fail(ctx, err)
			continue
		}
		_, sentAt, perr := payload.Parse(m.Payload)
		latency := r.meter.since() - sentAt
		err = r.client.Ack(ctx, route, m.Ack)
		w.release()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			t.fail(ctx, err)
		case perr != nil:
			t.fail(ctx, perr)
		default:
			t.ok(latency)
		}
	}
}

// windowStall is how long a sender waits for room in the window before it
// sends anyway. Room is normally made within milliseconds; a slot can be
// lost for good when the bus drops a message from a full queue, and the
// stall keeps such losses from stopping the senders.
const windowStall = 100 * time.Millisecond

// window limits the messages in flight: a sender takes a slot before it
// sends, and the receiver that delivers the message gives one back. A nil
// window has no limit.
type window chan struct{}

// acquire takes a slot, waiting at most [windowStall] for one. It reports
// false when ctx ended first.
func (w window) acquire(ctx context.Context) bool {
	if w == nil {
		return ctx.Err() == nil
	}
	select {
	case w <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(windowStall)
	defer t.Stop()
	select {
	case w <- struct{}{}:
	case <-t.C:
	case <-ctx.Done():
		return false
	}
	return true
}

// release gives a slot back. A message delivered twice (its first ack
// failed) or sent after a stall may have none to give; that is ignored.
func (w window) release() {
	select {
	case <-w:
	default:
	}
}

// drain removes what a run left on the given routes of a bus at URL, so
// the load leaves nothing behind there. It gives up after [measure.Grace]. An
// in-process bus is discarded anyway.
func (r *run) drain(routes []string) {
	if r.target.Local {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), measure.Grace)
	defer cancel()
	for _, route := range routes {
		for route != "" && ctx.Err() == nil {
			m, err := r.client.Recv(ctx, route, 0)
			if err != nil || r.client.Ack(ctx, route, m.Ack) != nil {
				break
			}
		}
	}
}
