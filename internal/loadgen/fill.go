package loadgen

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"
)

// fill preloads cfg.FillRoutes routes with cfg.FillMsgs messages each,
// using cfg.Senders concurrent senders, and reports the send rate and the
// memory of the bus's process before and after. It is bounded by the run's
// duration like any other phase; a fill cut short says so (complete=false).
//
// The messages stay: they are the background the following measurement
// runs against, and on a bus at URL they remain until that bus's queues
// are drained or it restarts without --db.
func (r *run) fill(ctx context.Context) (Result, error) {
	routes, per := r.cfg.FillRoutes, r.cfg.FillMsgs
	total := int64(routes) * int64(per)
	if !r.target.Local {
		r.log.Warn("fill leaves its messages on the bus", "routes", routes, "messages", total)
	}
	payloadLen := int64(len(makePayload("f0-0", r.meter.since(), r.cfg.Size)) - 2)

	t := newTally()
	var next atomic.Int64
	before := r.target.SettledRSS()
	elapsed, err := r.meter.phase(ctx, r.cfg.Senders, func(ctx context.Context, _ int) {
		for {
			k := next.Add(1) - 1
			if k >= total || ctx.Err() != nil {
				return
			}
			// Consecutive k go to different routes, so each route fills
			// evenly while the fill is running.
			route := r.names.route("fill", int(k%int64(routes)))
			start := time.Now()
			err := r.client.Send(ctx, route, makePayload("f"+strconv.FormatInt(k, 10), r.meter.since(), r.cfg.Size))
			if t.record(ctx, start, err) {
				return
			}
		}
	})
	after := r.target.RSS()

	res := t.result(string(ModeFill), elapsed)
	res.RSSBefore, res.RSSAfter = before, after
	payload := res.Ops * payloadLen
	res.Extra = []Field{
		{"routes", strconv.Itoa(routes)},
		{"msgs_per_route", strconv.Itoa(per)},
		{"complete", strconv.FormatBool(res.Ops == total)},
		{"payload_bytes", formatBytes(payload)},
	}
	// In process, the load generator's garbage shares the heap with the
	// bus; a collection leaves what the bus holds.
	final := after
	if r.target.Local && after > 0 {
		final = r.target.SettledRSS()
		res.Extra = append(res.Extra, Field{"rss_after_gc", formatBytes(final)})
	}
	if final > 0 && payload > 0 {
		res.Extra = append(res.Extra, Field{"rss_per_payload", fmt.Sprintf("%.2f", float64(final)/float64(payload))})
	}
	return res, err
}
