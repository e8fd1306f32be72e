package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/rosterlog"
	"github.com/interlink-go/interlink/internal/store"
	natsstore "github.com/interlink-go/interlink/internal/store/nats"
	"github.com/interlink-go/interlink/internal/wire"
)

// natsConfig is the validated NATS part of the command line; url is empty
// when the queues are not in NATS.
type natsConfig struct {
	url      string
	fromFlag bool // url came from --nats, not the environment
	stream   string
	replicas int
	creds    string // a credentials file, or empty
}

// natsFlags holds the raw values of the NATS flags.
type natsFlags struct {
	url, stream, replicas, creds string
}

// register declares the NATS options on fset, for the bus and its unit.
func (f *natsFlags) register(fset *flag.FlagSet) {
	fset.StringVar(&f.url, "nats", "", "")
	fset.StringVar(&f.stream, "nats-stream", "", "")
	fset.StringVar(&f.replicas, "nats-replicas", "", "")
	fset.StringVar(&f.creds, "nats-creds", "", "")
}

// natsSettings resolves and checks the NATS options. db is the resolved
// --db value and dbSource where it came from, since the two exclude each
// other. When ok is false the problem has been reported and code is the
// status to exit with.
func (c *cli) natsSettings(f natsFlags, db, dbSource string) (cfg natsConfig, code int, ok bool) {
	var source string
	cfg.url, source = c.setting(f.url, "--nats", "INTERLINK_NATS", "")
	cfg.fromFlag = f.url != ""
	stream, streamSource := c.setting(f.stream, "--nats-stream", "INTERLINK_NATS_STREAM", "")
	replicas, replicasSource := c.setting(f.replicas, "--nats-replicas", "INTERLINK_NATS_REPLICAS", "")
	creds, credsSource := c.setting(f.creds, "--nats-creds", "INTERLINK_NATS_CREDS", "")
	if cfg.url == "" {
		for _, set := range []struct{ value, source string }{{stream, streamSource}, {replicas, replicasSource}, {creds, credsSource}} {
			if set.value != "" {
				return cfg, c.fail(exitUsage, fmt.Sprintf("%s applies only with --nats", set.source),
					"give the NATS server with --nats URL, or leave the option out"), false
			}
		}
		return cfg, exitOK, true
	}
	if db != "" {
		return cfg, c.fail(exitUsage, fmt.Sprintf("%s and %s both given: the queues live either in a bbolt file or in NATS", dbSource, source),
			"leave out one of them"), false
	}
	cfg.stream = stream
	if stream == "" {
		cfg.stream = natsstore.DefaultStream
	} else if err := natsstore.CheckStreamName(stream); err != nil {
		return cfg, c.fail(exitUsage, fmt.Sprintf("%s %q: %s", streamSource, stream, store.Reason(err)), helpHint), false
	}
	cfg.replicas = 1
	if replicas != "" {
		n, err := strconv.Atoi(replicas)
		if err != nil || n < 1 || n > 5 {
			return cfg, c.fail(exitUsage, fmt.Sprintf("%s %q: want 1 to 5 servers", replicasSource, replicas), helpHint), false
		}
		cfg.replicas = n
	}
	cfg.creds = creds
	return cfg, exitOK, true
}

// hasCredentials reports whether a --nats value carries a user, password
// or token in one of its URLs.
func hasCredentials(servers string) bool {
	for _, s := range strings.Split(servers, ",") {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil || u.User != nil {
			return true // one that cannot be told counts
		}
	}
	return false
}

// openNATS opens the queue stream and the roster bucket. When ok is false
// the problem has been reported and code is the status to exit with.
func (c *cli) openNATS(cfg natsConfig, opts *store.Options, log *slog.Logger) (st *natsstore.Store, rl *rosterlog.Roster, code int, ok bool) {
	if cfg.fromFlag && hasCredentials(cfg.url) {
		log.Warn("the NATS credentials in --nats can be read by other users of this machine in the process list; " +
			"use --nats-creds FILE, or give the URL in INTERLINK_NATS")
	}
	connect := []nats.Option{nats.Name(progName)}
	if cfg.creds != "" {
		f, err := os.Open(cfg.creds)
		if err != nil {
			return nil, nil, c.fail(exitError, fmt.Sprintf("cannot read the NATS credentials file: %v", err)), false
		}
		f.Close()
		connect = append(connect, nats.UserCredentials(cfg.creds))
	}
	st, err := natsstore.Open(cfg.url, &natsstore.Options{
		Options:      *opts,
		Stream:       cfg.stream,
		Replicas:     cfg.replicas,
		MinValue:     bus.MinEnvelopeBytes,
		LongestValue: bus.MaxEnvelopeBytes,
		Connect:      connect,
	})
	if err != nil {
		var hint []string
		switch {
		case errors.Is(err, natsstore.ErrUnreachable):
			hint = []string{"the bus does not start without its store; start nats-server first, or fix --nats"}
		case errors.Is(err, store.ErrPayloadLimit):
			hint = []string{fmt.Sprintf("the bus needs message bodies of at least %d bytes; set max_payload: 4MB in every nats-server's configuration, "+
				"which takes every body of up to 2 MiB", bus.MinBodyBytes)}
		}
		return nil, nil, c.fail(exitError, "cannot open the queues in NATS: "+store.Reason(err), hint...), false
	}
	rl, err = rosterlog.Open(st, &rosterlog.Options{
		MaxAge: bus.RosterRetention,
		// Removals and entries that gave way also take room until
		// they are dropped or discarded.
		MaxRecords: 2 * bus.RosterCap,
		// The roster key and the announcement, both within the
		// announcement's bound, and the receipt time.
		MaxValue: 2*wire.MaxAnnounceBytes + 32,
	})
	if err != nil {
		st.Close()
		return nil, nil, c.fail(exitError, "cannot open the roster in NATS: "+store.Reason(err)), false
	}
	log.Info("queues and roster in NATS JetStream", "nats", st.Server(), "stream", cfg.stream,
		"replicas", cfg.replicas, "roster", rl.Bucket())
	if limit := bus.BodyLimit(st.MaxValue()); limit < wire.MaxBodyBytes {
		log.Warn("the NATS server's max_payload limits message bodies; a larger /send gets 413",
			"max_body", limit, "max_payload", st.MaxPayload(),
			"hint", fmt.Sprintf("set max_payload to %d or more (such as 4MB) for bodies of up to 2 MiB", natsstore.MinPayload(bus.MaxEnvelopeBytes)))
	}
	return st, rl, exitOK, true
}
