package loadgen

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/interlink-go/interlink/internal/loadgen/latency"
	"github.com/interlink-go/interlink/internal/loadgen/measure"
)

// meter times a run's phases and keeps a tally per measurement, so that
// the rounds of a measurement add up.
type meter struct {
	window  time.Duration     // how long each phase runs
	base    time.Time         // the zero of since
	tallies map[string]*tally // by measurement
}

func newMeter(window time.Duration) *meter {
	return &meter{window: window, base: time.Now(), tallies: make(map[string]*tally)}
}

// since returns the time since the run began, on the monotonic clock.
func (m *meter) since() time.Duration { return time.Since(m.base) }

// tally returns the tally for the measurement called name, made on first
// use.
func (m *meter) tally(name string) *tally {
	t := m.tallies[name]
	if t == nil {
		t = newTally()
		m.tallies[name] = t
	}
	return t
}

// phase runs work in n goroutines, each called with its index and a context
// that ends when the meter's window has passed (or ctx ends). It returns
// the length of the window, from the start until that context ended or
// every worker returned. Workers must return promptly once their context
// ends; if they are not all back within [measure.Grace], phase returns [measure.ErrStuck].
func (m *meter) phase(ctx context.Context, n int, work func(ctx context.Context, i int)) (time.Duration, error) {
	pctx, cancel := context.WithTimeout(ctx, m.window)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() { work(pctx, i) })
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-pctx.Done():
	}
	elapsed := time.Since(start)
	select {
	case <-done:
		return elapsed, nil
	case <-time.After(measure.Grace):
		return elapsed, measure.ErrStuck
	}
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// names names the routes of a run: each starts with the run's prefix.
type names string

// route returns the name of route kind/n.
func (p names) route(kind string, n int) string {
	return string(p) + kind + "-" + strconv.Itoa(n)
}

// routes returns the names of routes kind-0 … kind-(n-1).
func (p names) routes(kind string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = p.route(kind, i)
	}
	return out
}

// tally counts the outcome of a measurement's operations. With several
// rounds ([Config.Rounds]) one tally adds up the rounds of a measurement.
type tally struct {
	ops   atomic.Int64
	errs  atomic.Int64
	dials atomic.Int64 // connections opened
	sent  atomic.Int64 // pipeline: messages sent
	rec   *latency.Recorder

	mu       sync.Mutex // guards the fields below
	firstErr string
	elapsed  time.Duration // the windows of the rounds so far
	rss      int64         // resident memory before the first round
	rssSet   bool
}

func newTally() *tally { return &tally{rec: latency.NewRecorder(0)} }

// rssBefore records before as the memory before the measurement, unless an
// earlier round did, and returns the recorded figure.
func (t *tally) rssBefore(before int64) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.rssSet {
		t.rss, t.rssSet = before, true
	}
	return t.rss
}

// ok records a completed operation that took d.
func (t *tally) ok(d time.Duration) {
	t.ops.Add(1)
	t.rec.Add(d)
}

// record records an operation that began at start and ended with err,
// and reports whether ctx has ended, which leaves it unrecorded: an
// operation cut off by the end of a phase is neither a success nor a
// failure.
func (t *tally) record(ctx context.Context, start time.Time, err error) (ended bool) {
	switch {
	case ctx.Err() != nil:
		return true
	case err != nil:
		t.fail(ctx, err)
	default:
		t.ok(time.Since(start))
	}
	return false
}

// fail records a failed operation and pauses the calling worker briefly.
func (t *tally) fail(ctx context.Context, err error) {
	t.errs.Add(1)
	t.mu.Lock()
	if t.firstErr == "" {
		t.firstErr = err.Error()
	}
	t.mu.Unlock()
	sleep(ctx, errorPause)
}

// result adds elapsed, the window of the round just done, and returns the
// tally so far as a measure.Result called name.
func (t *tally) result(name string, elapsed time.Duration) measure.Result {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.elapsed += elapsed
	return measure.Result{
		Name:       name,
		Ops:        t.ops.Load(),
		Errors:     t.errs.Load(),
		FirstError: t.firstErr,
		Elapsed:    t.elapsed,
		Latency:    t.rec.Summary(),
	}
}

// errorPause is how long a worker waits after a failed request, so that a
// dead bus is not hammered in a tight loop.
const errorPause = 10 * time.Millisecond
