package nats

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/store/natstest"
)

// hintWait bounds how long a test waits for a hint or a lost call. Hints
// normally take a millisecond; the bound covers a server restart, after
// which the client starts its consumer again with pauses of a second or
// more.
const hintWait = 30 * time.Second

// hints records what a watch reports.
type hints struct {
	stored chan string
	lost   chan struct{}
}

// watchHints starts a watch on s that reports into buffered channels, and
// stops it at cleanup. seen, if set, is called with each hinted route
// before it is reported, from the watch's goroutine.
func watchHints(t *testing.T, s *Store, seen func(route string)) *hints {
	t.Helper()
	h := &hints{stored: make(chan string, 1024), lost: make(chan struct{}, 16)}
	stop := s.Watch(func(route string) {
		if seen != nil {
			seen(route)
		}
		h.stored <- route
	}, func() {
		select {
		case h.lost <- struct{}{}:
		default:
		}
	})
	t.Cleanup(stop)
	return h
}

// next returns the next hinted route.
func (h *hints) next(t *testing.T) string {
	t.Helper()
	select {
	case r := <-h.stored:
		return r
	case <-time.After(hintWait):
		t.Fatalf("no hint within %v", hintWait)
		return ""
	}
}

// waitLost waits for a lost call.
func (h *hints) waitLost(t *testing.T, when string) {
	t.Helper()
	select {
	case <-h.lost:
	case <-time.After(hintWait):
		t.Fatalf("no lost call %s within %v", when, hintWait)
	}
}

// A store learns, route by route and in order, of the messages another
// store on the same stream stored, and only once they can be read.
func TestNATSWatchHintsMessagesStoredElsewhere(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	opts := &Options{Stream: "HINTS"}
	a := openNATSWith(t, srv, opts)
	b := openNATSWith(t, srv, opts)
	readable := make(chan bool, 1024)
	h := watchHints(t, b, func(route string) {
		_, ok, err := b.Peek(route)
		readable <- ok && err == nil
	})
	h.waitLost(t, "once the watch runs")

	routes := []string{"K#a", "K#b.c", "", "K#*", "K#a"}
	for _, r := range routes {
		enqueue(t, a, r, "for "+r)
	}
	for i, want := range routes {
		if got := h.next(t); got != want {
			t.Fatalf("hint %d names route %q, want %q", i, got, want)
		}
		if !<-readable {
			t.Fatalf("hint %d for route %q came before the message could be read", i, want)
		}
	}
}

// A watch started while messages wait hints only what comes after; the
// lost call at its start covers the rest. What the watching store stored
// itself is not hinted: its caller knows.
func TestNATSWatchHintsOnlyNewMessagesOfOthers(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	opts := &Options{Stream: "LATE"}
	a := openNATSWith(t, srv, opts)
	b := openNATSWith(t, srv, opts)
	enqueue(t, a, "K#old", "old")
	h := watchHints(t, b, nil)
	h.waitLost(t, "once the watch runs")
	for i := range 10 {
		enqueue(t, b, "K#own", itoa(i))
	}
	enqueue(t, a, "K#new", "new")
	if got := h.next(t); got != "K#new" {
		t.Fatalf("first hint names %q, want K#new", got)
	}
}

// After the server restarts, the watch reports that hints may have been
// lost and goes on hinting new messages.
func TestNATSWatchSurvivesServerRestart(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	opts := &Options{Stream: "RESTARTED"}
	a := openNATSWith(t, srv, opts)
	b := openNATSWith(t, srv, opts)
	h := watchHints(t, b, nil)
	h.waitLost(t, "once the watch runs")
	enqueue(t, a, "K#s", "before")
	if got := h.next(t); got != "K#s" {
		t.Fatalf("hint before the restart names %q", got)
	}

	backA, backB := a.conn.nc.StatusChanged(nats.CONNECTED), b.conn.nc.StatusChanged(nats.CONNECTED)
	srv.Restart()
	waitStatus(t, backA)
	waitStatus(t, backB)
	h.waitLost(t, "after the reconnect")
	enqueue(t, a, "K#t", "after")
	for {
		// Replays of the first message may come first.
		if r := h.next(t); r == "K#t" {
			break
		} else if r != "K#s" {
			t.Fatalf("hint after the restart names %q", r)
		}
	}
}

// When only the watching store's connection drops, the messages another
// store stored meanwhile are hinted once it is back, or covered by a lost
// call.
func TestNATSWatchAfterReconnectOfWatcher(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	opts := &Options{Stream: "RECONNECT"}
	a := openNATSWith(t, srv, opts)
	b := openNATSWith(t, srv, opts)
	h := watchHints(t, b, nil)
	h.waitLost(t, "once the watch runs")
	enqueue(t, a, "K#first", "first")
	if got := h.next(t); got != "K#first" {
		t.Fatalf("first hint names %q", got)
	}

	gone := b.conn.nc.StatusChanged(nats.RECONNECTING)
	back := b.conn.nc.StatusChanged(nats.CONNECTED)
	if err := b.conn.nc.ForceReconnect(); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, gone)
	enqueue(t, a, "K#meanwhile", "meanwhile")
	waitStatus(t, back)
	h.waitLost(t, "after the reconnect")
	for {
		if r := h.next(t); r == "K#meanwhile" {
			break
		} else if r != "K#first" {
			t.Fatalf("hint after the reconnect names %q, want K#meanwhile", r)
		}
	}
}

// Close ends the watches it still has, and a stop after that returns.
func TestNATSCloseEndsWatches(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	s, err := Open(srv.URL(), &Options{Stream: "ENDS"})
	if err != nil {
		t.Fatal(err)
	}
	h := &hints{stored: make(chan string, 1), lost: make(chan struct{}, 1)}
	stop := s.Watch(func(string) {}, func() { h.lost <- struct{}{} })
	h.waitLost(t, "once the watch runs")
	done := make(chan struct{})
	go func() {
		s.Close()
		stop()
		stop()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close and stop did not return")
	}
	// A watch on a closed store ends at once.
	s.Watch(func(string) {}, func() {})()
}

// Healthy follows the connection: nil while connected, ErrUnreachable
// while the server is away, nil again once it is back, store.ErrClosed at the
// end.
func TestNATSHealthyFollowsTheConnection(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	s, err := Open(srv.URL(), &Options{Stream: "HEALTH", Connect: []nats.Option{nats.ReconnectWait(20 * time.Millisecond)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Healthy(); err != nil {
		t.Fatalf("Healthy while connected: %v", err)
	}
	lost := s.conn.nc.StatusChanged(nats.RECONNECTING)
	srv.Shutdown()
	waitStatus(t, lost)
	if err := s.Healthy(); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Healthy while the server is down: %v, want ErrUnreachable", err)
	}
	back := s.conn.nc.StatusChanged(nats.CONNECTED)
	srv.Restart()
	waitStatus(t, back)
	if err := s.Healthy(); err != nil {
		t.Fatalf("Healthy after the restart: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Healthy(); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Healthy after Close: %v, want store.ErrClosed", err)
	}
}
