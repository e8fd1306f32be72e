package loadgen

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/interlink-go/interlink/internal/loadgen/busclient"
	"github.com/interlink-go/interlink/internal/loadgen/delayproxy"
	"github.com/interlink-go/interlink/internal/loadgen/parked"
	"github.com/interlink-go/interlink/internal/loadgen/stall"
	"github.com/interlink-go/interlink/internal/loadgen/target"
)

// Mode names a load scenario.
type Mode string

// The scenarios. Each is described in the package documentation.
const (
	ModeRoundtrip Mode = "roundtrip"
	ModePipeline  Mode = "pipeline"
	ModeWake      Mode = "wake"
	ModeFloor     Mode = "floor"
	ModeFill      Mode = "fill"
	ModeBoltFloor Mode = "boltfloor"
	ModeAgentSend Mode = "agentsend"
	ModeFull      Mode = "full"
	ModeStall     Mode = "stall"
	ModeParked    Mode = "parked"
)

// Modes lists every [Mode] in the order the help text gives them.
var Modes = []Mode{ModeRoundtrip, ModePipeline, ModeWake, ModeFloor, ModeFill, ModeFull, ModeBoltFloor, ModeAgentSend, ModeStall, ModeParked}

// Store kinds for an in-process bus.
const (
	StoreMemory = target.StoreMemory
	StoreBolt   = target.StoreBolt
	StoreNATS   = target.StoreNATS
)

// Defaults for the zero values of [Config].
const (
	DefaultDuration = 5 * time.Second
	// DefaultSize is what the command line offers as the payload size; a
	// zero Size in a Config means the smallest payload instead.
	DefaultSize = 256
)

// Upper bounds that keep a mistyped number from exhausting the machine.
const (
	maxWorkers     = 4096
	maxIdle        = 100_000
	maxRoutes      = 1_000_000
	maxSize        = 2<<20 - 1024 // stays under the bus's 2 MiB body limit with the envelope
	maxDuration    = 10 * time.Minute
	maxFillEntries = 10_000_000
	maxRounds      = 100
	minRound       = 100 * time.Millisecond
)

// ErrConfig marks an error in a [Config]: the caller asked for something
// impossible, as opposed to a run that failed.
var ErrConfig = errors.New("invalid load configuration")

