package loadgen

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/interlink-go/interlink/internal/loadgen/measure"
	"github.com/interlink-go/interlink/internal/loadgen/payload"
	"github.com/interlink-go/interlink/internal/loadgen/variant"
)

// recvWait is the timeout_ms of the polls that expect a message at once or
// soon: long enough to ride out a scheduling hiccup, short enough that a
// worker notices its deadline.
const recvWait = time.Second

// roundtrip measures the agent's full cycle for one message: each sender
// sends to a route of its own, polls that route and acknowledges what it
// got, one request after the other. With more routes than senders, sender
// i cycles through routes i, i+S, i+2S, … so no two senders share one.
func (r *run) roundtrip(ctx context.Context) (measure.Result, error) {
	t := r.meter.tally(string(ModeRoundtrip))
	before := t.rssBefore(r.target.RSS())
	res, last, err := r.cycles(ctx, variant.Plain(r.client, r.cfg.Senders), string(ModeRoundtrip), "rt")
	res.RSSBefore, res.RSSAfter = before, r.target.RSS()
	r.drain(last)
	return res, err
}

// cycles runs the roundtrip scenario through lanes, one per sender, on
// routes named kind-N, and reports it as name. It also returns the route
// each sender used last: where a cycle cut short by the deadline can have
// left its message.
func (r *run) cycles(ctx context.Context, lanes []variant.Lane, name, kind string) (measure.Result, []string, error) {
	t := r.meter.tally(name)
	senders, routes := r.cfg.Senders, r.cfg.Routes
	last := make([]string, senders)
	c := lanes[0].Send // the lanes share its count of dials
	dials := c.Dials()
	elapsed, err := r.meter.phase(ctx, senders, func(ctx context.Context, i int) {
		for j := 0; ; j++ {
			if ctx.Err() != nil {
				return
			}
			route := r.names.route(kind, i+(j%((routes-i+senders-1)/senders))*senders)
			last[i] = route
			start := time.Now()
			err := r.cycle(ctx, &lanes[i], route, "s"+strconv.Itoa(i)+"-"+strconv.Itoa(j))
			if ctx.Err() != nil {
				return // cut off by the deadline: not counted either way
			}
			if err != nil {
				t.fail(ctx, err)
				continue
			}
			t.ok(time.Since(start))
		}
	})
	res := t.result(name, elapsed)
	res.Extra = []measure.Field{
		{Key: "senders", Value: strconv.Itoa(senders)},
		{Key: "routes", Value: strconv.Itoa(routes)},
		{Key: "reqs_per_op", Value: "3"},
		dialsField(t.dials.Add(c.Dials()-dials), res.Ops),
	}
	return res, last, err
}

// cycle sends one message with id through l to its form of route, polls
// it back and acks it.
func (r *run) cycle(ctx context.Context, l *variant.Lane, route, id string) error {
	route = l.Route(route)
	p, err := l.Seal(payload.Make(id, r.meter.since(), r.cfg.Size))
	if err != nil {
		return err
	}
	if err := l.Send.Send(ctx, route, p); err != nil {
		return err
	}
	m, err := l.Recv.Recv(ctx, route, recvWait)
	if err != nil {
		return err
	}
	p, oerr := l.Open(m.Payload)
	got, _, perr := payload.Parse(p)
	if err := l.Recv.Ack(ctx, route, m.Ack); err != nil {
		return err
	}
	if oerr != nil {
		return fmt.Errorf("route %s: %v", route, oerr)
	}
	if perr != nil || got != id {
		return fmt.Errorf("route %s: got message %q, want %q", route, got, id)
	}
	return nil
}
