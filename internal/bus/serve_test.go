package bus

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/wire"
)

// serveLoopback serves a new bus on a fake store through Serve on
// 127.0.0.1 and returns it with its Serving.
func serveLoopback(t *testing.T) (*Server, *Serving) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := New(newFakeStore(0), nil)
	s := Serve(ln, srv, nil, srv)
	t.Cleanup(s.Close)
	return srv, s
}

// parkServedPoll starts a /recv of a minute on s and waits until the bus holds
// it parked; the answer's status and body come on the channel, or an
// empty body when the request failed.
func parkServedPoll(t *testing.T, srv *Server, s *Serving) <-chan string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		resp, err := http.Get(s.URL() + wire.RecvTarget("K#s", time.Minute))
		if err != nil {
			got <- ""
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		got <- string(body)
	}()
	waitFor(t, 10*time.Second, "the poll parked", func() bool { return srv.waiters.len() == 1 })
	return got
}

// Shutdown answers parked long-polls at once and does not wait for a
// connection that never sent a request: both are done long before a
// deadline the minute-long poll alone would pass.
func TestServeShutdownEndsPollsAndSpareConnections(t *testing.T) {
	srv, s := serveLoopback(t)
	poll := parkServedPoll(t, srv, s)
	spare, err := net.Dial("tcp", s.URL()[len("http://"):])
	if err != nil {
		t.Fatal(err)
	}
	defer spare.Close()

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v, want a graceful end", err)
	}
	if body := <-poll; body != wire.TimeoutAnswer {
		t.Errorf("the parked poll got %q, want %s", body, wire.TimeoutAnswer)
	}
	if _, err := spare.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("reading the spare connection: %v, want EOF", err)
	}
	select {
	case <-s.Done():
	default:
		t.Error("Done is open after Shutdown returned")
	}
	if err := s.Err(); err != nil {
		t.Errorf("Err after Shutdown: %v, want nil", err)
	}
}

// Close ends parked long-polls and stops taking connections.
func TestServeCloseEndsPollsAndStopsServing(t *testing.T) {
	srv, s := serveLoopback(t)
	poll := parkServedPoll(t, srv, s)
	s.Close()
	<-poll
	waitFor(t, 10*time.Second, "the poll's waiter gone", func() bool { return srv.waiters.len() == 0 })
	if _, err := http.Get(s.URL() + "/healthz"); err == nil {
		t.Error("a request after Close was answered")
	}
	if err := s.Err(); err != nil {
		t.Errorf("Err after Close: %v, want nil", err)
	}
}

// A listener that fails ends serving on its own, and Err says why.
func TestServeReportsAListenerFailure(t *testing.T) {
	failure := errors.New("listener broke")
	srv := New(newFakeStore(0), nil)
	s := Serve(brokenListener{failure}, srv, &Options{MaxConns: 1}, srv)
	defer s.Close()
	<-s.Done()
	if err := s.Err(); !errors.Is(err, failure) {
		t.Errorf("Err: %v, want %v", err, failure)
	}
}

// brokenListener fails every Accept with err.
type brokenListener struct{ err error }

func (l brokenListener) Accept() (net.Conn, error) { return nil, l.err }
func (l brokenListener) Close() error              { return nil }
func (l brokenListener) Addr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
}
