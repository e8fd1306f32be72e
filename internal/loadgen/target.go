package loadgen

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/busmetrics"
	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/store/bolt"
)

// target is the bus a run loads.
type target struct {
	url   string
	desc  string // for the report header
	local bool   // the bus runs in this process
	// stop shuts an in-process bus down and removes its temporary files.
	stop func() error
}

// startBus starts a bus in this process on a free 127.0.0.1 port, with the
// store cfg asks for.
func startBus(cfg Config, logger *slog.Logger) (_ *target, err error) {
	if cfg.Store == StoreNATS {
		return startNATSBuses(cfg, logger)
	}
	metrics := busmetrics.New()
	opts := &store.Options{Cap: cfg.QueueCap, Logger: logger,
		RouteBytes: cfg.QueueBytes, TotalBytes: cfg.TotalBytes}
	route, total := opts.Bounds()
	var (
		st     store.Store
		desc   string
		tmpDir string
	)
	switch cfg.Store {
	case StoreBolt:
		path := cfg.DBPath
		if path == "" {
			if tmpDir, err = os.MkdirTemp("", "interlink-bench-"); err != nil {
				return nil, err
			}
			path = filepath.Join(tmpDir, "bus.db")
		} else if err := mustNotExist(path); err != nil {
			return nil, err
		}
		b, err := bolt.Open(path, &bolt.Options{Options: *opts, ObserveCommit: metrics.ObserveCommit})
		if err != nil {
			os.RemoveAll(tmpDir)
			return nil, err
		}
		st, desc = b, "in-process bus, bolt store "+path
	default:
		st, desc = store.NewMemory(opts), "in-process bus, memory store"
	}
	if cfg.QueueCap > 0 {
		desc += fmt.Sprintf(", cap %d", cfg.QueueCap)
	}
	if cfg.QueueBytes > 0 || cfg.TotalBytes > 0 {
		desc += fmt.Sprintf(", %d bytes per route, %d in all", route, total)
	}
	cleanup := func() error {
		err := st.Close()
		if tmpDir != "" {
			err = errors.Join(err, os.RemoveAll(tmpDir))
		}
		return err
	}

	srv := bus.New(st, &bus.Options{Logger: logger})
	metrics.Limits(busmetrics.Limits{QueueCap: cmp.Or(cfg.QueueCap, store.DefaultCap), QueueBytes: route, TotalBytes: total})
	// Served as interlink-bus serves it, metrics included.
	return serveTarget(metrics.Handler(srv), desc, logger, []*bus.Server{srv}, cleanup)
}

// serveTarget serves h, the handler of buses, on a free 127.0.0.1 port as
// interlink-bus serves it ([bus.Serve]). Stopping the target ends the
// buses' parked polls, shuts serving down, waiting a little for requests
// still running, then calls cleanup. When serving cannot start, cleanup is
// called at once.
func serveTarget(h http.Handler, desc string, logger *slog.Logger, buses []*bus.Server, cleanup func() error) (*target, error) {
	ln, err := loopbackListen()
	if err != nil {
		return nil, errors.Join(err, cleanup())
	}
	opts := &bus.Options{ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelDebug)}
	serving := bus.Serve(ln, h, opts, buses...)
	stop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		// Requests still running at the deadline have their connections
		// closed; the run that sent them has ended.
		_ = serving.Shutdown(ctx)
		return errors.Join(serving.Err(), cleanup())
	}
	return &target{url: serving.URL(), desc: desc, local: true, stop: stop}, nil
}

// loopbackServer returns the HTTP server of a floor, logging its errors to
// logger at debug level. It has the bus's header and idle timeouts, and
// none of its per-request deadlines and limits: a floor is what the
// machine manages, so that what the bus's own rules cost shows between
// the bus and its floor.
func loopbackServer(h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: bus.HeaderTimeout,
		IdleTimeout:       bus.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
}

// mustNotExist refuses a path that already exists, so that a benchmark never
// writes into a database someone uses.
func mustNotExist(path string) error {
	_, err := os.Lstat(path)
	switch {
	case err == nil:
		return fmt.Errorf("%s already exists: give a new file name for the benchmark's database", path)
	case errors.Is(err, fs.ErrNotExist):
		return nil
	default:
		return err
	}
}
