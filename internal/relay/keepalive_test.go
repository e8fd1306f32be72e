package relay

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/store"
)

// countedServer serves h on loopback and counts the connections clients
// open to it.
type countedServer struct {
	URL   string
	conns atomic.Int64
}

func startCounted(tb testing.TB, h http.Handler) *countedServer {
	tb.Helper()
	cs := &countedServer{}
	ts := httptest.NewUnstartedServer(h)
	ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			cs.conns.Add(1)
		}
	}
	ts.Start()
	tb.Cleanup(ts.Close)
	cs.URL = ts.URL
	return cs
}

// startCountedBus serves a real in-memory bus.
func startCountedBus(tb testing.TB) *countedServer {
	tb.Helper()
	st := store.NewMemory(nil)
	srv := bus.New(st, nil)
	cs := startCounted(tb, srv)
	tb.Cleanup(func() { _ = st.Close() })
	tb.Cleanup(srv.Shutdown) // runs first, ending parked polls
	return cs
}

func TestSequentialRequestsReuseOneConnection(t *testing.T) {
	t.Parallel()
	srv := startCountedBus(t)
	c := New(srv.URL, nil)
	defer c.CloseIdleConnections()
	ctx := t.Context()
	for range 5 {
		if err := c.Send(ctx, "K#s", []byte(`{"n":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Ack(ctx, "K#s", "K#s\x0000000000000000000001"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Roster(ctx); err != nil {
		t.Fatal(err)
	}
	if n := srv.conns.Load(); n != 1 {
		t.Fatalf("seven sequential requests opened %d connections, want 1", n)
	}
}

// A long-poll parked on the bus has a connection of its own: sends go out
// and complete while it waits, and the poll then gets its message.
func TestParkedPollDoesNotHoldUpSends(t *testing.T) {
	t.Parallel()
	srv := startCountedBus(t)
	c := New(srv.URL, nil)
	defer c.CloseIdleConnections()
	ctx := t.Context()

	// One send first, so the short-request connection exists and is idle
	// when the poll starts.
	if err := c.Send(ctx, "other#s", []byte(`0`)); err != nil {
		t.Fatal(err)
	}
	polled := make(chan Delivery, 1)
	pollErr := make(chan error, 1)
	go func() {
		d, err := c.Recv(ctx, "K#s", 30*time.Second)
		if err != nil {
			pollErr <- err
			return
		}
		polled <- d
	}()
	// Wait until the poll has its connection.
	for srv.conns.Load() < 2 {
		select {
		case err := <-pollErr:
			t.Fatal(err)
		case <-time.After(time.Millisecond):
		}
	}
	for i := range 3 {
		if err := c.Send(ctx, "other#s", []byte(`1`)); err != nil {
			t.Fatalf("send %d beside the parked poll: %v", i, err)
		}
	}
	select {
	case d := <-polled:
		t.Fatalf("the poll returned %+v before anything was sent to its route", d)
	default:
	}
	if err := c.Send(ctx, "K#s", []byte(`"wake"`)); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-polled:
		if string(d.Payload) != `"wake"` {
			t.Fatalf("the poll got %s", d.Payload)
		}
	case err := <-pollErr:
		t.Fatal(err)
	case <-time.After(20 * time.Second):
		t.Fatal("the poll did not return after its message was sent")
	}
	if n := srv.conns.Load(); n != 2 {
		t.Fatalf("a poll and five sends opened %d connections, want 2", n)
	}
}

// dyingConns is a handler that answers the first request on each
// connection and kills the connection, unanswered, on the request after
// that: as a connection kept while the relay restarted, or while the
// network changed, fails.
type dyingConns struct {
	mu        sync.Mutex
	served    map[string]int // requests seen per client address
	requests  int
	killFirst bool // kill even the first request on a connection
}

func (d *dyingConns) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	d.mu.Lock()
	if d.served == nil {
		d.served = make(map[string]int)
	}
	d.served[r.RemoteAddr]++
	n := d.served[r.RemoteAddr]
	d.requests++
	d.mu.Unlock()
	if n == 1 && !d.killFirst {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	conn.Close()
}

func (d *dyingConns) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.requests
}

func TestDeadReusedConnectionIsTriedOnceMore(t *testing.T) {
	t.Parallel()
	h := &dyingConns{}
	srv := startCounted(t, h)
	c := New(srv.URL, nil)
	defer c.CloseIdleConnections()
	ctx := t.Context()
	if err := c.Send(ctx, "K#s", []byte(`1`)); err != nil {
		t.Fatal(err)
	}
	// The kept connection dies on this request; the send goes out again
	// on a new one.
	if err := c.Send(ctx, "K#s", []byte(`2`)); err != nil {
		t.Fatalf("send over a dead kept connection: %v", err)
	}
	if n := h.count(); n != 3 {
		t.Fatalf("the server saw %d requests, want 3: one, the one that died, its repeat", n)
	}
	if n := srv.conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}

func TestFailureOnANewConnectionIsNotRepeated(t *testing.T) {
	t.Parallel()
	h := &dyingConns{killFirst: true}
	srv := startCounted(t, h)
	c := New(srv.URL, nil)
	defer c.CloseIdleConnections()
	err := c.Send(t.Context(), "K#s", []byte(`1`))
	if err == nil {
		t.Fatal("a send the server never answered succeeded")
	}
	if _, ok := errors.AsType[*StatusError](err); ok {
		t.Fatalf("got a status error %v, want a transport failure", err)
	}
	if n := h.count(); n != 1 {
		t.Fatalf("the server saw %d requests, want 1", n)
	}
}

// After a gap in the wall clock longer than IdleTimeout, as a laptop's sleep
// leaves, the kept connections are closed rather than tried.
func TestWallClockGapDropsKeptConnections(t *testing.T) {
	t.Parallel()
	srv := startCountedBus(t)
	clk := newClock()
	c := New(srv.URL, nil)
	c.now = clk.now
	defer c.CloseIdleConnections()
	ctx := context.Background()
	send := func() {
		t.Helper()
		if err := c.Send(ctx, "K#s", []byte(`1`)); err != nil {
			t.Fatal(err)
		}
	}
	send()
	clk.advance(IdleTimeout - time.Second)
	send()
	if n := srv.conns.Load(); n != 1 {
		t.Fatalf("%d connections after a short gap, want 1", n)
	}
	clk.advance(IdleTimeout + time.Second)
	send()
	if n := srv.conns.Load(); n != 2 {
		t.Fatalf("%d connections after a long gap, want 2", n)
	}
}
