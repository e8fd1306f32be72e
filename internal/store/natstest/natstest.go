// Package natstest runs a real NATS server with JetStream inside the test
// process, on 127.0.0.1 and a free port, with its store in a temporary
// directory, for the tests of packages that keep data in JetStream. The
// server's warnings and errors go to the test's log, which go test shows
// when the test fails.
package natstest

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// DefaultMaxPayload is the largest message the server accepts unless
// [Options] says otherwise: 8 MiB, above the bus's largest envelope. A
// server's own default is [StockMaxPayload].
const DefaultMaxPayload = 8 << 20

// StockMaxPayload is the max_payload of a nats-server started without
// settings: 1 MiB (the server's documentation writes 1MB).
const StockMaxPayload = server.MAX_PAYLOAD_SIZE

// readyTimeout bounds how long Start and Restart wait for the server to
// accept connections.
const readyTimeout = 10 * time.Second

// Options holds optional settings for [Start]; nil means defaults.
type Options struct {
	// NoJetStream starts a server without JetStream, for tests of what a
	// client does when it finds none.
	NoJetStream bool
	// MaxPayload is the server's max_payload in bytes; zero means
	// [DefaultMaxPayload].
	MaxPayload int32
	// User and Password, when set, make the server require them.
	User, Password string
}

// Server is a NATS server running in the test process. It is safe for
// concurrent use.
type Server struct {
	tb  testing.TB
	log *testLog // the server's warnings and errors go to the test's log
	// opts is the server configuration, fixed after the first start,
	// which pins the port so a restart comes back where clients reconnect.
	opts server.Options

	mu  sync.Mutex
	srv *server.Server // guarded by mu; nil while shut down
}

// Start runs a new server and stops it when the test ends. Its JetStream
// store is a directory of tb.TempDir(), kept across [Server.Restart].
func Start(tb testing.TB, opts *Options) *Server {
	tb.Helper()
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxPayload == 0 {
		o.MaxPayload = DefaultMaxPayload
	}
	s := &Server{tb: tb, log: newTestLog(tb, "natstest"), opts: server.Options{
		ServerName: "natstest",
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		NoLog:      true,
		NoSigs:     true,
		MaxPayload: o.MaxPayload,
		JetStream:  !o.NoJetStream,
		StoreDir:   tb.TempDir(),
		Username:   o.User,
		Password:   o.Password,
	}}
	s.start()
	tb.Cleanup(s.Shutdown)
	return s
}

func (s *Server) start() {
	s.tb.Helper()
	if err := s.tryStart(); err != nil {
		s.tb.Fatalf("natstest: %v", err)
	}
}

// tryStart starts the server and reports why it could not.
func (s *Server) tryStart() error {
	opts := s.opts // the server writes defaults into its copy
	srv, err := server.NewServer(&opts)
	if err != nil {
		return err
	}
	srv.SetLoggerV2(s.log, false, false, false)
	srv.Start()
	if !srv.ReadyForConnections(readyTimeout) {
		srv.Shutdown()
		return fmt.Errorf("server not ready on %s within %v (port taken?)", s.URL(), readyTimeout)
	}
	addr, ok := srv.Addr().(*net.TCPAddr)
	if !ok {
		srv.Shutdown()
		return fmt.Errorf("server listens on %v, not TCP", srv.Addr())
	}
	if s.opts.Port == server.RANDOM_PORT {
		s.opts.Port = addr.Port // before Start returns; fixed after
	}

	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	return nil
}

// URL returns the client URL, nats://127.0.0.1:PORT, without credentials.
// It stays the same across restarts.
func (s *Server) URL() string {
	return "nats://" + net.JoinHostPort(s.opts.Host, strconv.Itoa(s.opts.Port))
}

// UserURL returns the client URL with user and password in it.
func (s *Server) UserURL(user, password string) string {
	return fmt.Sprintf("nats://%s:%s@%s", user, password, net.JoinHostPort(s.opts.Host, strconv.Itoa(s.opts.Port)))
}

// Name returns the server's name, as JetStream names the servers of a
// cluster (stream leaders, for one).
func (s *Server) Name() string { return s.opts.ServerName }

// StoreDir returns the directory that holds the JetStream store.
func (s *Server) StoreDir() string { return s.opts.StoreDir }

// Shutdown stops the server and waits until it has stopped. Clients see
// their connection drop. Calling it on a stopped server does nothing.
func (s *Server) Shutdown() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv == nil {
		return
	}
	srv.Shutdown()
	srv.WaitForShutdown()
}

// Restart stops the server if it runs and starts it again on the same
// port with the same store, as a restarted nats-server process would be.
// It fails the test if the server is not ready within ten seconds, which
// is what happens if something else took the port in between.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Shutdown()
	s.start()
}
