package presence

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/testutil"
)

// testBus is a real in-memory bus on loopback that counts announcements.
type testBus struct {
	client    *relay.Client
	announces atomic.Int64
}

// startBus serves a bus on 127.0.0.1 for the length of the test.
func startBus(tb testing.TB) *testBus {
	tb.Helper()
	b := &testBus{}
	url := bustest.Start(tb, &bustest.Options{Wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r)
			// Counted once handled, so a test that saw the count can
			// read the roster it changed.
			if r.URL.Path == "/announce" {
				b.announces.Add(1)
			}
		})
	}})
	b.client = relay.New(url, nil)
	return b
}

// closedURL returns the URL of a loopback port nobody listens on.
func closedURL(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	if err := ln.Close(); err != nil {
		tb.Fatal(err)
	}
	return url
}

// waitFor polls cond until it holds, failing the test after a generous
// timeout.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	testutil.Eventually(tb, 10*time.Second, what, cond)
}

// start runs a.Run until the returned stop function is called or the test
// ends; stop waits for Run to return.
func start(tb testing.TB, a *Announcer) (stop func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Run(ctx)
	}()
	stop = func() {
		cancel()
		<-done
	}
	tb.Cleanup(stop)
	return stop
}

// entries returns the verified roster entries of the given relays.
func entries(tb testing.TB, clients ...*relay.Client) []relay.Entry {
	tb.Helper()
	r := relay.FetchRoster(context.Background(), clients)
	if len(r.Failures) != 0 {
		tb.Fatalf("roster failures: %v", r.Failures)
	}
	return r.Entries
}