// Config describes one load run. The zero value of each field means its
// documented default.
type Config struct {
	// URL is the bus to load. Empty means a bus started in this process on
	// a free 127.0.0.1 port and stopped afterwards.
	URL string
	// AllowRemote permits a URL whose host is not a loopback address.
	// Without it such a URL is refused, so that load is never sent to
	// another machine by accident.
	AllowRemote bool

	// Store is the in-process bus's store, [StoreMemory] (default) or
	// [StoreBolt]. Only without URL.
	Store string
	// DBPath is the bbolt file for Store bolt (and for [ModeBoltFloor]).
	// It must not exist yet; it is created and kept. Empty means a file in
	// a temporary folder that is removed afterwards.
	DBPath string
	// QueueCap is the in-process bus's per-route queue cap; 0 means the
	// store's default.
	QueueCap int
	// QueueBytes and TotalBytes are the in-process bus's byte bounds,
	// per route and in all; 0 means the store's defaults. Not for Store
	// nats.
	QueueBytes, TotalBytes int64
	// NATSURL is the NATS server of Store nats. Empty means a server
	// started in this process, with JetStream in a temporary folder,
	// which only a binary built with the natsbench tag can do. The run
	// uses a stream and roster bucket of its own and removes them.
	NATSURL string
	// NATSSyncAlways makes the server started in this process write
	// every message to disk before acknowledging it (sync_interval:
	// always); by default it does so every two minutes.
	NATSSyncAlways bool
	// Buses is the number of in-process buses on Store nats, 1 (the
	// default) to 3. With 2, sends go through the first and polls and
	// acknowledgements through the second, so every delivery crosses
	// from one bus to the other through JetStream; with 3, sends through
	// the first, polls through the second and acknowledgements through
	// the third.
	Buses int

	// Mode is the scenario; empty means [ModeRoundtrip].
	Mode Mode
	// Senders and Receivers are the worker counts; 0 means 1. For
	// roundtrip, floor and fill only Senders counts.
	Senders, Receivers int
	// Routes is the number of routes the measured load uses; 0 means one
	// per sender (roundtrip) or per receiver (pipeline). Roundtrip needs
	// at least one per sender; pipeline uses exactly one per receiver.
	Routes int
	// Window is the most messages the pipeline keeps in flight, sent and
	// not yet delivered; 0 means 4 per receiver and a negative value means
	// no limit.
	Window int
	// Idle is the number of extra long-polls that wake parks on routes
	// of their own, each on its own connection.
	Idle int
	// Size is the payload's length: a JSON string with this many bytes of
	// content. Values below what the id and timestamp need are raised.
	Size int
	// Duration bounds each phase of the run (fill, measurement, floor); 0
	// means [DefaultDuration].
	Duration time.Duration
	// KeepAlive reuses connections. The default, false, opens a new TCP
	// connection for every request. In [ModeAgentSend] it selects the
	// agent's own client (which keeps connections) rather than one that
	// opens a connection per request.
	KeepAlive bool
	// Latency, when positive, puts a TCP proxy in this process between
	// the load and the bus (and the floor's server) that delays every
	// byte by this much in each direction, so a round trip costs twice
	// Latency: a remote relay, simulated on one machine.
	Latency time.Duration
	// WithFloor also measures the loopback HTTP floor (and, for an
	// in-process bolt store, the raw bbolt floor) in the same run; in
	// roundtrip mode also the wire floor, the same cycle against a stub
	// that answers in the bus's wire format and does nothing else.
	WithFloor bool
	// Rounds splits the measurement and its floors into this many rounds
	// of Duration/Rounds each, run in turns (measurement, floors,
	// measurement, …), whose figures add up. On a machine whose other load
	// comes and goes, the measurement and its floors then see the same
	// mix of quiet and busy spells, which makes their ratio steadier. 0
	// means 1. Only for roundtrip, pipeline and agentsend.
	Rounds int
	// TLS, Signed and Sealed also measure, in each round after the plain
	// roundtrip, the variants of package variant: over HTTPS, with every
	// request signed on a bus with --auth required, and with every
	// payload sealed; each alone and, when more than one is set, all
	// together. Each runs on an in-process bus of its own with the plain
	// bus's store settings. Only for roundtrip with an in-process memory
	// or bolt bus.
	TLS, Signed, Sealed bool

	// FillRoutes and FillMsgs preload FillRoutes routes with FillMsgs
	// messages each before the measurement; [ModeFill] does only that.
	FillRoutes, FillMsgs int
	// BusPID names the process of the bus at URL, whose memory is then
	// reported. Zero means none.
	BusPID int

	// Conns is how many connections [ModeStall] stalls of each kind; 0
	// means [stall.DefaultConns].
	Conns int
	// StallKinds names the kinds [ModeStall] measures ([stall.Kinds]);
	// empty means all.
	StallKinds []string
	// BusCommand is what [ModeStall] and [ModeParked] run to start each
	// bus process: interlink-bus and any arguments, to which they add
	// --addr 127.0.0.1:0.
	BusCommand []string
	// Polls is how many long-polls [ModeParked] parks, each on a route
	// and a connection of its own; 0 means [parked.DefaultPolls].
	Polls int
}

// Validate reports whether c describes a run that can be made. Its errors
// wrap [ErrConfig].
func (c Config) Validate() error {
	_, err := c.withDefaults()
	return err
}

