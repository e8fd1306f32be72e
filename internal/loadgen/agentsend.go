package loadgen

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/interlink-go/interlink/internal/loadgen/measure"
	"github.com/interlink-go/interlink/internal/loadgen/payload"
	"github.com/interlink-go/interlink/internal/relay"
)

// agentSend measures what a send costs an agent on the network: each
// sender is one agent's relay client (the one interlink-mcp uses), sending
// one message after the other to a route of its own, while a receiver on
// the same client long-polls that route and acknowledges what arrives, as
// the agent's inbound loop does. An operation is one send, from the start
// of the request to its 202.
//
// With KeepAlive the client is the agent's default, which keeps its
// connections; without, a client that opens a connection per request.
// Before the measurement each sender sends one message and its receiver
// takes it, so the connections are warm; dials_per_op counts only the
// connections opened during the measurement.
func (r *run) agentSend(ctx context.Context) (measure.Result, error) {
	t := r.meter.tally(string(ModeAgentSend))
	senders := r.cfg.Senders
	var dials atomic.Int64
	d := &net.Dialer{Timeout: 5 * time.Second}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err == nil {
			dials.Add(1)
		}
		return conn, err
	}
	clients := make([]*relay.Client, senders)
	for i := range clients {
		opts := &relay.Options{DialContext: dial}
		if !r.cfg.KeepAlive {
			tr := &http.Transport{Proxy: nil, DialContext: dial, DisableKeepAlives: true}
			defer tr.CloseIdleConnections()
			opts = &relay.Options{HTTPClient: &http.Client{Transport: tr}}
		}
		clients[i] = relay.New(r.url, opts)
		defer clients[i].CloseIdleConnections()
	}
	routes := r.names.routes("agent", senders)

	// Warm up: one send and one receive per client.
	for i, c := range clients {
		if err := c.Send(ctx, routes[i], payload.Make("warm", r.meter.since(), r.cfg.Size)); err != nil {
			return measure.Result{Name: string(ModeAgentSend)}, err
		}
		m, err := c.Recv(ctx, routes[i], recvWait)
		if err == nil && m.HasMessage {
			err = c.Ack(ctx, routes[i], m.Ack)
		}
		if err != nil {
			return measure.Result{Name: string(ModeAgentSend)}, err
		}
	}

	before := t.rssBefore(r.target.RSS())
	warm := dials.Load()
	elapsed, err := r.meter.phase(ctx, 2*senders, func(ctx context.Context, i int) {
		if i >= senders {
			agentReceive(ctx, clients[i-senders], routes[i-senders])
			return
		}
		c, route := clients[i], routes[i]
		for j := 0; ctx.Err() == nil; j++ {
			start := time.Now()
			err := c.Send(ctx, route, payload.Make("a"+strconv.Itoa(i)+"-"+strconv.Itoa(j), r.meter.since(), r.cfg.Size))
			if t.record(ctx, start, err) {
				return
			}
		}
	})
	res := t.result(string(ModeAgentSend), elapsed)
	res.RSSBefore, res.RSSAfter = before, r.target.RSS()
	res.Extra = []measure.Field{
		{Key: "senders", Value: strconv.Itoa(senders)},
		{Key: "client", Value: map[bool]string{true: "agent", false: "new-conn"}[r.cfg.KeepAlive]},
		dialsField(t.dials.Add(dials.Load()-warm), res.Ops),
	}
	r.drain(routes)
	return res, err
}

// agentReceive long-polls route and acknowledges every message until ctx
// ends.
func agentReceive(ctx context.Context, c *relay.Client, route string) {
	for ctx.Err() == nil {
		m, err := c.Recv(ctx, route, recvWait)
		if err != nil || !m.HasMessage {
			if err != nil {
				sleep(ctx, errorPause)
			}
			continue
		}
		_ = c.Ack(ctx, route, m.Ack) // a failed ack only brings the message back
	}
}

// dialsField reports dials connections opened over ops operations.
func dialsField(dials, ops int64) measure.Field {
	if ops == 0 {
		return measure.Field{Key: "dials_per_op", Value: "n/a"}
	}
	return measure.Field{Key: "dials_per_op", Value: strconv.FormatFloat(float64(dials)/float64(ops), 'f', 3, 64)}
}
