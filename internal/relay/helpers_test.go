package relay

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/identity"
)

// testEpoch is where the fake clocks start.
var testEpoch = bustest.Epoch

// clock is a wall clock that moves only when told to.
type clock struct{ *bustest.Clock }

func newClock() *clock                   { return &clock{bustest.NewClock()} }
func (c *clock) now() time.Time          { return c.Now() }
func (c *clock) advance(d time.Duration) { c.Advance(d) }

// startBus serves a real in-memory bus on loopback and returns its URL and
// clock.
func startBus(tb testing.TB) (string, *clock) {
	tb.Helper()
	return startBusWith(tb, nil)
}

// startBusWith is startBus with wrap applied to the bus handler, when wrap
// is not nil.
func startBusWith(tb testing.TB, wrap func(http.Handler) http.Handler) (string, *clock) {
	tb.Helper()
	clk := newClock()
	return bustest.Start(tb, &bustest.Options{Now: clk.now, Wrap: wrap}), clk
}

// startFake serves h on loopback and returns its URL.
func startFake(tb testing.TB, h http.HandlerFunc) string {
	tb.Helper()
	ts := httptest.NewServer(h)
	tb.Cleanup(ts.Close)
	return ts.URL
}

// reply returns a handler that answers every request with code and body.
func reply(code int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}
}

// session returns a session descriptor with id sid.
func session(sid string) identity.SessionInfo {
	return identity.SessionInfo{SessionID: sid, Cwd: "/src/" + sid, GitRoot: "repo", Summary: "working on " + sid}
}

// closedURL returns the URL of a loopback listener that hangs up on every
// connection, so each request fails in transport.
func closedURL(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return // the listener was closed
			}
			_ = c.Close()
		}
	}()
	tb.Cleanup(func() {
		_ = ln.Close()
		<-done
	})
	return "http://" + ln.Addr().String()
}
