package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/interlink-go/interlink/internal/cmdline"
	"github.com/interlink-go/interlink/internal/loadgen"
)

const benchUsage = `Usage: interlink-bus bench [options]

Generates load against a bus and prints one line per measurement: operations
per second, p50/p99/p999 and maximum latency, errors, and for an in-process
bus the resident memory of this process before and after. Every phase stops
by itself after --duration. Load goes only to loopback addresses unless
--allow-remote is given.

Target:
    --url URL          the bus to load, such as http://127.0.0.1:9440
                       (default: start one in this process on a free
                       127.0.0.1 port and stop it afterwards)
    --allow-remote     accept a --url whose host is not a loopback address
    --bus-pid PID      with --url: report the memory of process PID, the bus
    --store KIND       in-process bus store: memory (default), bolt or nats
    --db PATH          bbolt file for --store bolt and --mode boltfloor; it
                       must not exist yet and is kept (default: a file in a
                       temporary folder, removed afterwards)
    --queue-cap N      in-process bus queue cap (default 1024; 0 means 1)
    --queue-bytes SIZE in-process bus (memory or bolt): bytes per route
                       (default 8MiB)
    --total-bytes SIZE ... and in all queues (default 128MiB)
    --nats URL         NATS server for --store nats; the run makes a stream
                       and roster bucket of its own and removes them
                       (default: a server in this process with JetStream in
                       a temporary folder, in a binary built with -tags
                       natsbench)
    --nats-sync-always that server writes each message to disk before it
                       acknowledges it (default: every two minutes)
    --buses N          --store nats: 1 (default) to 3 buses on one stream;
                       with 2, sends go through the first bus and polls and
                       acks through the second; with 3, polls through the
                       second and acks through the third

Load:
    --mode MODE        roundtrip (default), pipeline, wake, floor, fill,
                       full, boltfloor, agentsend, stall or parked; see
                       below
    --senders N        concurrent senders (default 1)
    --receivers N      pipeline: receivers, each polling a route of its own
                       (default 1)
    --routes N         roundtrip: routes spread over the senders (default one
                       per sender); pipeline: must equal --receivers; full:
                       routes sent to in turn (default 1024)
    --window N         pipeline: most messages sent and not yet delivered
                       (default 4 per receiver; -1: no limit, senders run
                       ahead and build a backlog)
    --idle N           wake: extra long-polls parked on routes of their own
    --size BYTES       payload: a JSON string with this many bytes of content
                       (default 256)
    --duration D       length of each phase, such as 5s or 1m (default 5s)
    --keepalive        reuse connections (default: a new TCP connection for
                       every request); in agentsend, use the agent's own
                       client, which keeps its connections
    --latency D        put a TCP proxy in this process before the bus (and
                       the floor's server) that delays every byte by D in
                       each direction, such as 10ms: a remote bus on one
                       machine (default 0, no proxy)
    --with-floor       also measure the loopback HTTP floor, and with --store
                       bolt the raw bbolt floor, for comparison; roundtrip
                       also measures the wire floor: its cycle against a
                       stub that answers in the bus's format and does
                       nothing else
    --rounds N         roundtrip, pipeline, agentsend: split the measurement
                       and its floors into N rounds of duration/N, run in
                       turns, and add them up, so that both see the same
                       spells of other load on a shared machine (default 1)
    --tls              roundtrip, in-process memory or bolt bus: also
                       measure, in each round, the cycle over HTTPS on a
                       bus of its own, with a certificate made for the run
                       that the load trusts
    --signed           ... the cycle on a bus with --auth required, every
                       request signed: a send by the sender's key, a poll
                       and an ack by the receiver's
    --sealed           ... the cycle with every payload a message signed by
                       the sender, sealed to the receiver's key and opened
                       on receipt; with more than one of the three, also
                       all of them together. Each line is followed by its
                       ratio to the plain roundtrip of the same run
    --fill-routes N    preload N routes ...
    --fill-msgs M      ... with M messages each before measuring
    --conns N          stall: connections stalled of each kind (default 600)
    --stall KINDS      stall: the kinds to measure, separated by commas
                       (default all): headers, body, chunked, getbody,
                       notfound, method, kept, keptbody, bigheader,
                       manyheaders, hugeheader, idle, poll
    --polls N          parked: long-polls to park, each on a route and a
                       connection of its own (default 1000)
    --bus-bin PATH     stall, parked: the interlink-bus to start and
                       measure (default: this program)
    --log-level LEVEL  log of the in-process bus and progress notes, on
                       stderr (default warn)
    --cpuprofile FILE  write a CPU profile of this process (the load, and
                       the bus and NATS server when they run in it) to FILE,
                       a new file, for 'go tool pprof'
    -h, --help         show this help

Modes:
    roundtrip  each sender sends to its own route, polls it and acks: one
               operation is that three-request cycle
    pipeline   senders send as fast as the window allows, receivers long-poll
               and ack; reports delivered messages per second and the
               latency from send to receipt
    wake       one long-poll waits on a route (beside --idle others); reports
               the latency from send to its return
    floor      no bus: a trivial loopback HTTP server, the cost of a request
    fill       preload --fill-routes x --fill-msgs and report memory
    full       send --size messages over --routes routes until the bus
               answers 507 (its queues hold all --total-bytes allows) and
               report its memory idle and full and the bytes it holds;
               with --url, give --bus-pid for the memory
    boltfloor  no bus: a raw bbolt file committing a put and a delete in a
               loop, the least a durable round trip can cost
    agentsend  each sender is an agent's relay client sending one message
               after the other, while the same client long-polls and acks
               the route as an agent does; an operation is one send
    stall      for each kind of stalled connection, start this program (or
               --bus-bin) as a bus of its own, read its memory (Linux),
               open --conns connections stalled that way, read its memory
               again: rss_before is the idle bus, rss_after the bus
               holding them, per_conn the difference for one connection
    parked     start this program (or --bus-bin) as a bus of its own,
               raising the open-file limit to what --polls needs (or
               saying which limit is short and how many polls fit),
               park --polls long-polls on routes of their own, wait
               --duration, then wake each by a send to its route:
               per_poll is the bus's resident memory above idle for one
               poll, bus_cpu its processor time while they wait (% of a
               core), the latencies run from the start of a poll's send
               to its return, lost and duplicates count polls without
               their message and messages delivered twice; floor_p50
               and floor_p99 are one GET /healthz on the idle bus

Every line reports dials_per_op, the TCP connections the load opened per
operation.
`

