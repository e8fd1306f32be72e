package loadgen

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/interlink-go/interlink/internal/loadgen/busclient"
	"github.com/interlink-go/interlink/internal/loadgen/delayproxy"
	"github.com/interlink-go/interlink/internal/loadgen/measure"
	"github.com/interlink-go/interlink/internal/loadgen/parked"
	"github.com/interlink-go/interlink/internal/loadgen/stall"
	"github.com/interlink-go/interlink/internal/loadgen/target"
)

// Report is what one run measured.
type Report struct {
	// Config is the configuration the run used, defaults filled in.
	Config Config
	// Target describes the bus (or server) that took the load.
	Target string
	// Results holds one entry per measurement, in the order made.
	Results []measure.Result
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
	r := &run{cfg: cfg, log: logger, meter: newMeter(cfg.Duration), names: names("bench-" + target.NewID() + "-")}
	r.floors = &floors{cfg: cfg, log: logger, meter: r.meter}
	rep := &Report{Config: cfg}

	switch cfg.Mode {
	case ModeFloor:
		rep.Target = "in-process loopback HTTP server answering 200"
		res, err := r.floors.floor(ctx, r.names.route("floor", 0), cfg.Senders, 1)
		rep.Results = append(rep.Results, res)
		return rep, cmp.Or(err, ctx.Err())
	case ModeBoltFloor:
		rep.Target = "raw bbolt file"
		res, err := r.floors.bolt(ctx, cfg.DBPath, "")
		rep.Results = append(rep.Results, res)
		return rep, cmp.Or(err, ctx.Err())
	case ModeStall:
		rep.Target = "a new process for each kind: " + strings.Join(cfg.BusCommand, " ")
		res, err := stall.Run(ctx, stall.Options{Command: cfg.BusCommand, Conns: cfg.Conns, Kinds: cfg.StallKinds}, logger)
		rep.Results = append(rep.Results, res...)
		return rep, cmp.Or(err, ctx.Err())
	case ModeParked:
		rep.Target = "a new process: " + strings.Join(cfg.BusCommand, " ")
		res, err := parked.Run(ctx, parked.Options{Command: cfg.BusCommand, Polls: cfg.Polls, Senders: cfg.Senders,
			Size: cfg.Size, KeepAlive: cfg.KeepAlive, Duration: cfg.Duration}, logger)
		rep.Results = append(rep.Results, res)
		return rep, cmp.Or(err, ctx.Err())
	}

	if cfg.URL == "" {
		r.target, err = target.Start(target.Options{Store: cfg.Store, DBPath: cfg.DBPath,
			QueueCap: cfg.QueueCap, QueueBytes: cfg.QueueBytes, TotalBytes: cfg.TotalBytes,
			NATSURL: cfg.NATSURL, NATSSyncAlways: cfg.NATSSyncAlways, Buses: cfg.Buses,
			ID: target.NewID(), Logger: logger})
	} else {
		r.target, err = target.At(ctx, cfg.URL, cfg.BusPID)
	}
	if err != nil {
		return nil, err
	}
	rep.Target = r.target.Desc
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), measure.Grace)
		defer cancel()
		if serr := r.target.Stop(ctx); serr != nil && err == nil {
			err = fmt.Errorf("stopping the in-process bus: %v", serr)
		}
	}()
	r.url = r.target.URL
	if cfg.Latency > 0 {
		p, u, err := delayproxy.For(r.target.URL, cfg.Latency)
		if err != nil {
			return nil, err
		}
		defer p.Close()
		r.url = u
		rep.Target += fmt.Sprintf(", through a proxy adding %v each way", cfg.Latency)
	}
	r.client = busclient.New(r.url, cfg.KeepAlive, cfg.Senders+cfg.Receivers)
	defer r.client.Close()
	defer func() {
		if serr := r.stopVariants(); serr != nil && err == nil {
			err = fmt.Errorf("stopping a variant's bus: %v", serr)
		}
	}()
	if err := r.startVariants(rep); err != nil {
		return nil, err
	}

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
	r.meter.window = cfg.Duration / time.Duration(rounds)
	latest := map[string]measure.Result{}
	var order []string
	keep := func(res measure.Result) {
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
	prefix := r.names
	for round := 0; round < rounds && ctx.Err() == nil; round++ {
		if rounds > 1 {
			// Routes of their own: a send cut off at the end of a
			// round can still land after it.
			r.names = prefix + names("r"+strconv.Itoa(round)+"-")
		}
		var res measure.Result
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
		for _, v := range r.variants {
			if ctx.Err() == nil {
				res, err = r.variantRound(ctx, v)
				if keep(res); err != nil {
					return rep, err
				}
			}
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
		res, err := r.floors.floor(ctx, r.names.route("floor", 0), workers, reqs)
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
			res, err := r.floors.bolt(ctx, "", dir)
			keep(res)
			if err != nil {
				return rep, err
			}
		}
	}
	return rep, ctx.Err()
}

// run holds the state of one [Run] against a bus: where the load goes and
// how it is measured.
type run struct {
	cfg    Config
	log    *slog.Logger
	meter  *meter
	names  names   // the routes of the current round
	floors *floors // the servers and file a bus is set beside

	target *target.Target
	url    string // where the load goes: the bus, or the proxy before it
	client *busclient.Client

	variants []*variantRun // measured beside the roundtrip
}
