package loadgen

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/interlink-go/interlink/internal/loadgen/measure"
	"github.com/interlink-go/interlink/internal/loadgen/payload"
)

// fill preloads cfg.FillRoutes routes with cfg.FillMsgs messages each,
// using cfg.Senders concurrent senders, and reports the send rate and the
// memory of the bus's process before and after. It is bounded by the run's
// duration like any other phase; a fill cut short says so (complete=false).
//
// The messages stay: they are the background the following measurement
// runs against, and on a bus at URL they remain until that bus's queues
// are drained or it restarts without --db.
func (r *run) fill(ctx context.Context) (measure.Result, error) {
	routes, per := r.cfg.FillRoutes, r.cfg.FillMsgs
	total := int64(routes) * int64(per)
	if !r.target.Local {
		r.log.Warn("fill leaves its messages on the bus", "routes", routes, "messages", total)
	}
	payloadLen := int64(len(payload.Make("f0-0", r.meter.since(), r.cfg.Size)) - 2)

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
			err := r.client.Send(ctx, route, payload.Make("f"+strconv.FormatInt(k, 10), r.meter.since(), r.cfg.Size))
			if t.record(ctx, start, err) {
				return
			}
		}
	})
	after := r.target.RSS()

	res := t.result(string(ModeFill), elapsed)
	res.RSSBefore, res.RSSAfter = before, after
	held := res.Ops * payloadLen
	res.Extra = []measure.Field{
		{Key: "routes", Value: strconv.Itoa(routes)},
		{Key: "msgs_per_route", Value: strconv.Itoa(per)},
		{Key: "complete", Value: strconv.FormatBool(res.Ops == total)},
		{Key: "payload_bytes", Value: measure.Bytes(held)},
	}
	// In process, the load generator's garbage shares the heap with the
	// bus; a collection leaves what the bus holds.
	final := after
	if r.target.Local && after > 0 {
		final = r.target.SettledRSS()
		res.Extra = append(res.Extra, measure.Field{Key: "rss_after_gc", Value: measure.Bytes(final)})
	}
	if final > 0 && held > 0 {
		res.Extra = append(res.Extra, measure.Field{Key: "rss_per_payload", Value: fmt.Sprintf("%.2f", float64(final)/float64(held))})
	}
	return res, err
}
