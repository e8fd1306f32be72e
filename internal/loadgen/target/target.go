package target

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/busmetrics"
	"github.com/interlink-go/interlink/internal/loadgen/busclient"
	"github.com/interlink-go/interlink/internal/reqsign"
	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/store/bolt"
)

// Store kinds of an in-process bus.
const (
	StoreMemory = "memory"
	StoreBolt   = "bolt"
	StoreNATS   = "nats"
)

// Options says which bus [Start] starts.
type Options struct {
	// Store is [StoreMemory], [StoreBolt] or [StoreNATS].
	Store string
	// DBPath is the bbolt file of StoreBolt, which must not exist yet;
	// empty means a new file in a temporary folder, removed at Stop.
	DBPath string
	// QueueCap, QueueBytes and TotalBytes bound the queues; 0 means the
	// store's defaults. QueueBytes and TotalBytes are not for StoreNATS.
	QueueCap               int
	QueueBytes, TotalBytes int64
	// NATSURL is the NATS server of StoreNATS; empty means one started in
	// this process ([EmbeddedNATS]), with SyncAlways if asked.
	NATSURL        string
	NATSSyncAlways bool
	// Buses is how many buses StoreNATS starts on one stream, 1 to 3.
	Buses int
	// ID keeps the run's stream apart from others on the same server.
	ID string
	// Logger receives the buses' log; nil discards it.
	Logger *slog.Logger

	// Auth, Verifier and Limits are the request signature mode, the
	// verifier and the per-client limits of a memory or bolt bus
	// ([bus.Options]); the zero values are the bus's defaults.
	Auth     bus.Auth
	Verifier *reqsign.Verifier
	Limits   *bus.Limits
	// TLS, when set, makes a memory or bolt bus serve HTTPS with it; its
	// URL is then https://.
	TLS *tls.Config
}

// Target is the bus a run loads.
type Target struct {
	// URL is where the bus serves.
	URL string
	// Desc says what the bus is, for a report's header.
	Desc string
	// Local reports that the bus runs in this process.
	Local bool
	// PID is the process of a bus at a URL whose memory is measured; 0
	// for none, and for a bus in this process.
	PID int
	// stop shuts an in-process bus down and removes its temporary files.
	stop func(ctx context.Context) error
}

// NewID returns a short random id that keeps a run's routes and stream
// apart from any other traffic on the same bus.
func NewID() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// At checks that the bus at url answers and returns it as a target;
// pid, when not 0, is its process, whose memory is then measured.
func At(ctx context.Context, url string, pid int) (*Target, error) {
	c := busclient.New(url, false, 1)
	defer c.Close()
	if err := c.Get(ctx, "/healthz"); err != nil {
		// The original bus has no /healthz; its roster answers too.
		if err2 := c.Get(ctx, "/roster"); err2 != nil {
			return nil, fmt.Errorf("bus at %s does not answer: %v", url, err)
		}
	}
	return &Target{URL: url, Desc: "bus at " + url, PID: pid}, nil
}

// Stop shuts an in-process bus down, waiting until ctx ends for requests
// still running, and removes its temporary files. A bus at a URL is left
// alone.
func (t *Target) Stop(ctx context.Context) error {
	if t.stop == nil {
		return nil
	}
	return t.stop(ctx)
}

// RSS returns the resident memory of the bus's process: this process for
// an in-process bus, PID for a bus at a URL. It returns 0 when there is
// nothing to measure and -1 when the system cannot tell.
func (t *Target) RSS() int64 { return t.status("VmRSS:") }

// PeakRSS returns the peak resident memory of the bus's process (VmHWM),
// as [Target.RSS] does.
func (t *Target) PeakRSS() int64 { return t.status("VmHWM:") }

// SettledRSS returns [Target.RSS] after a garbage collection that returns
// free memory to the system. For an in-process bus this removes the load
// generator's own garbage from the figure; a bus at a URL is left alone.
func (t *Target) SettledRSS() int64 {
	if t.Local {
		runtime.GC()
		debug.FreeOSMemory()
	}
	return t.RSS()
}

