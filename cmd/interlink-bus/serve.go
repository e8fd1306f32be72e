package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/busmetrics"
	"github.com/interlink-go/interlink/internal/cmdline"
	"github.com/interlink-go/interlink/internal/connlimit"
	"github.com/interlink-go/interlink/internal/reqsign"
	"github.com/interlink-go/interlink/internal/roster"
	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/store/bolt"
	"github.com/interlink-go/interlink/internal/tlsfiles"
	"github.com/interlink-go/interlink/internal/version"
)

// shutdownTimeout bounds the graceful part of a shutdown; connections
// still open after it are closed.
const shutdownTimeout = 5 * time.Second

// Defaults of the serve options.
const (
	defaultAddr     = "127.0.0.1:9440"
	defaultQueueCap = "1024"
	defaultLogLevel = "info"
	defaultAckDelay = "100ms"
	defaultAuth     = "optional"
	// maxAckDelay bounds --ack-delay: longer would only widen what a crash
	// can undo.
	maxAckDelay = time.Minute
)

// serveConfig is the validated command line of the bus.
type serveConfig struct {
	addr     netip.AddrPort
	db       string // empty: in memory, or NATS
	nats     natsConfig
	queueCap int           // at least 1
	ackDelay time.Duration // 0 or more; 0 commits acknowledgements at once
	logLevel slog.Level
	// The byte bounds of the queues: per route (0 with NATS, which has
	// none) and in all; see byteBounds.
	queueBytes, totalBytes int64
	// tlsCert and tlsKey name the certificate files; both empty for
	// plain HTTP.
	tlsCert, tlsKey string
	auth            bus.Auth
	// authorities and prefixes are those of a reverse proxy in front
	// (reqsign.Options).
	authorities, prefixes []string
}

