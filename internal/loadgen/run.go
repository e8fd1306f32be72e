package loadgen

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/interlink-go/interlink/internal/loadgen/busclient"
	"github.com/interlink-go/interlink/internal/loadgen/delayproxy"
	"github.com/interlink-go/interlink/internal/loadgen/latency"
)

// grace is how long workers get to return after a phase's deadline before the
// run gives up on them.
const grace = 3 * time.Second

// errorPause is how long a worker waits after a failed request, so that a
// dead bus is not hammered in a tight loop.
const errorPause = 10 * time.Millisecond

// ErrStuck reports workers that did not return within the grace period
// after their deadline. It points at a bug, not at a slow bus.
var ErrStuck = errors.New("load workers did not stop after the deadline")

// Report is what one run measured.
type Report struct {
	// Config is the configuration the run used, defaults filled in.
	Config Config
	// Target describes the bus (or server) that took the load.
	Target string
	// Results holds one entry per measurement, in the order made.
	Results []Result
}

// Result is one measurement.
type Result struct {
	// Name says what was measured: a mode, "floor" or "boltfloor".
	Name string
	// Ops counts the operations completed inside the measurement window:
	// request cycles, delivered messages, wake-ups or commits, by mode.
	Ops int64
	// Errors counts failed operations.
	Errors int64
	// FirstError is the first failure's text, empty when there was none.
	FirstError string
	// Elapsed is the length of the measurement window.
	Elapsed time.Duration
	// Latency summarizes the per-operation latencies.
	Latency latency.Summary
	// RSSBefore and RSSAfter are the resident memory of the bus's process,
	// in bytes, around the measurement: 0 when not measured, -1 when this
	// system cannot tell.
	RSSBefore, RSSAfter int64
	// Extra holds mode-specific fields, in print order.
	Extra []Field
}

// Field is a named value of a [Result].
type Field struct{ Key, Value string }

// OpsPerSec returns the completed operations per second of the window.
func (r Result) OpsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// Run performs the load run cfg describes and returns what it measured.
// Every phase stops by itself when its [Config.Duration] has passed, or
// earlier when ctx ends; the run then returns what it has. A Config error
// wraps [ErrConfig]. logger receives progress notes and, for an in-process
// bus, the bus's own log; nil discards them.
func Run(ctx context.Context, cfg Config, logger *slog.Logger) (_ *Report, err error) {
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := &run{cfg: cfg, log: logger, base: time.Now(), prefix: "bench-" + runID() + "-"}
	rep := &Report{Config: cfg}

	switch cfg.Mode {
	case ModeFloor:
		rep.Target = "in-process loopback HTTP server answering 200"
		res, err := r.floor(ctx, cfg.Senders, 1)
		rep.Results = append(rep.Results, res)
		return rep, cmp.Or(err, ctx.Err())
	case ModeBoltFloor:
		rep.Target = "raw bbolt file"
		res, err := r.boltFloor(ctx, cfg.DBPath, "")
		rep.Results = append(rep.Results, res)
		return rep, cmp.Or(err, ctx.Err())
	case ModeStall:
		rep.Target = "a new process for each kind: " + strings.Join(cfg.BusCommand, " ")
		res, err := r.stall(ctx)
		rep.Results = append(rep.Results, res...)
		return rep, cmp.Or(err, ctx.Err())
	}

	if err := r.openTarget(ctx); err != nil {
		return nil, err
	}
	rep.Target = r.target.desc
	defer func() {
		if serr := r.target.stop(); serr != nil && err == nil {
			err = fmt.Errorf("stopping the in-process bus: %v", serr)
		}
	}()
	r.url = r.target.url
	if cfg.Latency > 0 {
		p, u, err := delayproxy.For(r.target.url, cfg.Latency)
		if err != nil {
			return nil, err
		}
		defer p.Close()
		r.url = u
		rep.Target += fmt.Sprintf(", through a proxy adding %v each way", cfg.Latency)
	}
	r.client = busclient.New(r.url, cfg.KeepAlive, cfg.Senders+cfg.Receivers)
	defer r.client.Close()

	if cfg.Mode == ModeFull {
		res, ferr := r.full(ctx)
		rep.Results = append(rep.Results, res)
		return rep, cmp.Or(ferr, ctx.Err())
	}
	if cfg.FillRoutes > 0 {
		res, ferr := r.fill(ctx)
		rep.Results = append(rep.Results, res)
		if ferr != nil || cfg.Mode == ModeFill {
			return rep, cmp.Or(ferr, ctx.Err())
		}
	}

	// Each round runs the measurement and then its floors, each for
	// Duration/Rounds; the results add up over the rounds, so the
	// measurement and its floors see the same spells of a busy machine.
	rounds := max(cfg.Rounds, 1)
	r.cfg.Duration = cfg.Duration / time.Duration(rounds)
	latest := map[string]Result{}
	var order []string
	keep := func(res Result) {
		if _, ok := latest[res.Name]; !ok {
			order = append(order, res.Name)
		}
		latest[res.Name] = res
	}
	defer func() {
		for _, name := range order {
			rep.Results = append(rep.Results, latest[name])
		}
	}()
	prefix := r.prefix
	for round := 0; round < rounds && ctx.Err() == nil; round++ {
		if rounds > 1 {
			// Routes of their own: a send cut off at the end of a
			// round can still land after it.
			r.prefix = prefix + "r" + strconv.Itoa(round) + "-"
		}
		var res Result
		switch cfg.Mode {
		case ModeRoundtrip:
			res, err = r.roundtrip(ctx)
		case ModePipeline:
			res, err = r.pipeline(ctx)
		case ModeWake:
			res, err = r.wake(ctx)
		case ModeAgentSend:
			res, err = r.agentSend(ctx)
		}
		keep(res)
		if err != nil {
			return rep, err
		}
		if !cfg.WithFloor || ctx.Err() != nil {
			continue
		}
		workers, reqs := 1, 3
		switch cfg.Mode {
		case ModeRoundtrip:
			workers = cfg.Senders
		case ModePipeline:
			workers = cfg.Senders + cfg.Receivers
		case ModeWake:
			reqs = 1
		case ModeAgentSend:
			workers, reqs = cfg.Senders, 1
		}
		res, err := r.floor(ctx, workers, reqs)
		keep(res)
		if err != nil {
			return rep, err
		}
		if cfg.Mode == ModeRoundtrip && ctx.Err() == nil {
			res, err := r.wireFloor(ctx)
			keep(res)
			if err != nil {
				return rep, err
			}
		}
		if cfg.Store == StoreBolt && cfg.URL == "" && ctx.Err() == nil {
			dir := ""
			if cfg.DBPath != "" {
				dir = filepath.Dir(cfg.DBPath)
			}
			res, err := r.boltFloor(ctx, "", dir)
			keep(res)
			if err != nil {
				return rep, err
			}
		}
	}
	return rep, ctx.Err()
}

