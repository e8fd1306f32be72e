package bus

import (
	"crypto/tls"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/interlink-go/interlink/internal/connlimit"
	"github.com/interlink-go/interlink/internal/screen"
)

// Connection rules of the bus: how long a request and its answer may take,
// how large its headers may be, and how many connections are open at once.
// [NewHTTPServer] and [Listen] apply them, and every bus is served through
// both; the bound on header lines is the handlers' own
// ([RefuseManyHeaderFields]).
//
// Deadlines bound every request, whatever its route, its status, or what
// its handler reads, because they are set on the connection by the HTTP
// server itself: a request must have arrived whole, headers and body, by
// its deadline, and whatever body its handler leaves unread is read and
// dropped by the server (up to 256 KiB, beyond which it closes the
// connection) under that same deadline. So a request whose body never
// comes, to a route that never reads one (an unknown path, a wrong
// method, GET with a Content-Length), is answered and its connection
// closed once the deadline passes, instead of being held forever. The
// answer has [AnswerTimeout] more to be written, so that even a request
// cut off at its deadline gets its answer, and a client that does not read
// its answer cannot hold the connection either. A long-poll moves both
// deadlines back by the time it may wait ([Server.recv]).
const (
	// HeaderTimeout is how long a request's headers may take to arrive
	// once its connection is open, or once the previous request on it
	// has been answered.
	HeaderTimeout = 10 * time.Second
	// IdleTimeout is how long a kept connection may wait for its next
	// request. Agents give up their own idle connections sooner.
	IdleTimeout = 120 * time.Second
	// DefaultRequestTimeout is how long a request may take to arrive
	// whole, headers and body, counted from its first byte (for the first
	// request of a connection, from when its headers have passed the
	// screen, [screen.Listen]). A client that is not done by then gets
	// 408, or, if the handler did not read the body, the handler's answer,
	// and its connection is closed.
	DefaultRequestTimeout = 30 * time.Second
	// AnswerTimeout is how long an answer may take to be written, beyond
	// the request's deadline.
	AnswerTimeout = 10 * time.Second
	// MaxHeaderBytes bounds a request's headers: its request line, its
	// header lines and the empty line that ends them. Larger headers get
	// 431 and the connection is closed. Real requests, an agent's or a
	// browser's, send well under 2 KiB.
	MaxHeaderBytes = 8 << 10
	// MaxHeaderFields bounds the header lines of a request; more get 431
	// and the connection is closed, before the request is routed
	// ([RefuseManyHeaderFields]). Go's HTTP server sizes its header map
	// for the lines it sees coming, up to a thousand, so that 8 KiB of
	// short lines would cost about 100 KiB for as long as the request is
	// held. Agents send about five lines, browsers about fifteen.
	MaxHeaderFields = 64
)

// httpHeaderSlack is what Go's HTTP server reads for a request's headers
// beyond its MaxHeaderBytes setting: it allows for its 4 KiB read buffer.
// Setting MaxHeaderBytes less this slack makes it refuse what the screen
// refuses, headers over [MaxHeaderBytes]. (On a kept connection it may
// already hold up to one buffer of the next request when it starts
// counting, so a later request's headers may exceed the bound by up to
// 4 KiB before they are refused.)
const httpHeaderSlack = 4096

// NewHTTPServer returns an HTTP server that serves h by the bus's
// connection rules, with the timeouts of opts (those [New] was given for
// the bus that h serves). Its errors go to [Options.ErrorLog]. It is a
// part of [Serve], which puts the whole of serving together; use that.
func NewHTTPServer(h http.Handler, opts *Options) *http.Server {
	request := opts.requestTimeout()
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: opts.headerTimeout(),
		ReadTimeout:       request,
		WriteTimeout:      request + AnswerTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes - httpHeaderSlack,
		ErrorLog:          opts.errorLog(),
	}
}