// serve runs the bus until ctx ends, then shuts it down and returns 0.
func (c *cli) serve(ctx context.Context, args []string) int {
	cfg, code, ok := c.serveConfig(args)
	if !ok {
		return code
	}
	log := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: cfg.logLevel}))

	// 0.0.0.0 and :: count as exposed: they listen on every interface.
	if !cfg.addr.Addr().Unmap().IsLoopback() {
		switch {
		case cfg.auth != bus.AuthRequired:
			log.Warn("not bound to loopback: any host that can reach this port can read, acknowledge and flood queues",
				"addr", cfg.addr.String(), "auth", cfg.auth.String(), "hint", "--auth required lets only a route's key read it")
		case cfg.tlsCert == "":
			log.Warn("not bound to loopback and without TLS: anyone on the way can read the messages and the roster",
				"addr", cfg.addr.String())
		}
	}
	var certs *tlsfiles.Source
	if cfg.tlsCert != "" {
		var err error
		if certs, err = tlsfiles.Load(cfg.tlsCert, cfg.tlsKey, &tlsfiles.Options{Logger: log}); err != nil {
			msg := err.Error()
			if pe, ok := errors.AsType[*tlsfiles.PairError](err); ok {
				msg = pe.Reason()
			}
			return c.fail(exitError, msg, "give a PEM certificate chain with --tls-cert and its private key with --tls-key")
		}
	}
	verifier, verr := reqsign.New(&reqsign.Options{Authorities: cfg.authorities, PathPrefixes: cfg.prefixes})
	if verr != nil {
		msg := verr.Error()
		if oe, ok := errors.AsType[*reqsign.OptionsError](verr); ok {
			msg = oe.Reason()
		}
		return c.fail(exitUsage, msg, helpHint)
	}

	// The metrics exist before the store, which reports its commit times
	// to them, and before the bus, whose handler they wrap.
	metrics := busmetrics.New()
	st, rosterLog, code, ok := c.openStore(&cfg, log, metrics.ObserveCommit)
	if !ok {
		return code
	}
	metrics.Limits(busmetrics.Limits{QueueCap: cfg.queueCap, QueueBytes: cfg.queueBytes, TotalBytes: cfg.totalBytes})
	ln, err := net.Listen("tcp", cfg.addr.String())
	if err != nil {
		st.Close()
		// A *net.OpError repeats the address; its inner error says why.
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Err != nil {
			err = oe.Err
		}
		return c.fail(exitError, fmt.Sprintf("listen on %s: %v", cfg.addr, err))
	}
	files, maxConns, known := connlimit.FileCapacity()
	if known {
		log.Info("connection limit", "max", maxConns, "open_file_limit", files)
	} else {
		log.Info("connection limit", "max", maxConns, "open_file_limit", "unknown")
	}
	conns := new(bus.ConnStats)
	opts := &bus.Options{Logger: log, Version: version.String(), RosterLog: rosterLog, MaxConns: maxConns, Conns: conns,
		Auth: cfg.auth, Verifier: verifier}
	if certs != nil {
		opts.TLS = certs.ServerConfig()
	}
	srv := bus.New(st, opts)

	// The real address: with port 0 the system picked one.
	listening := []any{"addr", ln.Addr().String(), "cap", cfg.queueCap}
	if cfg.queueBytes > 0 {
		listening = append(listening, "queue_bytes", cfg.queueBytes)
	}
	log.Info("bus listening", append(listening, "total_bytes", cfg.totalBytes, "max_body", srv.MaxBody())...)
	access := []any{"auth", cfg.auth.String(), "tls", certs != nil}
	if certs != nil {
		access = append(access, "tls_cert", cfg.tlsCert)
	}
	log.Info("access rules", access...)

	metrics.Conns(conns)
	serving := bus.Serve(ln, metrics.Handler(srv), opts, srv)

	// A database found damaged while serving stops the bus: every send and
	// poll would fail from then on, and the file needs its operator.
	var damaged <-chan struct{}
	failer, canFail := st.(store.Failer)
	if canFail {
		damaged = failer.Failed()
	}
	select {
	case <-serving.Done():
		// Serving stops on its own only on a listener failure.
		serving.Close()
		st.Close()
		return c.fail(exitError, fmt.Sprintf("serving: %v", serving.Err()))
	case <-damaged:
		// The store is not closed: it no longer touches the file, and
		// the lock goes with the process.
		serving.Close()
		return c.fail(exitError, damagedLine(failer.Err(), true))
	case <-ctx.Done():
	}

	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := serving.Shutdown(sctx); err != nil {
		log.Warn("requests still running at the shutdown deadline; closing their connections", "err", err)
	}
	if err := st.Close(); err != nil {
		return c.fail(exitError, fmt.Sprintf("closing the queue store: %v", err))
	}
	log.Info("bus stopped")
	return exitOK
}

// openStore opens the store cfg asks for and logs which kind it is; the
// bbolt store reports its commit times to observeCommit. With NATS it also
// opens the roster's bucket, which rosterLog then is; otherwise rosterLog is nil.
// When ok is false the problem has been reported and code is the status to
// exit with. A stream with a lower max_bytes than cfg's total keeps it
// (see natsstore.Open), and openStore sets cfg's total to it.
func (c *cli) openStore(cfg *serveConfig, log *slog.Logger, observeCommit func(time.Duration)) (st store.Store, rosterLog roster.Log, code int, ok bool) {
	opts := &store.Options{Cap: cfg.queueCap, Logger: log}
	opts.RouteBytes, opts.TotalBytes = cfg.queueBytes, cfg.totalBytes
	if cfg.nats.url != "" {
		n, rl, code, ok := c.openNATS(cfg.nats, opts, log)
		if !ok {
			return nil, nil, code, false
		}
		cfg.totalBytes = n.TotalBytes()
		return n, rl, exitOK, true
	}
	if cfg.db == "" {
		log.Warn("in-memory queue, lost on restart")
		return store.NewMemory(opts), nil, exitOK, true
	}
	bopts := &bolt.Options{Options: *opts, AckDelay: cfg.ackDelay, ObserveCommit: observeCommit}
	if cfg.ackDelay == 0 {
		bopts.AckDelay = -1 // the store's word for "at once"
	}
	b, err := bolt.Open(cfg.db, bopts)
	switch {
	case err == nil:
		log.Info("durable queue", "db", cfg.db)
		return b, nil, exitOK, true
	case errors.Is(err, bolt.ErrCorrupt):
		return nil, nil, c.fail(exitError, damagedLine(err, false)), false
	case errors.Is(err, bolt.ErrLocked):
		return nil, nil, c.fail(exitError, fmt.Sprintf("database %s is in use by another process", cfg.db),
			"is another interlink-bus using it? stop that one, or give this one its own --db file"), false
	case errors.Is(err, fs.ErrNotExist):
		dir := filepath.Dir(cfg.db)
		return nil, nil, c.fail(exitError, fmt.Sprintf("cannot open database %s: folder %s does not exist", cfg.db, dir),
			"create the folder first; the bus creates only the file"), false
	default:
		return nil, nil, c.fail(exitError, fmt.Sprintf("cannot open database %s: %v", cfg.db, err)), false
	}
}