// run holds the state of one [Run].
type run struct {
	cfg    Config
	log    *slog.Logger
	base   time.Time // the zero of since
	prefix string    // starts every route this run uses

	target *target
	url    string // where the load goes: the bus, or the proxy before it
	client *busclient.Client

	tallies map[string]*tally // by measurement; see run.tally
}

// runID returns a short random id that keeps this run's routes apart from
// any other traffic on the same bus.
func runID() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// since returns the time since the run began, on the monotonic clock.
func (r *run) since() time.Duration { return time.Since(r.base) }

// route returns the name of the run's route kind/n.
func (r *run) route(kind string, n int) string {
	return r.prefix + kind + "-" + strconv.Itoa(n)
}

// openTarget starts the in-process bus or checks that the bus at URL
// answers.
func (r *run) openTarget(ctx context.Context) error {
	if r.cfg.URL == "" {
		t, err := startBus(r.cfg, r.log)
		if err != nil {
			return err
		}
		r.target = t
		return nil
	}
	c := busclient.New(r.cfg.URL, false, 1)
	defer c.Close()
	if err := c.Get(ctx, "/healthz"); err != nil {
		// The original bus has no /healthz; its roster answers too.
		if err2 := c.Get(ctx, "/roster"); err2 != nil {
			return fmt.Errorf("bus at %s does not answer: %v", r.cfg.URL, err)
		}
	}
	r.target = &target{url: r.cfg.URL, desc: "bus at " + r.cfg.URL, stop: func() error { return nil }}
	return nil
}

// rss returns the resident memory of the bus's process: this process for
// an in-process bus, the process given by BusPID for a bus at URL. It
// returns 0 when there is nothing to measure and -1 when the system cannot
// tell.
func (r *run) rss() int64 {
	switch {
	case r.target != nil && r.target.local:
		return readRSS(0)
	case r.cfg.BusPID > 0:
		return readRSS(r.cfg.BusPID)
	default:
		return 0
	}
}

// peakRSS returns the peak resident memory of the bus's process (VmHWM),
// as [run.rss] does.
func (r *run) peakRSS() int64 {
	switch {
	case r.target != nil && r.target.local:
		return readStatusKB(0, "VmHWM:")
	case r.cfg.BusPID > 0:
		return readStatusKB(r.cfg.BusPID, "VmHWM:")
	default:
		return 0
	}
}

// settledRSS returns [run.rss] after a garbage collection that returns free
// memory to the system. For an in-process bus this removes the load
// generator's own garbage from the figure; a bus at URL is left alone.
func (r *run) settledRSS() int64 {
	if r.target != nil && r.target.local {
		runtime.GC()
		debug.FreeOSMemory()
	}
	return r.rss()
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

// tally returns the run's tally for the measurement called name, made on
// first use, so that the rounds of a measurement add up.
func (r *run) tally(name string) *tally {
	if r.tallies == nil {
		r.tallies = make(map[string]*tally)
	}
	t := r.tallies[name]
	if t == nil {
		t = newTally()
		r.tallies[name] = t
	}
	return t
}

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
// tally so far as a Result called name.
func (t *tally) result(name string, elapsed time.Duration) Result {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.elapsed += elapsed
	return Result{
		Name:       name,
		Ops:        t.ops.Load(),
		Errors:     t.errs.Load(),
		FirstError: t.firstErr,
		Elapsed:    t.elapsed,
		Latency:    t.rec.Summary(),
	}
}

// phase runs work in n goroutines, each called with its index and a context
// that ends when the phase's duration has passed (or ctx ends). It returns
// the length of the window, from the start until that context ended or
// every worker returned. Workers must return promptly once their context
// ends; if they are not all back within [grace], phase returns [ErrStuck].
func (r *run) phase(ctx context.Context, n int, work func(ctx context.Context, i int)) (time.Duration, error) {
	pctx, cancel := context.WithTimeout(ctx, r.cfg.Duration)
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
	case <-time.After(grace):
		return elapsed, ErrStuck
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
