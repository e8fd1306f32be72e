package loadgen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/interlink-go/interlink/internal/loadgen/busclient"
	"github.com/interlink-go/interlink/internal/loadgen/latency"
	"github.com/interlink-go/interlink/internal/loadgen/target"
)

// DefaultPolls is how many long-polls [ModeParked] parks when
// [Config.Polls] is zero.
const DefaultPolls = 1000

// maxPolls bounds [Config.Polls].
const maxPolls = 100_000

// parkedMargin is the open files a process needs besides one per poll:
// its listener, logs, the runtime's own, a few spare connections.
const parkedMargin = 256

// floorRequests is how many GET /healthz requests measure the floor of a
// parked run, on the idle bus.
const floorRequests = 500

// parkedMetric is the bus's gauge of long-polls waiting for a message.
const parkedMetric = "interlink_bus_longpolls_parked"

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

// parkedDefaults checks and completes the settings of [ModeParked], which
// starts a bus process of its own.
func (c Config) parkedDefaults() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return c, fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	if c.URL != "" || c.BusPID != 0 || c.Store != "" || c.DBPath != "" || c.QueueCap != 0 || c.NATSURL != "" || c.Latency != 0 || c.WithFloor || c.FillRoutes != 0 || c.Conns != 0 || len(c.StallKinds) > 0 {
		return bad("mode parked starts a bus process of its own and measures its own floor: leave out --url, --bus-pid, the store settings, --latency, --with-floor, --fill-routes, --conns and --stall")
	}
	if len(c.BusCommand) == 0 {
		return bad("mode parked needs the command that starts a bus")
	}
	if c.Polls == 0 {
		c.Polls = DefaultPolls
	}
	if c.Polls < 0 || c.Polls > maxPolls {
		return bad("polls %d is outside 1..%d", c.Polls, maxPolls)
	}
	if c.Duration >= idleWait {
		return bad("mode parked waits %v with the polls parked, longer than a poll parks (%v): give a shorter --duration", c.Duration, idleWait)
	}
	return c, nil
}

// parkedRun is the state of one [ModeParked] run.
type parkedRun struct {
	cfg   Config
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

// parked parks cfg.Polls long-polls, each on a route and a connection of
// its own, on a bus process started with cfg.BusCommand, and measures
// what they cost it: resident memory above the idle bus, and processor
// time over cfg.Duration of waiting. Then it wakes each poll by a send to
// its route and measures, per poll, the time from the start of that send
// to the poll's return; every poll must get its message, once.
func parked(ctx context.Context, cfg Config, log *slog.Logger) (Result, error) {
	res := Result{Name: string(ModeParked)}
	n := cfg.Polls
	need := parkedFiles(n, cfg.Senders)
	soft, _, known := raiseFileLimit(need)
	if known {
		if err := checkParkedFiles("the load generator", n, cfg.Senders, soft); err != nil {
			return res, err
		}
	}
	bus, err := target.StartProcess(ctx, cfg.BusCommand)
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
	prefix := names("bench-" + target.NewID() + "-")

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
	warm := prefix.route("warm", 0)
	if err := sendClient.Send(ctx, warm, makePayload("warm", 0, cfg.Size)); err != nil {
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
	routes := prefix.routes("parked", n)
	parkStart := time.Now()
	seen, err := p.park(pollCtx, &polls, routes)
	if err != nil {
		return res, err
	}
	parkTook := time.Since(parkStart)
	log.Info("parked: polls parked", "n", n, "took", parkTook)

	// Wait, with every poll parked, and see what the bus spends.
	cpu0, cerr := bus.CPUTime()
	self0 := selfCPU()
	t0 := time.Now()
	sleep(ctx, cfg.Duration)
	cpu1, cerr2 := bus.CPUTime()
	self1 := selfCPU()
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
	res.Extra = []Field{
		{"polls", strconv.Itoa(n)},
		{"parked", strconv.Itoa(seen)},
	}
	if files >= 0 && holding >= 0 {
		res.Extra = append(res.Extra, Field{"bus_conns", strconv.Itoa(max(holding-files, 0))})
	}
	if res.RSSBefore > 0 && res.RSSAfter > 0 {
		per := float64(res.RSSAfter-res.RSSBefore) / float64(n)
		res.Extra = append(res.Extra, Field{"per_poll", strconv.FormatFloat(per/1024, 'f', 1, 64) + "KiB"})
	}
	if cerr == nil && cerr2 == nil && waited > 0 {
		res.Extra = append(res.Extra, Field{"bus_cpu", percentOfCore(cpu1-cpu0, waited)})
	}
	if self0 >= 0 && self1 >= 0 && waited > 0 {
		res.Extra = append(res.Extra, Field{"load_cpu", percentOfCore(self1-self0, waited)})
	}
	res.Extra = append(res.Extra,
		Field{"waited", waited.Round(time.Millisecond).String()},
		Field{"park_took", parkTook.Round(time.Millisecond).String()},
		Field{"lost", strconv.FormatInt(lost, 10)},
		Field{"duplicates", strconv.FormatInt(dup+left, 10)},
		Field{"misrouted", strconv.FormatInt(p.misroute.Load(), 10)},
		Field{"repolls", strconv.FormatInt(p.repolls.Load(), 10)},
		Field{"send_p50", formatMillis(s.P50)},
		Field{"send_p99", formatMillis(s.P99)},
		Field{"floor_p50", formatMillis(f.P50)},
		Field{"floor_p99", formatMillis(f.P99)},
	)
	if busKnown {
		res.Extra = append(res.Extra, Field{"bus_nofile", strconv.FormatUint(busLimit, 10)})
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
		m, err := c.Recv(ctx, route, idleWait)
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
		if id, _, err := parsePayload(m.Payload); err != nil || id != "p-"+strconv.Itoa(k) {
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
				payload := makePayload("p-"+strconv.Itoa(k), 0, p.cfg.Size)
				start := time.Now()
				p.sentAt[k].Store(p.since())
				if err := c.Send(ctx, routes[k], payload); err != nil {
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
	case <-time.After(grace):
		return ErrStuck
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

// percentOfCore prints used processor time over a wall-clock span as a
// percentage of one core.
func percentOfCore(used, span time.Duration) string {
	return strconv.FormatFloat(100*used.Seconds()/span.Seconds(), 'f', 2, 64) + "%"
}