// withDefaults returns c with zero values replaced by defaults, or an error
// wrapping [ErrConfig].
func (c Config) withDefaults() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return c, fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	if c.Mode == "" {
		c.Mode = ModeRoundtrip
	}
	known := false
	for _, m := range Modes {
		known = known || m == c.Mode
	}
	if !known {
		return bad("unknown mode %q", c.Mode)
	}
	if c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	switch {
	case c.Duration < 0:
		return bad("negative duration %v", c.Duration)
	case c.Duration > maxDuration:
		return bad("duration %v is over the limit of %v", c.Duration, maxDuration)
	}
	c.Senders = max(c.Senders, 1)
	c.Receivers = max(c.Receivers, 1)
	if c.Senders > maxWorkers || c.Receivers > maxWorkers {
		return bad("at most %d senders and %d receivers", maxWorkers, maxWorkers)
	}
	if c.Size < 0 || c.Size > maxSize {
		return bad("size %d is outside 0..%d", c.Size, maxSize)
	}
	if c.Idle < 0 || c.Idle > maxIdle {
		return bad("idle %d is outside 0..%d", c.Idle, maxIdle)
	}
	if c.Latency < 0 || c.Latency > delayproxy.MaxDelay {
		return bad("latency %v is outside 0..%v", c.Latency, delayproxy.MaxDelay)
	}
	if c.Latency > 0 && (c.Mode == ModeBoltFloor || c.Mode == ModeFill || c.Mode == ModeFull) {
		return bad("mode %s sends nothing over a network: leave out --latency", c.Mode)
	}
	if c.Rounds < 0 || c.Rounds > maxRounds {
		return bad("rounds %d is outside 0..%d", c.Rounds, maxRounds)
	}
	if c.Rounds > 1 {
		switch c.Mode {
		case ModeRoundtrip, ModePipeline, ModeAgentSend:
		default:
			return bad("--rounds applies to roundtrip, pipeline and agentsend")
		}
		if c.Duration/time.Duration(c.Rounds) < minRound {
			return bad("rounds of %v are too short: at least %v each", c.Duration/time.Duration(c.Rounds), minRound)
		}
	}
	if (c.TLS || c.Signed || c.Sealed) && (c.Mode != ModeRoundtrip || c.URL != "" || c.Store == StoreNATS) {
		return bad("--tls, --signed and --sealed apply to mode roundtrip on an in-process memory or bolt bus")
	}
	if c.Idle > 0 && c.Mode != ModeWake {
		return bad("--idle applies to mode wake only")
	}
	if c.Routes < 0 || c.Routes > maxRoutes {
		return bad("routes %d is outside 0..%d", c.Routes, maxRoutes)
	}
	switch c.Mode {
	case ModeRoundtrip, ModeAgentSend:
		if c.Routes == 0 {
			c.Routes = c.Senders
		}
		if c.Routes < c.Senders {
			return bad("%s needs a route per sender: %d routes for %d senders", c.Mode, c.Routes, c.Senders)
		}
	case ModeFull:
		if c.Routes == 0 {
			c.Routes = defaultFullRoutes
		}
		if c.FillRoutes > 0 || c.WithFloor {
			return bad("mode full fills the queues itself and has no floor: leave out --fill-routes, --fill-msgs and --with-floor")
		}
	case ModePipeline:
		if c.Routes == 0 {
			c.Routes = c.Receivers
		}
		if c.Window == 0 {
			c.Window = 4 * c.Receivers
		}
		if c.Routes != c.Receivers {
			return bad("pipeline uses one route per receiver: give --routes %d or leave it out", c.Receivers)
		}
	default:
		c.Routes = max(c.Routes, 1)
	}
	if c.FillRoutes < 0 || c.FillMsgs < 0 || (c.FillRoutes > 0) != (c.FillMsgs > 0) {
		return bad("give both fill routes and fill messages, as positive numbers")
	}
	if c.FillRoutes > maxRoutes || c.FillMsgs > maxFillEntries || c.FillRoutes*c.FillMsgs > maxFillEntries {
		return bad("at most %d routes and %d preloaded messages in all", maxRoutes, maxFillEntries)
	}
	if c.Mode == ModeFill && c.FillRoutes == 0 {
		return bad("mode fill needs fill routes and fill messages")
	}
	if c.QueueCap < 0 {
		return bad("negative queue cap")
	}
	if c.QueueBytes < 0 || c.TotalBytes < 0 {
		return bad("negative byte bound")
	}
	if c.BusPID < 0 {
		return bad("negative bus pid")
	}

	if c.Polls != 0 && c.Mode != ModeParked {
		return bad("--polls applies to mode parked only")
	}
	if c.Mode == ModeStall {
		return c.stallDefaults()
	}
	if c.Mode == ModeParked {
		return c.parkedDefaults()
	}
	if c.Conns != 0 || len(c.StallKinds) > 0 {
		return bad("--conns and --stall apply to mode stall only")
	}

	needsBus := c.Mode != ModeFloor && c.Mode != ModeBoltFloor
	if c.URL != "" {
		if !needsBus {
			return bad("mode %s does not use a bus: leave out --url", c.Mode)
		}
		if c.Store != "" || c.DBPath != "" || c.QueueCap != 0 || c.QueueBytes != 0 || c.TotalBytes != 0 || c.NATSURL != "" || c.Buses > 1 || c.NATSSyncAlways {
			return bad("store, db, queue cap and bytes and the NATS settings configure the in-process bus: leave them out with --url")
		}
		u, err := checkURL(c.URL, c.AllowRemote)
		if err != nil {
			return bad("%v", err)
		}
		c.URL = u
		return c, nil
	}
	if c.BusPID != 0 {
		return bad("a bus pid goes with --url; the in-process bus is this process")
	}
	if c.Store == "" {
		c.Store = StoreMemory
	}
	switch c.Store {
	case StoreMemory:
		if c.DBPath != "" && c.Mode != ModeBoltFloor {
			return bad("a db path needs the bolt store")
		}
	case StoreBolt:
	case StoreNATS:
		if c.DBPath != "" && c.Mode != ModeBoltFloor {
			return bad("a db path needs the bolt store")
		}
		if c.QueueBytes != 0 || c.TotalBytes != 0 {
			return bad("the byte bounds apply to the memory and bolt stores")
		}
	default:
		return bad("unknown store %q (want %s, %s or %s)", c.Store, StoreMemory, StoreBolt, StoreNATS)
	}
	return c.natsDefaults()
}