// RefuseManyHeaderFields answers 431 to a request with more than
// [MaxHeaderFields] header lines, and closes its connection, so that what
// its headers cost is let go at once rather than held while the request
// lasts; it reports whether it did. The answer is the one the HTTP server
// and the screen give to headers over [MaxHeaderBytes]. Every handler that
// serves requests from the network calls it first: the bus's, and the
// metrics' in front of it for its own path.
//
// It is not a handler wrapping the others: a wrapper's frame would stay
// on the stack of every request, and one more frame under a handler
// waiting for a body doubles that goroutine's stack, 4 KiB more for each
// connection stalled there.
func RefuseManyHeaderFields(w http.ResponseWriter, r *http.Request) bool {
	n := 0
	for _, vv := range r.Header {
		n += len(vv)
	}
	if n <= MaxHeaderFields {
		return false
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/plain; charset=utf-8")
	hd.Set("Content-Length", strconv.Itoa(len(screen.TooLargeBody)))
	hd.Set("Connection", "close")
	w.WriteHeader(http.StatusRequestHeaderFieldsTooLarge)
	_, _ = io.WriteString(w, screen.TooLargeBody)
	return true
}

// Listen wraps ln as the bus takes connections: at most [Options.MaxConns]
// open at once, shared fairly among clients when they are all taken
// (package connlimit), and each new connection screened until its first
// request's headers are whole, within [MaxHeaderBytes] (package screen).
// With [Options.TLS] it serves TLS instead of screening ([tlsConfig]).
// The counts go to
// [Options.Conns] when it is set.
func Listen(ln net.Listener, opts *Options) net.Listener {
	stats := new(ConnStats)
	capacity := 0
	if opts != nil {
		if opts.Conns != nil {
			stats = opts.Conns
		}
		capacity = opts.MaxConns
	}
	if capacity <= 0 {
		_, capacity, _ = connlimit.FileCapacity()
	}
	limited := connlimit.Listen(ln, capacity, &stats.limit)
	if opts != nil && opts.TLS != nil {
		return tls.NewListener(limited, tlsConfig(opts.TLS))
	}
	return screen.Listen(limited, opts.headerTimeout(), MaxHeaderBytes, &stats.screen)
}

// tlsConfig returns cfg for serving the bus: a copy that offers HTTP/1.1
// alone, since the bus's deadlines and long-polls are those of HTTP/1.1
// connections.
//
// A TLS connection is not screened (package screen): its headers arrive
// encrypted, so the screen could not tell where they end. Go's HTTP server
// then bounds them alone, with the same limits: the handshake and the
// headers must be done within the header timeout (it takes the shortest
// of its timeouts for the handshake), and headers over [MaxHeaderBytes]
// get 431. What a client stalled in its handshake or its headers costs
// is the server's own state for that connection, some 16 KiB plus the
// TLS state, until that timeout closes it.
func tlsConfig(cfg *tls.Config) *tls.Config {
	c := cfg.Clone()
	c.NextProtos = []string{"http/1.1"}
	if c.MinVersion < tls.VersionTLS12 {
		c.MinVersion = tls.VersionTLS12
	}
	return c
}

// ConnStats counts what a listener from [Listen] does with connections.
// The zero value is ready to use; it is safe for concurrent use.
type ConnStats struct {
	screen screen.Stats
	limit  connlimit.Stats
}

// Screen returns the counts of the header screen.
func (st *ConnStats) Screen() *screen.Stats { return &st.screen }

// Limit returns the counts of the connection limit: how many connections
// are open, the most that may be, and how many were shed or refused.
func (st *ConnStats) Limit() *connlimit.Stats { return &st.limit }

// allowWait moves the deadlines of the request w answers back by wait
// (and the request's own timeout),
// for a handler that legitimately holds its answer that long (a
// long-poll). Without it the server would end the request when its read
// deadline passes: Go's HTTP server, which reads ahead to notice a client
// that hangs up, takes the deadline for one and cancels the request.
func allowWait(w http.ResponseWriter, wait, requestTimeout time.Duration) {
	if wait <= 0 {
		return
	}
	// A writer that is not a connection (a test recorder) has no
	// deadlines to move.
	rc := http.NewResponseController(w)
	end := time.Now().Add(wait + requestTimeout)
	_ = rc.SetReadDeadline(end)
	_ = rc.SetWriteDeadline(end.Add(AnswerTimeout))
}

// headerTimeout is [Options.HeaderTimeout] or its default.
func (o *Options) headerTimeout() time.Duration {
	if o == nil || o.HeaderTimeout <= 0 {
		return HeaderTimeout
	}
	return o.HeaderTimeout
}

// requestTimeout is [Options.RequestTimeout] or its default.
func (o *Options) requestTimeout() time.Duration {
	if o == nil || o.RequestTimeout <= 0 {
		return DefaultRequestTimeout
	}
	return o.RequestTimeout
}

// errorLog is [Options.ErrorLog], or the logger's warnings.
func (o *Options) errorLog() *log.Logger {
	if o != nil && o.ErrorLog != nil {
		return o.ErrorLog
	}
	return slog.NewLogLogger(o.logger().Handler(), slog.LevelWarn)
}

// logger is [Options.Logger], or one that discards.
func (o *Options) logger() *slog.Logger {
	if o == nil || o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}
