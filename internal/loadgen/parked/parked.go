package parked

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/loadgen/busclient"
	"github.com/interlink-go/interlink/internal/loadgen/latency"
	"github.com/interlink-go/interlink/internal/loadgen/measure"
	"github.com/interlink-go/interlink/internal/loadgen/payload"
	"github.com/interlink-go/interlink/internal/loadgen/target"
)

// DefaultPolls is how many long-polls [Run] parks when [Options.Polls]
// is zero.
const DefaultPolls = 1000

// MaxPolls bounds [Options.Polls].
const MaxPolls = 100_000

// PollWait is the timeout_ms of the parked polls: the bus's maximum, so
// they stay parked while [Run] waits. [Options.Duration] must be shorter.
const PollWait = bus.MaxRecvTimeout

// recvWait is the timeout_ms of the poll that expects a message at once.
const recvWait = time.Second

// parkBatch is how many polls connect at once: enough to be quick, few
// enough not to overflow the listener's accept queue.
const parkBatch = 64

// parkedMargin is the open files a process needs besides one per poll:
// its listener, logs, the runtime's own, a few spare connections.
const parkedMargin = 256

// floorRequests is how many GET /healthz requests measure the floor of a
// parked run, on the idle bus.
const floorRequests = 500

// parkedMetric is the bus's gauge of long-polls waiting for a message.
const parkedMetric = "interlink_bus_longpolls_parked"

// Options say what [Run] measures.
type Options struct {
	// Command starts the bus process: interlink-bus and any arguments,
	// to which --addr 127.0.0.1:0 is added.
	Command []string
	// Polls is how many long-polls are parked, each on a route and a
	// connection of its own; 0 means [DefaultPolls].
	Polls int
	// Senders is how many sends wake the polls at a time; 0 means 1.
	Senders int
	// Size is the payload's length, as [payload.Make] takes it.
	Size int
	// KeepAlive reuses the senders' connections.
	KeepAlive bool
	// Duration is how long the polls wait, parked, while the bus's
	// processor time is read; it must be shorter than [PollWait].
	Duration time.Duration
}

// ErrFileLimit reports a run that needs more open files than this system
// lets a process have.
var ErrFileLimit = errors.New("not enough open files")

// parkedFiles returns the open files n parked polls need in each of the
// two processes: one connection per poll, one per sender, and a margin.
func parkedFiles(n, senders int) uint64 {
	return uint64(n + senders + parkedMargin)
}

// checkParkedFiles reports, wrapping [ErrFileLimit], when n polls need
// more open files than limit allows a process (who names it), and how
// many polls would fit.
func checkParkedFiles(who string, n, senders int, limit uint64) error {
	need := parkedFiles(n, senders)
	if need <= limit {
		return nil
	}
	fits := max(int64(limit)-int64(senders)-parkedMargin, 0)
	return fmt.Errorf("%w: %d parked polls need about %d open files in %s, whose limit is %d; at most %d polls fit: raise the hard limit (ulimit -Hn, as root; LimitNOFILE= for a service) or ask for fewer polls",
		ErrFileLimit, n, need, who, limit, fits)
}

// parkedRun is the state of one [ModeParked] run.
type parkedRun struct {
	cfg   Options
	log   *slog.Logger
	bus   *target.Process
	url   string
	start time.Time // the origin of the times below

	// Per poll, in nanoseconds since start: when its message's send
	// began, and when the poll had it.
	sentAt, gotAt []atomic.Int64
	// Per poll, how many messages it received.
	got []atomic.Int32

	repolls  atomic.Int64 // polls that timed out and polled again
	misroute atomic.Int64 // messages that arrived on another poll's route
	errs     atomic.Int64
	firstErr atomic.Value // string
}

// fail counts an error, keeping the first one's text.
func (p *parkedRun) fail(err error) {
	p.errs.Add(1)
	p.firstErr.CompareAndSwap(nil, err.Error())
}

func (p *parkedRun) since() int64 { return int64(time.Since(p.start)) }

