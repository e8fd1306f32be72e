package loadgen

import (
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/interlink-go/interlink/internal/loadgen/busclient"
	"github.com/interlink-go/interlink/internal/loadgen/delayproxy"
	"github.com/interlink-go/interlink/internal/loadgen/measure"
	"github.com/interlink-go/interlink/internal/loadgen/payload"
	"github.com/interlink-go/interlink/internal/loadgen/target"
	"github.com/interlink-go/interlink/internal/wire"
)

// floors measures what the machine manages without a bus, for a run to
// set its bus beside: a loopback HTTP server answering 200, the wire
// stub, a bbolt file.
type floors struct {
	cfg   Config
	log   *slog.Logger
	meter *meter
}

// floor measures what the machine's loopback HTTP costs without a bus: a
// trivial server in this process answers 200 to anything, and workers hit
// it with the client settings of the run (the same keep-alive choice). An
// operation is reqs requests in a row, shaped like the bus cycle they stand
// for: a POST with a send-sized body, a GET with a query, a small POST. With
// reqs 3 and as many workers as the measured mode, the floor is the ceiling
// a bus could reach if it did no work at all.
func (f *floors) floor(ctx context.Context, route string, workers, reqs int) (res measure.Result, err error) {
	base, stop, err := f.serve(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		w.WriteHeader(http.StatusOK)
	}))
	if err != nil {
		return measure.Result{Name: "floor"}, err
	}
	defer func() { err = cmp.Or(err, stop()) }()
	c := busclient.New(base, f.cfg.KeepAlive, workers)
	defer c.Close()
	sendBody, err := wire.SendBody(route, payload.Make("f", 0, f.cfg.Size))
	if err != nil {
		return measure.Result{Name: "floor"}, err
	}
	ackBody := wire.AppendAck(nil, route, route+"\x00"+"00000000000000000001") // the first key of a queue
	query := wire.RecvTarget(route, time.Second)

	t := f.meter.tally("floor")
	dials := c.Dials()
	elapsed, err := f.meter.phase(ctx, workers, func(ctx context.Context, _ int) {
		for ctx.Err() == nil {
			start := time.Now()
			var err error
			for k := 0; k < reqs && err == nil; k++ {
				switch k % 3 {
				case 0:
					err = c.Post(ctx, "/send", sendBody, http.StatusOK)
				case 1:
					err = c.Get(ctx, query)
				case 2:
					err = c.Post(ctx, "/ack", ackBody, http.StatusOK)
				}
			}
			if t.record(ctx, start, err) {
				return
			}
		}
	})
	res = t.result("floor", elapsed)
	res.Extra = []measure.Field{
		{Key: "workers", Value: strconv.Itoa(workers)},
		{Key: "reqs_per_op", Value: strconv.Itoa(reqs)},
		dialsField(t.dials.Add(c.Dials()-dials), res.Ops),
	}
	return res, err
}

// serve serves h, a floor's server, on a free loopback port as
// [target.LoopbackServer] does, behind a proxy when the run has a latency. It
// returns the URL the load goes to and a function that stops it all and
// reports how the server ended.
func (f *floors) serve(h http.Handler) (base string, stop func() error, err error) {
	ln, err := target.Listen()
	if err != nil {
		return "", nil, err
	}
	hs := target.LoopbackServer(h, f.log)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	closeServer := func() error {
		hs.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
	base = "http://" + ln.Addr().String()
	if f.cfg.Latency <= 0 {
		return base, closeServer, nil
	}
	p, u, err := delayproxy.For(base, f.cfg.Latency)
	if err != nil {
		return "", nil, errors.Join(err, closeServer())
	}
	return u, func() error {
		p.Close()
		return closeServer()
	}, nil
}
