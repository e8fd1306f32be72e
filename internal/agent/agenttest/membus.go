package agenttest

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/store"
)

// In-memory buses are real buses with an in-memory store, reached without
// a socket: requests go from a relay client's http.Client straight to the
// bus handler. A test that runs its agents inside a testing/synctest bubble
// uses them, since a bubble cannot wait on the network; there the buses'
// and the agents' timers all run on the bubble's clock, and synctest.Wait
// shows that nothing more happens.
//
// Every helper of this package that talks to a bus, [Start] included,
// reaches an in-memory bus by its URL like any other.

// memBuses holds the in-memory buses by host.
var (
	memBuses sync.Map // string → *memBus
	memCount atomic.Uint64
)

// memBus is one in-memory bus.
type memBus struct {
	h    http.Handler
	down atomic.Bool // requests fail as if nothing listened
}

// StartMemBus starts an in-memory bus on the clock now (nil means
// time.Now) and returns its URL and the switch that makes its endpoints
// fail. The test's cleanup ends the bus's parked long-polls, closes its
// store and forgets the URL.
func StartMemBus(tb testing.TB, now func() time.Time) (string, *Switchable) {
	tb.Helper()
	st := store.NewMemory(nil)
	srv := bus.New(st, &bus.Options{Now: now})
	sw := NewSwitchable()
	host := fmt.Sprintf("bus%d.test", memCount.Add(1))
	memBuses.Store(host, &memBus{h: sw.Wrap(srv)})
	tb.Cleanup(func() { memBuses.Delete(host) })
	tb.Cleanup(func() { _ = st.Close() })
	tb.Cleanup(srv.Shutdown) // runs first
	return "http://" + host, sw
}

// SetMemBusDown makes the in-memory bus at rawURL refuse connections, or
// serve again.
func SetMemBusDown(rawURL string, down bool) {
	if mb := memBusOf(rawURL); mb != nil {
		mb.down.Store(down)
	}
}

// memBusOf returns the in-memory bus at rawURL, or nil.
func memBusOf(rawURL string) *memBus {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil
	}
	mb, _ := memBuses.Load(u.Host)
	b, _ := mb.(*memBus)
	return b
}

// httpClient returns the client that reaches the buses of urls: nil, the
// relay package's default, unless one of them is an in-memory bus.
func httpClient(urls ...string) *http.Client {
	for _, u := range urls {
		if memBusOf(u) != nil {
			return &http.Client{Transport: memTransport{}}
		}
	}
	return nil
}

// relayClient returns a relay client of the bus at rawURL.
func relayClient(rawURL string) *relay.Client {
	return relay.New(rawURL, &relay.Options{HTTPClient: httpClient(rawURL)})
}

// errRefused is what a request to an in-memory bus that is down, or gone,
// gets.
var errRefused = errors.New("agenttest: connection refused")

// memTransport serves requests with the in-memory bus of their host.
type memTransport struct{}

// RoundTrip serves req with the in-memory bus of its host.
func (memTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	mb, _ := memBuses.Load(req.URL.Host)
	b, _ := mb.(*memBus)
	if b == nil || b.down.Load() {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, errRefused
	}
	in := req.Clone(req.Context())
	in.RequestURI = req.URL.RequestURI()
	in.RemoteAddr = "127.0.0.1:1"
	if in.Body == nil {
		in.Body = http.NoBody
	}
	rec := httptest.NewRecorder()
	b.h.ServeHTTP(rec, in)
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	return rec.Result(), nil
}

// Elapse lets d pass on the clock of the testing/synctest bubble it is
// called in, then waits until every other goroutine of the bubble is
// blocked again: whatever the agents were going to do in that time, they
// have done. Outside a bubble it would sleep for real; it must not be used
// there.
func Elapse(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}