// Run parks cfg.Polls long-polls, each on a route and a connection of its
// own, on a bus process started with cfg.Command, and measures what they
// cost it: resident memory above the idle bus, and processor time over
// cfg.Duration of waiting. Then it wakes each poll by a send to its route
// and measures, per poll, the time from the start of that send to the
// poll's return; every poll must get its message, once. Asked for more
// polls than a process may open files for, it fails with an error
// wrapping [ErrFileLimit] before it starts the bus. A nil log discards its
// progress notes.
func Run(ctx context.Context, cfg Options, log *slog.Logger) (measure.Result, error) {
	res := measure.Result{Name: "parked"}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Polls == 0 {
		cfg.Polls = DefaultPolls
	}
	cfg.Senders = max(cfg.Senders, 1)
	n := cfg.Polls
	need := parkedFiles(n, cfg.Senders)
	soft, _, known := target.RaiseFileLimit(need)
	if known {
		if err := checkParkedFiles("the load generator", n, cfg.Senders, soft); err != nil {
			return res, err
		}
	}
	bus, err := target.StartProcess(ctx, cfg.Command)
	if err != nil {
		return res, err
	}
	defer bus.Stop()
	busLimit, busKnown := bus.FileLimit()
	if busKnown {
		if err := checkParkedFiles("the bus process", n, cfg.Senders, busLimit); err != nil {
			return res, err
		}
	}
	log.Info("parked: bus started", "pid", bus.PID(), "addr", bus.Addr, "open_files_limit", busLimit)

	p := &parkedRun{cfg: cfg, log: log, bus: bus, url: "http://" + bus.Addr, start: time.Now(),
		sentAt: make([]atomic.Int64, n), gotAt: make([]atomic.Int64, n), got: make([]atomic.Int32, n)}
	prefix := "bench-" + target.NewID() + "-"

	// The floor, on the idle bus: one request's latency, on the
	// connections the sends use.
	sendClient := busclient.New(p.url, cfg.KeepAlive, cfg.Senders)
	defer sendClient.Close()
	floor := latency.NewRecorder(0)
	for range floorRequests {
		t := time.Now()
		if err := sendClient.Get(ctx, "/healthz"); err != nil {
			return res, fmt.Errorf("parked: the idle bus: %v", err)
		}
		floor.Add(time.Since(t))
	}
	// A whole cycle too, so that the idle figure includes the code and
	// buffers every poll's handler uses.
	warm := prefix + "warm-0"
	if err := sendClient.Send(ctx, warm, payload.Make("warm", 0, cfg.Size)); err != nil {
		return res, fmt.Errorf("parked: the idle bus: %v", err)
	}
	if m, err := sendClient.Recv(ctx, warm, recvWait); err != nil || sendClient.Ack(ctx, warm, m.Ack) != nil {
		return res, fmt.Errorf("parked: the idle bus does not deliver: %v", err)
	}
	sendClient.Close()
	res.RSSBefore = bus.SettledRSS(ctx)
	files := bus.OpenFiles()

	// Park.
	pollCtx, stopPolls := context.WithCancel(ctx)
	defer stopPolls()
	var polls sync.WaitGroup
	defer polls.Wait()
	defer stopPolls()
	routes := make([]string, n)
	for k := range routes {
		routes[k] = prefix + "parked-" + strconv.Itoa(k)
	}
	parkStart := time.Now()
	seen, err := p.park(pollCtx, &polls, routes)
	if err != nil {
		return res, err
	}
	parkTook := time.Since(parkStart)
	log.Info("parked: polls parked", "n", n, "took", parkTook)

	// Wait, with every poll parked, and see what the bus spends.
	cpu0, cerr := bus.CPUTime()
	self0 := target.SelfCPU()
	t0 := time.Now()
	sleep(ctx, cfg.Duration)
	cpu1, cerr2 := bus.CPUTime()
	self1 := target.SelfCPU()
	waited := time.Since(t0)
	res.RSSAfter = bus.SettledRSS(ctx)
	holding := bus.OpenFiles()
	if ctx.Err() != nil {
		return res, ctx.Err()
	}

	// Wake each poll by a send to its route.
	sends := latency.NewRecorder(0)
	wakeStart := time.Now()
	p.wake(ctx, routes, sends)
	if err := p.awaitAll(ctx, &polls, stopPolls); err != nil {
		return res, err
	}
	res.Elapsed = time.Since(wakeStart)
	left := p.leftover(ctx, routes)

	wakes := latency.NewRecorder(n)
	received, dup := int64(0), int64(0)
	for k := range n {
		switch c := p.got[k].Load(); {
		case c == 0:
			continue
		case c > 1:
			dup += int64(c - 1)
		}
		received++
		if s := p.sentAt[k].Load(); s > 0 {
			wakes.Add(time.Duration(p.gotAt[k].Load() - s))
		}
	}
	res.Ops = received
	res.Latency = wakes.Summary()
	res.Errors = p.errs.Load()
	if e, ok := p.firstErr.Load().(string); ok {
		res.FirstError = e
	}
	lost := int64(n) - received
	f := floor.Summary()
	s := sends.Summary()
	res.Extra = []measure.Field{
		{Key: "polls", Value: strconv.Itoa(n)},
		{Key: "parked", Value: strconv.Itoa(seen)},
	}
	if files >= 0 && holding >= 0 {
		res.Extra = append(res.Extra, measure.Field{Key: "bus_conns", Value: strconv.Itoa(max(holding-files, 0))})
	}
	if res.RSSBefore > 0 && res.RSSAfter > 0 {
		per := float64(res.RSSAfter-res.RSSBefore) / float64(n)
		res.Extra = append(res.Extra, measure.Field{Key: "per_poll", Value: strconv.FormatFloat(per/1024, 'f', 1, 64) + "KiB"})
	}
	if cerr == nil && cerr2 == nil && waited > 0 {
		res.Extra = append(res.Extra, measure.Field{Key: "bus_cpu", Value: percentOfCore(cpu1-cpu0, waited)})
	}
	if self0 >= 0 && self1 >= 0 && waited > 0 {
		res.Extra = append(res.Extra, measure.Field{Key: "load_cpu", Value: percentOfCore(self1-self0, waited)})
	}
	res.Extra = append(res.Extra,
		measure.Field{Key: "waited", Value: waited.Round(time.Millisecond).String()},
		measure.Field{Key: "park_took", Value: parkTook.Round(time.Millisecond).String()},
		measure.Field{Key: "lost", Value: strconv.FormatInt(lost, 10)},
		measure.Field{Key: "duplicates", Value: strconv.FormatInt(dup+left, 10)},
		measure.Field{Key: "misrouted", Value: strconv.FormatInt(p.misroute.Load(), 10)},
		measure.Field{Key: "repolls", Value: strconv.FormatInt(p.repolls.Load(), 10)},
		measure.Field{Key: "send_p50", Value: measure.Millis(s.P50)},
		measure.Field{Key: "send_p99", Value: measure.Millis(s.P99)},
		measure.Field{Key: "floor_p50", Value: measure.Millis(f.P50)},
		measure.Field{Key: "floor_p99", Value: measure.Millis(f.P99)},
	)
	if busKnown {
		res.Extra = append(res.Extra, measure.Field{Key: "bus_nofile", Value: strconv.FormatUint(busLimit, 10)})
	}
	if lost > 0 || dup+left > 0 || p.misroute.Load() > 0 {
		return res, fmt.Errorf("parked: %d of %d polls got no message, %d messages came twice, %d on another route", lost, n, dup+left, p.misroute.Load())
	}
	return res, nil
}

