// Package bustest serves a real in-memory bus on loopback for the tests of
// packages that talk to one, and provides a wall clock that moves only when
// told to.
package bustest

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/bus"
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
}

// Start serves a new in-memory bus on 127.0.0.1 and returns its base URL.
// Cleanup ends parked long-polls first, then closes the server and the
// store.
func Start(tb testing.TB, opts *Options) string {
	tb.Helper()
	var o Options
	if opts != nil {
		o = *opts
	}
	st := store.NewMemory(o.Store)
	srv := bus.New(st, &bus.Options{Now: o.Now})
	var h http.Handler = srv
	if o.Wrap != nil {
		h = o.Wrap(srv)
	}
	ts := httptest.NewServer(h)
	tb.Cleanup(func() { _ = st.Close() })
	tb.Cleanup(ts.Close)
	tb.Cleanup(srv.Shutdown) // runs first
	return ts.URL
}
