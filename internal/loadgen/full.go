package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/interlink-go/interlink/internal/loadgen/busclient"
	"github.com/interlink-go/interlink/internal/loadgen/measure"
	"github.com/interlink-go/interlink/internal/loadgen/payload"
)

// defaultFullRoutes is the routes [ModeFull] spreads its messages over
// unless told otherwise: enough that no route reaches its own byte bound
// before the bus reaches its total, at the default bounds.
const defaultFullRoutes = 1024

// The bus's metrics that [ModeFull] reports.
const (
	metricQueuedBytes = "interlink_bus_queued_bytes"
	metricTotalBytes  = "interlink_bus_queued_limit_bytes"
	metricQueued      = "interlink_bus_messages_queued"
)

// full sends messages of cfg.Size over cfg.Routes routes in turn, with
// cfg.Senders senders, until the bus refuses one with 507 because its
// queues hold all its total allows, and reports the memory of the bus's
// process idle (before) and full (after), its peak, and the bytes the bus
// says it holds and may hold. Like fill it is bounded by the run's
// duration; a run cut short says so (full=false), and on a bus at URL the
// messages stay.
func (r *run) full(ctx context.Context) (measure.Result, error) {
	if !r.target.Local {
		r.log.Warn("full leaves the bus's queues full", "routes", r.cfg.Routes)
	}
	payloadLen := int64(len(payload.Make("u0", r.meter.since(), r.cfg.Size)) - 2)
	t := newTally()
	var (
		next   atomic.Int64
		full   atomic.Bool
		refuse atomic.Int64 // sends answered 507
	)
	idle := r.target.SettledRSS()
	elapsed, err := r.meter.phase(ctx, r.cfg.Senders, func(ctx context.Context, _ int) {
		for !full.Load() {
			k := next.Add(1) - 1
			route := r.names.route("full", int(k%int64(r.cfg.Routes)))
			start := time.Now()
			err := r.client.Send(ctx, route, payload.Make("u"+strconv.FormatInt(k, 10), r.meter.since(), r.cfg.Size))
			if se, ok := errors.AsType[*busclient.StatusError](err); ok && se.Code == http.StatusInsufficientStorage {
				refuse.Add(1)
				full.Store(true)
				return
			}
			if t.record(ctx, start, err) {
				return
			}
		}
	})
	atFull := r.target.RSS()

	res := t.result(string(ModeFull), elapsed)
	res.RSSBefore, res.RSSAfter = idle, atFull
	res.Extra = []measure.Field{
		{Key: "routes", Value: strconv.Itoa(r.cfg.Routes)},
		{Key: "full", Value: strconv.FormatBool(full.Load())},
		{Key: "refused", Value: strconv.FormatInt(refuse.Load(), 10)},
		{Key: "payload_bytes", Value: measure.Bytes(res.Ops * payloadLen)},
	}
	if peak := r.target.PeakRSS(); peak > 0 {
		res.Extra = append(res.Extra, measure.Field{Key: "rss_peak", Value: measure.Bytes(peak)})
	}
	final := atFull
	if r.target.Local && atFull > 0 {
		final = r.target.SettledRSS()
		res.Extra = append(res.Extra, measure.Field{Key: "rss_after_gc", Value: measure.Bytes(final)})
	}
	m, merr := r.client.Metrics(ctx, metricQueuedBytes, metricTotalBytes, metricQueued)
	if merr != nil {
		err = errors.Join(err, fmt.Errorf("reading the bus's metrics: %v", merr))
	}
	if v, ok := m[metricQueued]; ok {
		res.Extra = append(res.Extra, measure.Field{Key: "queued", Value: strconv.FormatInt(int64(v), 10)})
	}
	if v, ok := m[metricQueuedBytes]; ok {
		res.Extra = append(res.Extra, measure.Field{Key: "queued_bytes", Value: measure.Bytes(int64(v))})
		if final > 0 && idle > 0 && v > 0 {
			// What the bus's process grew by for each byte it counts.
			res.Extra = append(res.Extra, measure.Field{Key: "rss_growth_per_queued_byte", Value: fmt.Sprintf("%.2f", float64(final-idle)/v)})
		}
	}
	if v, ok := m[metricTotalBytes]; ok {
		res.Extra = append(res.Extra, measure.Field{Key: "total_bytes", Value: measure.Bytes(int64(v))})
	}
	return res, err
}
