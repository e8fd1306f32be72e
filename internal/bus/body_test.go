package bus

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/interlink-go/interlink/internal/wire"
)

// pipeListener is a net.Listener whose connections are the server ends of
// net.Pipe pairs. Unlike sockets, pipes and their deadlines run on
// synctest's fake clock, so a real http.Server can be driven through
// minutes of client behaviour in no time.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// dial returns the client end of a new connection.
func (l *pipeListener) dial() net.Conn {
	client, server := net.Pipe()
	l.conns <- server
	return client
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// servePipes serves srv, made with opts, on a pipeListener inside the
// current bubble, by the bus's connection rules, and closes everything
// when the test ends.
func servePipes(t *testing.T, srv *Server, opts *Options) *pipeListener {
	t.Helper()
	l := newPipeListener()
	hs := NewHTTPServer(srv, opts)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = hs.Serve(l)
	}()
	t.Cleanup(func() {
		srv.Shutdown()
		hs.Close()
		<-served
	})
	return l
}

// trickle writes body to c one byte per second, starting at once, and
// reports how many bytes it wrote before a write failed or it was done.
func trickle(c net.Conn, body string) <-chan int {
	sent := make(chan int, 1)
	go func() {
		n := 0
		for n < len(body) {
			if _, err := c.Write([]byte{body[n]}); err != nil {
				break
			}
			n++
			time.Sleep(time.Second)
		}
		sent <- n
	}()
	return sent
}

// TestSlowBodyCutOffAfter30s: a client that sends its body one byte a
// second gets 408 and a closed connection exactly 30 s after its headers,
// while one that finishes within 30 s is served, and the deadline does not
// carry over to a long-poll on the same connection.
func TestSlowBodyCutOffAfter30s(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore(0)
		l := servePipes(t, New(st, nil), nil)

		// 40 bytes at one a second would take 40 s.
		c := l.dial()
		defer c.Close()
		body := `{"to":"r","payload":"` + strings.Repeat("x", 17) + `"}`
		start := time.Now()
		io.WriteString(c, "POST /send HTTP/1.1\r\nHost: bus\r\nContent-Type: application/json\r\n"+
			"Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n")
		sent := trickle(c, body)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != DefaultRequestTimeout {
			t.Errorf("answered after %v, want %v", got, DefaultRequestTimeout)
		}
		msg, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusRequestTimeout || !resp.Close {
			t.Errorf("status %d, close %v, want 408 and the connection closed", resp.StatusCode, resp.Close)
		}
		checkErrorBody(t, resp.StatusCode, msg)
		c.Close()
		if n := <-sent; n < 30 || n >= len(body) {
			t.Errorf("the client sent %d of %d bytes", n, len(body))
		}
		if n, _ := st.Depth("r"); n != 0 {
			t.Errorf("a cut-off body was queued")
		}

		// 20 bytes at one a second finish in time.
		c2 := l.dial()
		defer c2.Close()
		body = `{"to":"r","payload":1}`
		io.WriteString(c2, "POST /send HTTP/1.1\r\nHost: bus\r\nContent-Type: application/json\r\n"+
			"Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n")
		<-trickle(c2, body)
		br := bufio.NewReader(c2)
		resp, err = http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("a body sent within the timeout got %d", resp.StatusCode)
		}

		// The same connection parks a poll for 60 s, past the deadline the
		// body had.
		start = time.Now()
		io.WriteString(c2, "GET /recv?me=idle&timeout_ms=60000 HTTP/1.1\r\nHost: bus\r\n\r\n")
		resp, err = http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		if d := time.Since(start); d != time.Minute || string(got) != `{"status":"timeout"}` {
			t.Errorf("poll answered %s after %v, want a timeout after 1m", got, d)
		}
	})
}

// TestRequestTimeoutOption: the timeout is configurable, and a body that
// stalls completely is cut off as well.
func TestRequestTimeoutOption(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opts := &Options{RequestTimeout: 2 * time.Second}
		l := servePipes(t, New(newFakeStore(0), opts), opts)
		c := l.dial()
		defer c.Close()
		start := time.Now()
		io.WriteString(c, "POST /announce HTTP/1.1\r\nHost: bus\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if d := time.Since(start); resp.StatusCode != http.StatusRequestTimeout || d != 2*time.Second {
			t.Errorf("status %d after %v, want 408 after 2s", resp.StatusCode, d)
		}
	})
}

// blockingBody is a request body that delivers nothing until released, and
// says when the handler first waits on it.
type blockingBody struct {
	waiting chan struct{}
	once    sync.Once
	release chan struct{}
}

func (b *blockingBody) Read([]byte) (int, error) {
	b.once.Do(func() { close(b.waiting) })
	<-b.release
	return 0, errors.New("released")
}

func (b *blockingBody) Close() error { return nil }

// TestNoBufferBeforeBody: a request that declares the largest body and has
// not sent any of it costs the handler a small buffer, not one sized by
// the declared length.
func TestNoBufferBeforeBody(t *testing.T) {
	srv := New(newFakeStore(0), nil)
	const requests = 50
	bodies := make([]*blockingBody, requests)
	var wg sync.WaitGroup
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range bodies {
		b := &blockingBody{waiting: make(chan struct{}), release: make(chan struct{})}
		bodies[i] = b
		req := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/send", b)
		req.Header.Set("Content-Type", "application/json")
		req.ContentLength = wire.MaxBodyBytes
		wg.Go(func() { srv.ServeHTTP(httptest.NewRecorder(), req) })
		<-b.waiting
	}
	runtime.ReadMemStats(&after)
	for _, b := range bodies {
		close(b.release)
	}
	wg.Wait()
	per := (after.TotalAlloc - before.TotalAlloc) / requests
	t.Logf("%d bytes allocated per request waiting for its body", per)
	if per > 16<<10 {
		t.Errorf("%d bytes allocated per request that declared %d bytes and sent none", per, wire.MaxBodyBytes)
	}
}
