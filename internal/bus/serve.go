package bus

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
)

// Serving is buses served over HTTP on one listener, as [Serve] puts it
// together. Its methods are safe for concurrent use.
type Serving struct {
	hs     *http.Server
	buses  []*Server
	url    string
	fresh  freshConns
	served chan struct{} // closed when the HTTP server's Serve returned
	err    error         // what Serve returned, unless the server was closed; set before served is closed
}

// Serve serves h on ln as interlink-bus serves a bus, and returns at once.
// It is the one place where the parts of serving are put together: the
// HTTP server of [NewHTTPServer] with the timeouts of opts, the listener
// of [Listen] (the connection limit and the header screen), and shutdown
// hooks that end the parked long-polls of buses and close connections
// that have not started a request. h is a handler that serves buses,
// such as one of them with its metrics; opts are those the buses were
// made with.
//
// Stop serving with [Serving.Shutdown] or [Serving.Close]; until then
// [Serving.Done] tells when serving failed.
func Serve(ln net.Listener, h http.Handler, opts *Options, buses ...*Server) *Serving {
	s := &Serving{
		hs:     NewHTTPServer(h, opts),
		buses:  buses,
		url:    scheme(opts) + "://" + ln.Addr().String(),
		served: make(chan struct{}),
	}
	s.hs.ConnState = s.fresh.track
	for _, b := range buses {
		s.hs.RegisterOnShutdown(b.Shutdown)
	}
	// Shutdown closes the listener, and with it the connections still
	// screened for their first headers, and then waits for active
	// requests; the buses end their parked long-polls so that the wait
	// is short. Connections that have not sent a request yet would
	// otherwise count as active for five seconds.
	s.hs.RegisterOnShutdown(s.fresh.closeAll)
	wrapped := Listen(ln, opts)
	go func() {
		defer close(s.served)
		if err := s.hs.Serve(wrapped); !errors.Is(err, http.ErrServerClosed) {
			s.err = err
		}
	}()
	return s
}

// scheme is the URL scheme a bus served with opts answers on.
func scheme(opts *Options) string {
	if opts != nil && opts.TLS != nil {
		return "https"
	}
	return "http"
}

// URL is the base URL of the served bus: http:// (https:// with
// [Options.TLS]) and the listener's address, with the port the system
// picked if it was 0.
func (s *Serving) URL() string { return s.url }

// Done is closed when serving has stopped: after Shutdown or Close, or
// when the listener failed ([Serving.Err]).
func (s *Serving) Done() <-chan struct{} { return s.served }

// Err returns why serving stopped on its own, a failure of the listener,
// once [Serving.Done] is closed; nil when it was shut down or closed, or
// is still serving.
func (s *Serving) Err() error {
	select {
	case <-s.served:
		return s.err
	default:
		return nil
	}
}

// Shutdown stops serving gracefully: it stops taking connections, ends
// the buses' parked long-polls, and waits for the requests still running
// until ctx ends. Then it closes every connection left and returns ctx's
// error. It returns once serving has stopped.
func (s *Serving) Shutdown(ctx context.Context) error {
	err := s.hs.Shutdown(ctx)
	if err != nil {
		s.close()
	}
	<-s.served
	return err
}

// Close stops serving at once: it closes the listener and every
// connection, and ends the buses' parked long-polls. It returns once
// serving has stopped.
func (s *Serving) Close() {
	s.close()
	<-s.served
}

// close ends the buses' parked long-polls, which the HTTP server's Close
// does not, and closes the server and every connection.
func (s *Serving) close() {
	for _, b := range s.buses {
		b.Shutdown()
	}
	s.hs.Close()
}

// freshConns tracks the server's connections that have not started a
// request. [http.Server.Shutdown] closes idle connections at once but
// waits up to five seconds for new ones (a client may be about to use
// them), which would hold up every shutdown where a client had opened a
// spare connection; the bus is stopping, so such a client can retry.
// Where the bus screens new connections (package screen) the screen
// holds them until a request has arrived, so the server sees a new one
// only for a moment; on Windows it sees every one.
type freshConns struct {
	mu    sync.Mutex // guards conns
	conns map[net.Conn]struct{}
}

// track is an [http.Server.ConnState] hook.
func (f *freshConns) track(c net.Conn, state http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if state == http.StateNew {
		if f.conns == nil {
			f.conns = make(map[net.Conn]struct{})
		}
		f.conns[c] = struct{}{}
		return
	}
	delete(f.conns, c)
}

// closeAll closes every connection that has not started a request.
func (f *freshConns) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		c.Close()
	}
}