// serveConfig parses args. When ok is false the problem (or the help text)
// has been written and code is the status to exit with.
func (c *cli) serveConfig(args []string) (cfg serveConfig, code int, ok bool) {
	fset := flag.NewFlagSet(progName, flag.ContinueOnError)
	// The flag package would print its own unprefixed messages and a
	// generated usage; errors are reported below in the program's format.
	fset.SetOutput(io.Discard)
	fset.Usage = func() {}
	var addr, db, queueCap, ackDelay, logLevel string
	var queueBytes, totalBytes string
	var tlsCert, tlsKey, auth, authorities, prefixes string
	var nf natsFlags
	fset.StringVar(&addr, "addr", "", "")
	fset.StringVar(&db, "db", "", "")
	nf.register(fset)
	fset.StringVar(&queueCap, "queue-cap", "", "")
	fset.StringVar(&queueBytes, "queue-bytes", "", "")
	fset.StringVar(&totalBytes, "total-bytes", "", "")
	fset.StringVar(&ackDelay, "ack-delay", "", "")
	fset.StringVar(&logLevel, "log-level", "", "")
	fset.StringVar(&tlsCert, "tls-cert", "", "")
	fset.StringVar(&tlsKey, "tls-key", "", "")
	fset.StringVar(&auth, "auth", "", "")
	fset.StringVar(&authorities, "authority", "", "")
	fset.StringVar(&prefixes, "path-prefix", "", "")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(c.stdout, usage)
			return cfg, exitOK, false
		}
		return cfg, c.fail(exitUsage, err.Error(), helpHint), false
	}
	if fset.NArg() > 0 {
		return cfg, c.fail(exitUsage, fmt.Sprintf("unexpected argument %q", fset.Arg(0)), helpHint), false
	}

	value, source := c.setting(addr, "--addr", "INTERLINK_ADDR", defaultAddr)
	ap, err := parseAddr(value)
	if err != nil {
		return cfg, c.fail(exitUsage, fmt.Sprintf("%s %q: %v", source, value, err),
			"give an IP address and port such as 127.0.0.1:9440 or [::1]:9440; host names are not looked up"), false
	}
	cfg.addr = ap

	var dbSource string
	cfg.db, dbSource = c.setting(db, "--db", "INTERLINK_DB", "")
	if cfg.nats, code, ok = c.natsSettings(nf, cfg.db, dbSource); !ok {
		return cfg, code, false
	}

	value, source = c.setting(queueCap, "--queue-cap", "INTERLINK_QUEUE_CAP", defaultQueueCap)
	if cfg.queueCap, err = parseQueueCap(value); err != nil {
		return cfg, c.fail(exitUsage, fmt.Sprintf("%s %q: %v", source, value, err), helpHint), false
	}
	if cfg.queueBytes, cfg.totalBytes, code, ok = c.byteBounds(queueBytes, totalBytes, cfg.nats.url != ""); !ok {
		return cfg, code, false
	}

	value, source = c.setting(ackDelay, "--ack-delay", "INTERLINK_ACK_DELAY", defaultAckDelay)
	if cfg.ackDelay, err = parseAckDelay(value); err != nil {
		return cfg, c.fail(exitUsage, fmt.Sprintf("%s %q: %v", source, value, err), helpHint), false
	}

	value, source = c.setting(logLevel, "--log-level", "INTERLINK_LOG_LEVEL", defaultLogLevel)
	if cfg.logLevel, err = cmdline.ParseLogLevel(value); err != nil {
		return cfg, c.fail(exitUsage, fmt.Sprintf("%s %q: %v", source, value, err), helpHint), false
	}

	var certSource, keySource string
	cfg.tlsCert, certSource = c.setting(tlsCert, "--tls-cert", "INTERLINK_TLS_CERT", "")
	cfg.tlsKey, keySource = c.setting(tlsKey, "--tls-key", "INTERLINK_TLS_KEY", "")
	switch {
	case cfg.tlsCert != "" && cfg.tlsKey == "":
		return cfg, c.fail(exitUsage, certSource+" without --tls-key", "give the certificate's private key with --tls-key"), false
	case cfg.tlsCert == "" && cfg.tlsKey != "":
		return cfg, c.fail(exitUsage, keySource+" without --tls-cert", "give the certificate chain with --tls-cert"), false
	}

	value, source = c.setting(auth, "--auth", "INTERLINK_AUTH", defaultAuth)
	if cfg.auth, err = bus.ParseAuth(value); err != nil {
		return cfg, c.fail(exitUsage, fmt.Sprintf("%s %q: %v", source, value, err), helpHint), false
	}
	value, _ = c.setting(authorities, "--authority", "INTERLINK_AUTHORITY", "")
	cfg.authorities = splitList(value)
	value, _ = c.setting(prefixes, "--path-prefix", "INTERLINK_PATH_PREFIX", "")
	cfg.prefixes = splitList(value)
	return cfg, exitOK, true
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// parseAddr parses an IP-literal socket address. Host names are refused on
// purpose: resolving one could bind an interface the operator did not
// intend, and the bus must never be exposed by accident.
func parseAddr(s string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		host, _, serr := net.SplitHostPort(s)
		if serr == nil && host != "" {
			if _, perr := netip.ParseAddr(strings.Trim(host, "[]")); perr != nil {
				return ap, fmt.Errorf("%q is not an IP address", host)
			}
		}
		return ap, errors.New("want IP:PORT")
	}
	return ap, nil
}

// parseQueueCap parses an unsigned decimal queue cap; 0 means 1.
func parseQueueCap(s string) (int, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, errors.New("want a whole number of messages, 0 or more")
	}
	if n > math.MaxInt32 {
		return 0, fmt.Errorf("at most %d", math.MaxInt32)
	}
	return max(int(n), 1), nil
}

// parseAckDelay parses a duration from 0 to maxAckDelay.
func parseAckDelay(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > maxAckDelay {
		return 0, fmt.Errorf("want a duration from 0s to %v, such as 100ms", maxAckDelay)
	}
	return d, nil
}

// damagedLine is the one line that reports a damaged database file: which
// file, what is wrong, and what to do. serving says whether the bus found
// it while serving rather than at start.
func damagedLine(err error, serving bool) string {
	path, detail := "", err.Error()
	if ce, ok := errors.AsType[*bolt.CorruptError](err); ok {
		path, detail = ce.Path, ce.Detail
	}
	found := "is damaged"
	if serving {
		found = "was found damaged while serving"
	}
	return fmt.Sprintf("database %s %s: %s; move the file aside and start the bus again for a new, empty "+
		"database there (its queued messages are lost), or put back a copy you trust", path, found, detail)
}
