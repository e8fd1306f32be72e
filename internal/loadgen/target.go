package loadgen

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/busmetrics"
	"github.com/interlink-go/interlink/internal/store"
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
	opts := &store.Options{Cap: cfg.QueueCap, Logger: logger, ObserveCommit: metrics.ObserveCommit}
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
		b, err := store.OpenBolt(path, opts)
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
	cleanup := func() error {
		err := st.Close()
		if tmpDir != "" {
			err = errors.Join(err, os.RemoveAll(tmpDir))
		}
		return err
	}

	ln, err := loopbackListen()
	if err != nil {
		return nil, errors.Join(err, cleanup())
	}
	srv := bus.New(st, &bus.Options{Logger: logger})
	hs := &http.Server{
		// Served as interlink-bus serves it, metrics included.
		Handler:           metrics.Handler(srv),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
	// Parked long-polls are active connections that Shutdown would wait
	// for; the bus ends them once the listener is closed.
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	// By the time the bus stops the load is over; nothing needs a
	// graceful goodbye.
	stop := func() error {
		srv.Shutdown()
		err := hs.Close()
		if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		return errors.Join(err, cleanup())
	}
	return &target{url: "http://" + ln.Addr().String(), desc: desc, local: true, stop: stop}, nil
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
