// Package screen holds new connections of a listener until their first
// request's headers have arrived whole and within a bound, so that a
// client that opens connections and stalls in its headers costs an HTTP
// server next to nothing. It knows nothing of what the server serves.
package screen

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// screenBuffer is the first size of the buffer a new connection's headers
// are looked at in; it doubles as they arrive, up to the bound.
const screenBuffer = 512

// errHeadersTooLarge says that a request's headers did not end within the
// bound.
var errHeadersTooLarge = errors.New("request headers too large")

// errTLSHandshake says that a connection opened with a TLS handshake:
// a client that took a plain HTTP port for a TLS one.
var errTLSHandshake = errors.New("a TLS handshake on a plain HTTP port")

// tlsHandshake is the first byte of a TLS connection, the type of its
// first record. No HTTP request starts with it.
const tlsHandshake = 0x16

// tlsAnswer is what a connection that opens with a TLS handshake gets
// before it is closed: a plain HTTP answer, which the client's TLS layer
// reports as a server that speaks HTTP rather than TLS, at once instead
// of at the header deadline.
const tlsAnswer = "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n" +
	"this port speaks plain HTTP, not TLS; use an http:// address"

// TooLargeBody is the body of net/http's own answer to headers over its
// limit, 431; the screen answers headers over its bound with it too.
const TooLargeBody = "431 Request Header Fields Too Large"

// tooLargeAnswer is what a connection whose first headers are over the
// bound gets before it is closed: the HTTP server's own answer to headers
// over its limit, so that a client sees the same whichever of the two
// refused it.
const tooLargeAnswer = "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\n" +
	"Connection: close\r\n\r\n" + TooLargeBody

// Listen wraps ln so that a new connection reaches the HTTP server
// only once its first request's headers have arrived whole. Until then the
// connection waits on a goroutine of its own, which looks at what has
// arrived without taking it from the socket, and it is closed if the
// headers are not complete within timeout. The HTTP server gives every
// connection a 4 KiB read buffer, a 4 KiB write buffer and a goroutine
// whose stack grows to 8 KiB while it parses headers, so a client that
// opens connections and stalls in their headers would otherwise cost the
// bus about 16 KiB each; screened, such a connection costs a few KiB.
// The server receives the connection untouched and reads the whole
// request itself; later requests on a kept connection are left to it and
// its own header timeout.
//
// Headers that do not end within maxBytes get 431 and the connection is
// closed, as the HTTP server answers them (set its own limit to agree). So
// a connection reaches the server
// only with its first headers whole and within the bound, which the
// server then reads at once: its header deadline, which starts afresh,
// has nothing left to wait for.
//
// Closing the returned listener also closes the connections it still
// screens, so a shutdown need not wait for clients that never finish
// their headers.
//
// When stats is not nil, the screen counts what it does there.
//
// Where the socket cannot be looked at without reading it (on Windows),
// Listen returns ln as it is ([Enabled] is false).
func Listen(ln net.Listener, timeout time.Duration, maxBytes int, stats *Stats) net.Listener {
	if !canPeek {
		return ln
	}
	if stats == nil {
		stats = new(Stats)
	}
	s := &screen{
		Listener: ln,
		timeout:  timeout,
		maxBytes: maxBytes,
		stats:    stats,
		ready:    make(chan net.Conn),
		errs:     make(chan error),
		done:     make(chan struct{}),
		waiting:  make(map[net.Conn]struct{}),
	}
	go s.acceptLoop()
	return s
}

// Enabled reports whether [Listen] screens connections on this system.
const Enabled = canPeek

// Stats counts what a screen ([Listen]) does. The zero value is ready to
// use; it is safe for concurrent use.
type Stats struct {
	waiting atomic.Int64
	dropped atomic.Uint64
}

// Waiting returns how many new connections are open and waiting for their
// first request's headers to be complete. During a flood of connections
// that send nothing, or next to nothing, this is where they are.
func (st *Stats) Waiting() int64 { return st.waiting.Load() }

// Dropped returns how many new connections were closed before their first
// request's headers were complete: at the header deadline, when the client
// hung up or the connection failed, when the headers went over the bound
// (the client got 431), or when the listener closed.
func (st *Stats) Dropped() uint64 { return st.dropped.Load() }

