// Package bustest serves a real in-memory bus on loopback for the tests of
// packages that talk to one, and provides a wall clock that moves only when
// told to.
package bustest

import (
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/reqsign"
	"github.com/interlink-go/interlink/internal/store"
)

// Epoch is where a new [Clock] starts: 1,700,000,000,000 ms after 1970.
var Epoch = time.UnixMilli(1_700_000_000_000)

// Clock is a wall clock with millisecond steps that moves only through
// [Clock.Advance]. It is safe for concurrent use.
type Clock struct{ ms atomic.Int64 }

// NewClock returns a clock set to [Epoch].
func NewClock() *Clock {
	c := &Clock{}
	c.ms.Store(Epoch.UnixMilli())
	return c
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time { return time.UnixMilli(c.ms.Load()) }

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// Options holds optional settings for [Start]; nil means defaults.
type Options struct {
	// Now is the bus's clock; nil means time.Now.
	Now func() time.Time
	// Wrap, when set, wraps the bus handler, for tests that watch or alter
	// requests.
	Wrap func(http.Handler) http.Handler
	// Store holds the in-memory store's settings, such as its byte
	// bounds; nil means defaults.
	Store *store.Options
	// HeaderTimeout, RequestTimeout and MaxConns are the bus's
	// connection rules ([bus.Options]); zero means the bus's defaults.
	HeaderTimeout  time.Duration
	RequestTimeout time.Duration
	MaxConns       int
	// Conns, if set, receives the counts of the bus's listener.
	Conns *bus.ConnStats
	// MaxValue, when above zero, is the longest value the store takes,
	// as a NATS store's server limits it with its max_payload: the bus
	// then takes /send bodies of up to [bus.BodyLimit] of it.
	MaxValue int64
	// Auth, Limits and TLS are the bus's request signature mode, its
	// per-client limits and its TLS configuration ([bus.Options]); with
	// TLS the URL [Start] returns is https://.
	Auth   bus.Auth
	Limits *bus.Limits
	TLS    *tls.Config
	// Verifier checks the request signatures; nil means reqsign's
	// defaults.
	Verifier *reqsign.Verifier
}

// limited is a store in memory that takes values of up to max bytes.
type limited struct {
	*store.Memory
	max int64
}

func (l limited) MaxValue() int64 { return l.max }

func (l limited) Enqueue(route string, value []byte) (string, int, error) {
	if int64(len(value)) > l.max {
		return "", 0, &store.BoundError{Err: store.ErrPayloadLimit, Bound: l.max, Size: int64(len(value))}
	}
	return l.Memory.Enqueue(route, value)
}

// Start serves a new in-memory bus on 127.0.0.1, as interlink-bus serves
// it (its listener and HTTP server settings), and returns its base URL.
// Cleanup ends parked long-polls first, then closes the server and every
// connection, waits for the handlers still running, and closes the store.
func Start(tb testing.TB, opts *Options) string {
	tb.Helper()
	var o Options
	if opts != nil {
		o = *opts
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	mem := store.NewMemory(o.Store)
	var st store.Store = mem
	if o.MaxValue > 0 {
		st = limited{Memory: mem, max: o.MaxValue}
	}
	bo := &bus.Options{
		Now:            o.Now,
		HeaderTimeout:  o.HeaderTimeout,
		RequestTimeout: o.RequestTimeout,
		MaxConns:       o.MaxConns,
		Conns:          o.Conns,
		Auth:           o.Auth,
		Limits:         o.Limits,
		TLS:            o.TLS,
		Verifier:       o.Verifier,
	}
	srv := bus.New(st, bo)
	var h http.Handler = srv
	if o.Wrap != nil {
		h = o.Wrap(srv)
	}
	// Handlers may outlive the server's Close; the store is closed only
	// after they are done, and none starts after that.
	var (
		mu       sync.Mutex
		closed   bool // guarded by mu
		handlers sync.WaitGroup
	)
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if closed {
			mu.Unlock()
			http.Error(w, "bus stopped", http.StatusServiceUnavailable)
			return
		}
		handlers.Add(1)
		mu.Unlock()
		defer handlers.Done()
		h.ServeHTTP(w, r)
	})
	hs := bus.NewHTTPServer(counted, bo)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = hs.Serve(bus.Listen(ln, bo))
	}()
	tb.Cleanup(func() {
		srv.Shutdown()
		_ = hs.Close()
		<-served
		mu.Lock()
		closed = true
		mu.Unlock()
		handlers.Wait()
		_ = st.Close()
	})
	if o.TLS != nil {
		return "https://" + ln.Addr().String()
	}
	return "http://" + ln.Addr().String()
}