func (t *Target) status(key string) int64 {
	switch {
	case t.Local:
		return readStatusKB(0, key)
	case t.PID > 0:
		return readStatusKB(t.PID, key)
	default:
		return 0
	}
}

// Start starts a bus in this process on a free 127.0.0.1 port, with the
// store opts asks for.
func Start(opts Options) (_ *Target, err error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.Store == StoreNATS {
		return startNATSBuses(opts, logger)
	}
	metrics := busmetrics.New()
	sopts := &store.Options{Cap: opts.QueueCap, Logger: logger,
		RouteBytes: opts.QueueBytes, TotalBytes: opts.TotalBytes}
	route, total := sopts.Bounds()
	var (
		st     store.Store
		desc   string
		tmpDir string
	)
	switch opts.Store {
	case StoreBolt:
		path := opts.DBPath
		if path == "" {
			if tmpDir, err = os.MkdirTemp("", "interlink-bench-"); err != nil {
				return nil, err
			}
			path = filepath.Join(tmpDir, "bus.db")
		} else if err := MustNotExist(path); err != nil {
			return nil, err
		}
		b, err := bolt.Open(path, &bolt.Options{Options: *sopts, ObserveCommit: metrics.ObserveCommit})
		if err != nil {
			os.RemoveAll(tmpDir)
			return nil, err
		}
		st, desc = b, "in-process bus, bolt store "+path
	default:
		st, desc = store.NewMemory(sopts), "in-process bus, memory store"
	}
	if opts.QueueCap > 0 {
		desc += fmt.Sprintf(", cap %d", opts.QueueCap)
	}
	if opts.QueueBytes > 0 || opts.TotalBytes > 0 {
		desc += fmt.Sprintf(", %d bytes per route, %d in all", route, total)
	}
	cleanup := func() error {
		err := st.Close()
		if tmpDir != "" {
			err = errors.Join(err, os.RemoveAll(tmpDir))
		}
		return err
	}

	srv := bus.New(st, &bus.Options{Logger: logger, Auth: opts.Auth, Verifier: opts.Verifier, Limits: opts.Limits})
	metrics.Limits(busmetrics.Limits{QueueCap: cmp.Or(opts.QueueCap, store.DefaultCap), QueueBytes: route, TotalBytes: total})
	// Served as interlink-bus serves it, metrics included.
	return serve(metrics.Handler(srv), desc, logger, opts.TLS, []*bus.Server{srv}, cleanup)
}

// serve serves h, the handler of buses, on a free 127.0.0.1 port as
// interlink-bus serves it ([bus.Serve]), over TLS when tlsConf is set. Stopping the target ends the
// buses' parked polls, shuts serving down, waiting for requests still
// running until its context ends, then calls cleanup. When serving cannot
// start, cleanup is called at once.
func serve(h http.Handler, desc string, logger *slog.Logger, tlsConf *tls.Config, buses []*bus.Server, cleanup func() error) (*Target, error) {
	ln, err := Listen()
	if err != nil {
		return nil, errors.Join(err, cleanup())
	}
	opts := &bus.Options{ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelDebug), TLS: tlsConf}
	serving := bus.Serve(ln, h, opts, buses...)
	stop := func(ctx context.Context) error {
		// Requests still running at the deadline have their connections
		// closed; the run that sent them has ended.
		_ = serving.Shutdown(ctx)
		return errors.Join(serving.Err(), cleanup())
	}
	return &Target{URL: serving.URL(), Desc: desc, Local: true, stop: stop}, nil
}

// Listen listens on a free port of 127.0.0.1.
func Listen() (net.Listener, error) {
	return net.Listen("tcp", "127.0.0.1:0")
}

// LoopbackServer returns the HTTP server of a floor, logging its errors to
// logger at debug level. It has the bus's header and idle timeouts, and
// none of its per-request deadlines and limits: a floor is what the
// machine manages, so that what the bus's own rules cost shows between
// the bus and its floor.
func LoopbackServer(h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: bus.HeaderTimeout,
		IdleTimeout:       bus.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
}

// MustNotExist refuses a path that already exists, so that a benchmark
// never writes into a database someone uses.
func MustNotExist(path string) error {
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