// screen is the listener Listen returns.
type screen struct {
	net.Listener
	timeout  time.Duration
	maxBytes int
	stats    *Stats
	ready    chan net.Conn // connections whose headers are in
	errs     chan error    // errors from the wrapped listener's Accept
	done     chan struct{} // closed by Close

	closeOnce sync.Once
	mu        sync.Mutex // guards waiting
	waiting   map[net.Conn]struct{}
}

// acceptLoop accepts connections from the wrapped listener and screens
// each on a goroutine of its own. An accept error is passed on to the
// HTTP server, which backs off on one it considers temporary and stops
// serving on any other; either way the loop waits until the server asks
// again, so a failing listener cannot make it spin.
func (s *screen) acceptLoop() {
	for {
		c, err := s.Listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case s.errs <- err:
				continue
			case <-s.done:
				return
			}
		}
		// Set before c is held, so that a Close from now on ends the wait.
		c.SetReadDeadline(time.Now().Add(s.timeout))
		if !s.hold(c) {
			c.Close()
			return
		}
		go s.read(c)
	}
}

// hold records c as being screened, unless the listener is closed.
func (s *screen) hold(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Close closes done before it takes the lock, so a connection held
	// here is either seen by Close or refused.
	select {
	case <-s.done:
		return false
	default:
	}
	s.waiting[c] = struct{}{}
	s.stats.waiting.Add(1)
	return true
}

// release forgets c as being screened.
func (s *screen) release(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.waiting, c)
	s.stats.waiting.Add(-1)
}

// read waits until c's first request's headers are in, then hands c to
// Accept. A connection that ends, fails or times out before that is
// closed without an answer, as the HTTP server closes one that times out
// in its headers. (The server would answer 400 to a client that ends its
// side in the middle of its headers; such a client gets no answer.) One
// whose headers are too large gets 431 first, and one that opens with a
// TLS handshake a plain 400 that its client's TLS layer recognises.
func (s *screen) read(c net.Conn) {
	err := awaitHeaders(c, s.maxBytes)
	// No longer awaiting headers either way: released before the hand-over,
	// so that a request the server answers on c never finds it counted.
	s.release(c)
	answer := ""
	switch {
	case errors.Is(err, errHeadersTooLarge):
		answer = tooLargeAnswer
	case errors.Is(err, errTLSHandshake):
		answer = tlsAnswer
	}
	if answer != "" {
		// The socket's send buffer is empty, so the write does not
		// wait; the deadline is only a guard.
		c.SetWriteDeadline(time.Now().Add(s.timeout))
		_, _ = io.WriteString(c, answer)
	}
	if err != nil {
		// Closing a socket with unread bytes makes the kernel reset the
		// connection, which can lose the answer; taken, they let the
		// close end it as the HTTP server would, with the client
		// reading an end of stream.
		drain(c)
		s.drop(c)
		return
	}
	// The HTTP server sets its own deadlines from here on.
	c.SetReadDeadline(time.Time{})
	select {
	case s.ready <- c:
	case <-s.done:
		s.drop(c)
	}
}

// drop closes c, whose first headers never reached the HTTP server.
func (s *screen) drop(c net.Conn) {
	c.Close()
	s.stats.dropped.Add(1)
}

// headersEnd reports whether b holds the empty line that ends a request's
// headers. Lines may end in CRLF or, as the HTTP server also accepts, in
// a bare LF.
func headersEnd(b []byte) bool {
	return bytes.Contains(b, []byte("\n\n")) || bytes.Contains(b, []byte("\n\r\n"))
}

// Accept returns the next connection whose first headers are in.
func (s *screen) Accept() (net.Conn, error) {
	select {
	case c := <-s.ready:
		return c, nil
	case err := <-s.errs:
		return nil, err
	case <-s.done:
		return nil, net.ErrClosed
	}
}

// Close closes the wrapped listener and ends the wait of every connection
// still being screened, which is then closed.
func (s *screen) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.done)
		err = s.Listener.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		// A deadline already past ends each wait; its goroutine then
		// closes the connection as it would at the header deadline.
		for c := range s.waiting {
			c.SetReadDeadline(time.Unix(1, 0))
		}
	})
	return err
}