// checkURL validates a bus URL and returns it without a trailing slash. Only
// plain http is possible (the bus has no TLS), and the host must be a
// loopback address or "localhost" unless allowRemote is set.
func checkURL(raw string, allowRemote bool) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("url %q: %v", raw, err)
	}
	if u.Scheme != "http" {
		return "", fmt.Errorf("url %q: want http://HOST:PORT (the bus speaks plain HTTP)", raw)
	}
	if u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("url %q: want http://HOST:PORT with an optional path", raw)
	}
	if !allowRemote && !isLoopbackHost(u.Hostname()) {
		return "", fmt.Errorf("url %q: %s is not a loopback address; add --allow-remote to load another machine on purpose", raw, u.Hostname())
	}
	return busclient.TrimSlash(u.String()), nil
}

// isLoopbackHost reports whether host is a loopback IP literal or the name
// localhost, which resolvers keep on the loopback interface (RFC 6761).
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
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
		c.Polls = parked.DefaultPolls
	}
	if c.Polls < 0 || c.Polls > parked.MaxPolls {
		return bad("polls %d is outside 1..%d", c.Polls, parked.MaxPolls)
	}
	if c.Duration >= parked.PollWait {
		return bad("mode parked waits %v with the polls parked, longer than a poll parks (%v): give a shorter --duration", c.Duration, parked.PollWait)
	}
	return c, nil
}

// stallDefaults checks and completes the settings of [ModeStall], which
// starts bus processes of its own and loads nothing else.
func (c Config) stallDefaults() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return c, fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	if c.URL != "" || c.BusPID != 0 || c.Store != "" || c.DBPath != "" || c.QueueCap != 0 || c.NATSURL != "" {
		return bad("mode stall starts a bus process of its own for each kind: leave out --url, --bus-pid and the store settings")
	}
	if len(c.BusCommand) == 0 {
		return bad("mode stall needs the command that starts a bus")
	}
	if c.Conns == 0 {
		c.Conns = stall.DefaultConns
	}
	if c.Conns < 0 || c.Conns > stall.MaxConns {
		return bad("conns %d is outside 1..%d", c.Conns, stall.MaxConns)
	}
	if err := stall.Check(c.StallKinds); err != nil {
		return bad("%v", err)
	}
	return c, nil
}
