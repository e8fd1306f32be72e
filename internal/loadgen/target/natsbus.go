package target

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/busmetrics"
	"github.com/interlink-go/interlink/internal/rosterlog"
	"github.com/interlink-go/interlink/internal/store"
	natsstore "github.com/interlink-go/interlink/internal/store/nats"
)

// readyWait bounds the start of a NATS server in this process and the
// removal of the run's stream.
const readyWait = 10 * time.Second

// startNATSBuses starts cfg.Buses buses in this process on one JetStream
// stream of their own, each with its own connection, and serves them on a
// free 127.0.0.1 port: with one bus all of it, with two /send from the
// first and everything else from the second, with three /send from the
// first, /recv from the second and everything else from the third.
func startNATSBuses(cfg Options, logger *slog.Logger) (_ *Target, err error) {
	natsURL, stopServer := cfg.NATSURL, func() error { return nil }
	where := "NATS at " + cfg.NATSURL
	if natsURL == "" {
		if natsURL, stopServer, err = startNATSServer(cfg.NATSSyncAlways); err != nil {
			return nil, err
		}
		where = "a NATS server in this process"
		if cfg.NATSSyncAlways {
			where += " (sync always)"
		}
	}
	stream := "BENCH_" + cfg.ID
	var (
		stores   []*natsstore.Store
		servers  []*bus.Server
		handlers []http.Handler
	)
	shutdown := func() {
		for _, srv := range servers {
			srv.Shutdown()
		}
	}
	cleanup := func() error {
		shutdown()
		var errs []error
		for _, st := range stores {
			errs = append(errs, st.Close())
		}
		errs = append(errs, removeStream(natsURL, stream), stopServer())
		return errors.Join(errs...)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, cleanup())
		}
	}()
	for range cfg.Buses {
		st, err := natsstore.Open(natsURL, &natsstore.Options{
			Options:      store.Options{Cap: cfg.QueueCap, Logger: logger},
			Stream:       stream,
			MinValue:     bus.MinEnvelopeBytes,
			LongestValue: bus.MaxEnvelopeBytes,
		})
		if err != nil {
			return nil, err
		}
		stores = append(stores, st)
		rl, err := rosterlog.Open(st, &rosterlog.Options{MaxAge: bus.RosterRetention, MaxRecords: 2 * bus.RosterCap})
		if err != nil {
			return nil, err
		}
		srv := bus.New(st, &bus.Options{Logger: logger, RosterLog: rl})
		servers = append(servers, srv)
		// Served as interlink-bus serves it, metrics included.
		handlers = append(handlers, busmetrics.New().Handler(srv))
	}
	handler := handlers[0]
	desc := "in-process bus, nats store on " + where
	switch len(handlers) {
	case 2:
		send, rest := handlers[0], handlers[1]
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/send" {
				send.ServeHTTP(w, r)
				return
			}
			rest.ServeHTTP(w, r)
		})
		desc = "two in-process buses, nats store on " + where + ": sends through one, polls and acks through the other"
	case 3:
		send, recv, rest := handlers[0], handlers[1], handlers[2]
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/send":
				send.ServeHTTP(w, r)
			case "/recv":
				recv.ServeHTTP(w, r)
			default:
				rest.ServeHTTP(w, r)
			}
		})
		desc = "three in-process buses, nats store on " + where + ": sends through the first, polls through the second, acks through the third"
	}
	if cfg.QueueCap > 0 {
		desc += fmt.Sprintf(", cap %d", cfg.QueueCap)
	}
	return serve(handler, desc, logger, nil, servers, cleanup)
}

// removeStream removes the run's stream and its roster bucket from the
// server at natsURL.
func removeStream(natsURL, stream string) error {
	nc, err := nats.Connect(natsURL, nats.Timeout(readyWait))
	if err != nil {
		return fmt.Errorf("removing stream %s: %v", stream, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyWait)
	defer cancel()
	var errs []error
	for _, name := range []string{stream, "KV_" + stream + "_ROSTER"} {
		if err := js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			errs = append(errs, fmt.Errorf("removing stream %s: %v", name, err))
		}
	}
	return errors.Join(errs...)
}