// parkBound bounds how long n polls may take to park.
func parkBound(n int) time.Duration {
	return 30*time.Second + time.Duration(n)*2*time.Millisecond
}

// park starts one poll per route, each on a connection of its own, at
// most parkBatch connecting at once, and returns once the bus's metrics
// report them all parked, with the count it saw.
func (p *parkedRun) park(ctx context.Context, wg *sync.WaitGroup, routes []string) (int, error) {
	pc := busclient.New(p.url, false, 0)
	deadline := time.Now().Add(parkBound(len(routes)))
	for k, route := range routes {
		wg.Go(func() { p.poll(ctx, pc, k, route) })
		if launched := int64(k + 1); launched%parkBatch == 0 || k == len(routes)-1 {
			for pc.Dials() < launched {
				if time.Now().After(deadline) || ctx.Err() != nil {
					return 0, fmt.Errorf("parked: only %d of %d polls connected within %v", pc.Dials(), len(routes), parkBound(len(routes)))
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
	mc := busclient.New(p.url, true, 1)
	defer mc.Close()
	for {
		m, err := mc.Metrics(ctx, parkedMetric)
		if err != nil {
			return 0, fmt.Errorf("parked: reading the bus's metrics: %v", err)
		}
		seen, ok := m[parkedMetric]
		switch {
		case !ok:
			return 0, fmt.Errorf("parked: the bus does not report %s", parkedMetric)
		case int(seen) >= len(routes):
			return int(seen), nil
		case time.Now().After(deadline) || ctx.Err() != nil:
			return int(seen), fmt.Errorf("parked: the bus reports %d of %d polls parked after %v", int(seen), len(routes), parkBound(len(routes)))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// poll long-polls route, the k-th, until it has a message, and acks it.
func (p *parkedRun) poll(ctx context.Context, c *busclient.Client, k int, route string) {
	for ctx.Err() == nil {
		m, err := c.Recv(ctx, route, PollWait)
		now := p.since()
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, busclient.ErrTimeout):
			p.repolls.Add(1)
			continue
		case err != nil:
			p.fail(err)
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		p.gotAt[k].Store(now)
		p.got[k].Add(1)
		if id, _, err := payload.Parse(m.Payload); err != nil || id != "p-"+strconv.Itoa(k) {
			p.misroute.Add(1)
		}
		if err := c.Ack(ctx, route, m.Ack); err != nil && ctx.Err() == nil {
			p.fail(err)
		}
		return
	}
}

// wake sends one message to each route, cfg.Senders at a time, noting
// when each send began.
func (p *parkedRun) wake(ctx context.Context, routes []string, sends *latency.Recorder) {
	c := busclient.New(p.url, p.cfg.KeepAlive, p.cfg.Senders)
	defer c.Close()
	next := make(chan int)
	var wg sync.WaitGroup
	for range p.cfg.Senders {
		wg.Go(func() {
			for k := range next {
				body := payload.Make("p-"+strconv.Itoa(k), 0, p.cfg.Size)
				start := time.Now()
				p.sentAt[k].Store(p.since())
				if err := c.Send(ctx, routes[k], body); err != nil {
					p.sentAt[k].Store(0)
					p.fail(err)
					continue
				}
				sends.Add(time.Since(start))
			}
		})
	}
	for k := range routes {
		if ctx.Err() != nil {
			break
		}
		next <- k
	}
	close(next)
	wg.Wait()
}

// awaitAll waits until every poll has returned, or until a bound has
// passed, after which it stops the polls still waiting: their messages
// are lost.
func (p *parkedRun) awaitAll(ctx context.Context, polls *sync.WaitGroup, stop func()) error {
	done := make(chan struct{})
	go func() {
		polls.Wait()
		close(done)
	}()
	bound := time.NewTimer(10*time.Second + time.Duration(len(p.got))*time.Millisecond)
	defer bound.Stop()
	select {
	case <-done:
		return nil
	case <-bound.C:
		p.log.Warn("parked: polls still waiting after the sends; counting them lost")
	case <-ctx.Done():
	}
	stop()
	select {
	case <-done:
	case <-time.After(measure.Grace):
		return measure.ErrStuck
	}
	return ctx.Err()
}

// leftover counts the messages still queued on routes once every poll
// has had one: each is a message delivered twice or sent twice.
func (p *parkedRun) leftover(ctx context.Context, routes []string) int64 {
	c := busclient.New(p.url, true, 8)
	defer c.Close()
	next := make(chan string)
	var left atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for route := range next {
				if _, err := c.Recv(ctx, route, 0); err == nil {
					left.Add(1)
				} else if !errors.Is(err, busclient.ErrTimeout) && ctx.Err() == nil {
					p.fail(err)
				}
			}
		})
	}
	for _, r := range routes {
		if ctx.Err() != nil {
			break
		}
		next <- r
	}
	close(next)
	wg.Wait()
	return left.Load()
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

// percentOfCore prints used processor time over a wall-clock span as a
// percentage of one core.
func percentOfCore(used, span time.Duration) string {
	return strconv.FormatFloat(100*used.Seconds()/span.Seconds(), 'f', 2, 64) + "%"
}