const benchHint = "run 'interlink-bus bench --help' for its options"

// bench implements "interlink-bus bench".
func (c *cli) bench(ctx context.Context, args []string) int {
	cfg, level, profile, code, ok := c.benchConfig(args)
	if !ok {
		return code
	}
	log := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: level}))
	stop, err := startCPUProfile(profile)
	if err != nil {
		return c.fail(exitError, "bench: "+err.Error())
	}
	rep, err := loadgen.Run(ctx, cfg, log)
	if perr := stop(); perr != nil && err == nil {
		err = perr
	}
	if rep != nil {
		if werr := rep.Write(c.stdout); werr != nil && err == nil {
			err = werr
		}
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, loadgen.ErrConfig):
		return c.fail(exitUsage, "bench: "+err.Error(), benchHint)
	case errors.Is(err, context.Canceled):
		return c.fail(exitError, "bench: interrupted")
	default:
		return c.fail(exitError, "bench: "+err.Error())
	}
}

// benchConfig parses args. When ok is false the problem (or the help text)
// has been written and code is the status to exit with.
func (c *cli) benchConfig(args []string) (cfg loadgen.Config, level slog.Level, profile string, code int, ok bool) {
	fset := flag.NewFlagSet("bench", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	fset.Usage = func() {}
	var mode, queueCap, queueBytes, totalBytes, logLevel, stall, busBin string
	fset.StringVar(&cfg.URL, "url", "", "")
	fset.BoolVar(&cfg.AllowRemote, "allow-remote", false, "")
	fset.IntVar(&cfg.BusPID, "bus-pid", 0, "")
	fset.StringVar(&cfg.Store, "store", "", "")
	fset.StringVar(&cfg.DBPath, "db", "", "")
	fset.StringVar(&queueCap, "queue-cap", "", "")
	fset.StringVar(&queueBytes, "queue-bytes", "", "")
	fset.StringVar(&totalBytes, "total-bytes", "", "")
	fset.StringVar(&cfg.NATSURL, "nats", "", "")
	fset.BoolVar(&cfg.NATSSyncAlways, "nats-sync-always", false, "")
	fset.IntVar(&cfg.Buses, "buses", 0, "")
	fset.StringVar(&mode, "mode", string(loadgen.ModeRoundtrip), "")
	fset.IntVar(&cfg.Senders, "senders", 1, "")
	fset.IntVar(&cfg.Receivers, "receivers", 1, "")
	fset.IntVar(&cfg.Routes, "routes", 0, "")
	fset.IntVar(&cfg.Window, "window", 0, "")
	fset.IntVar(&cfg.Idle, "idle", 0, "")
	fset.IntVar(&cfg.Size, "size", loadgen.DefaultSize, "")
	fset.DurationVar(&cfg.Duration, "duration", loadgen.DefaultDuration, "")
	fset.BoolVar(&cfg.KeepAlive, "keepalive", false, "")
	fset.DurationVar(&cfg.Latency, "latency", 0, "")
	fset.IntVar(&cfg.Rounds, "rounds", 1, "")
	fset.BoolVar(&cfg.WithFloor, "with-floor", false, "")
	fset.BoolVar(&cfg.TLS, "tls", false, "")
	fset.BoolVar(&cfg.Signed, "signed", false, "")
	fset.BoolVar(&cfg.Sealed, "sealed", false, "")
	fset.IntVar(&cfg.FillRoutes, "fill-routes", 0, "")
	fset.IntVar(&cfg.FillMsgs, "fill-msgs", 0, "")
	fset.IntVar(&cfg.Conns, "conns", 0, "")
	fset.StringVar(&stall, "stall", "", "")
	fset.StringVar(&busBin, "bus-bin", "", "")
	fset.IntVar(&cfg.Polls, "polls", 0, "")
	fset.StringVar(&logLevel, "log-level", "warn", "")
	fset.StringVar(&profile, "cpuprofile", "", "")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(c.stdout, benchUsage)
			return cfg, 0, "", exitOK, false
		}
		return cfg, 0, "", c.fail(exitUsage, "bench: "+err.Error(), benchHint), false
	}
	usageErr := func(msg string) (loadgen.Config, slog.Level, string, int, bool) {
		return cfg, 0, "", c.fail(exitUsage, "bench: "+msg, benchHint), false
	}
	if fset.NArg() > 0 {
		return usageErr(fmt.Sprintf("unexpected argument %q", fset.Arg(0)))
	}
	cfg.Mode = loadgen.Mode(strings.ToLower(mode))
	if stall != "" {
		cfg.StallKinds = strings.Split(stall, ",")
	}
	ownBus := cfg.Mode == loadgen.ModeStall || cfg.Mode == loadgen.ModeParked
	switch {
	case !ownBus && busBin != "":
		return usageErr("--bus-bin applies to modes stall and parked only")
	case busBin != "":
		cfg.BusCommand = []string{busBin}
	case ownBus:
		// Measured against a new process of this binary.
		self, err := selfPath()
		if err != nil {
			return cfg, 0, "", c.fail(exitError, fmt.Sprintf("bench: cannot tell where this program is: %v", err)), false
		}
		cfg.BusCommand = []string{self}
	}
	if queueCap != "" {
		n, err := parseQueueCap(queueCap)
		if err != nil {
			return usageErr(fmt.Sprintf("--queue-cap %q: %v", queueCap, err))
		}
		cfg.QueueCap = n
	}
	for _, b := range []struct {
		name, value string
		dst         *int64
	}{{"queue-bytes", queueBytes, &cfg.QueueBytes}, {"total-bytes", totalBytes, &cfg.TotalBytes}} {
		if b.value == "" {
			continue
		}
		n, err := parseBytes(b.value)
		if err != nil || n == 0 {
			return usageErr(fmt.Sprintf("--%s %q: want a size above 0, such as 128MiB", b.name, b.value))
		}
		*b.dst = n
	}
	level, err := cmdline.ParseLogLevel(logLevel)
	if err != nil {
		return usageErr(fmt.Sprintf("--log-level %q: %v", logLevel, err))
	}
	// Zero and negative counts would silently mean "the default" to the
	// load generator; on the command line they are mistakes.
	for name, v := range map[string]int{"senders": cfg.Senders, "receivers": cfg.Receivers, "duration": int(cfg.Duration)} {
		if v <= 0 {
			return usageErr(fmt.Sprintf("--%s must be positive", name))
		}
	}
	if err := cfg.Validate(); err != nil {
		return usageErr(err.Error())
	}
	return cfg, level, profile, exitOK, true
}

// startCPUProfile starts writing a CPU profile of this process to path,
// or does nothing when path is empty. The returned function stops the
// profile and closes the file.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		return nil
	}, nil
}
