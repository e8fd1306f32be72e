package screen

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/testutil"
)

// bound is the header bound of the screens in these tests.
const bound = 8 << 10

// screened listens on 127.0.0.1 through Listen with timeout; the
// listener is closed at cleanup.
func screened(t *testing.T, timeout time.Duration) net.Listener {
	t.Helper()
	ln, _ := screenedCounted(t, timeout)
	return ln
}

// screenedCounted is screened with the screen's counts.
func screenedCounted(t *testing.T, timeout time.Duration) (net.Listener, *Stats) {
	t.Helper()
	if !Enabled {
		t.Skip("connections are not screened on this system")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stats := new(Stats)
	s := Listen(ln, timeout, bound, stats)
	t.Cleanup(func() { s.Close() })
	return s, stats
}

// dial connects to ln and writes each of parts in a write of its own.
func dial(t *testing.T, ln net.Listener, parts ...string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for _, p := range parts {
		if _, err := io.WriteString(c, p); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// accepted is what one Accept returned.
type accepted struct {
	c   net.Conn
	err error
}

// acceptAll accepts from ln until it is closed, sending each result on the
// returned channel.
func acceptAll(ln net.Listener) <-chan accepted {
	out := make(chan accepted, 16)
	go func() {
		defer close(out)
		for {
			c, err := ln.Accept()
			out <- accepted{c, err}
			if err != nil {
				return
			}
		}
	}()
	return out
}

// next returns the next connection from acc, failing the test after a
// while without one.
func next(t *testing.T, acc <-chan accepted) net.Conn {
	t.Helper()
	select {
	case a := <-acc:
		if a.err != nil {
			t.Fatalf("accept: %v", a.err)
		}
		t.Cleanup(func() { a.c.Close() })
		return a.c
	case <-time.After(10 * time.Second):
		t.Fatal("no connection was handed on")
		return nil
	}
}

// readEnd reads c until it ends and returns what came and how it ended.
func readEnd(t *testing.T, c net.Conn) (string, error) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	return string(b), err
}

func TestScreenHandsOnOnlyConnectionsWhoseHeadersAreIn(t *testing.T) {
	ln := screened(t, time.Minute)
	acc := acceptAll(ln)
	// The first client stops in its headers; the second sends its whole
	// request later, and is handed on first.
	slow := dial(t, ln, "GET /a HTTP/1.1\r\nHost: bus\r\n")
	quick := dial(t, ln, "GET /b HTTP/1.1\r\n", "Host: bus\r\n", "\r\n")
	got := next(t, acc)
	if want := quick.LocalAddr().String(); got.RemoteAddr().String() != want {
		t.Fatalf("handed on the connection from %s, want the one from %s whose headers are whole", got.RemoteAddr(), want)
	}
	if _, err := io.WriteString(slow, "\r\n"); err != nil {
		t.Fatal(err)
	}
	got = next(t, acc)
	if want := slow.LocalAddr().String(); got.RemoteAddr().String() != want {
		t.Fatalf("handed on the connection from %s, want %s", got.RemoteAddr(), want)
	}
	// Nothing was taken from the connection: the server reads the whole
	// request from its start.
	buf := make([]byte, 64)
	n, err := io.ReadAtLeast(got, buf, len("GET /a HTTP/1.1\r\nHost: bus\r\n\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if string(buf[:n]) != "GET /a HTTP/1.1\r\nHost: bus\r\n\r\n" {
		t.Errorf("the handed-on connection reads %q", buf[:n])
	}
}

func TestScreenAcceptsHeadersEndedByBareLineFeeds(t *testing.T) {
	ln := screened(t, time.Minute)
	acc := acceptAll(ln)
	dial(t, ln, "GET / HTTP/1.1\nHost: bus\n", "\n")
	next(t, acc)
}

// headersOf returns a request whose headers, the empty line that ends them
// included, are exactly n bytes long.
func headersOf(n int) string {
	head := "GET / HTTP/1.1\r\nHost: bus\r\nX-Pad: "
	return head + strings.Repeat("a", n-len(head)-len("\r\n\r\n")) + "\r\n\r\n"
}

func TestScreenHandsOnHeadersUpToTheBound(t *testing.T) {
	ln := screened(t, time.Minute)
	acc := acceptAll(ln)
	req := headersOf(bound)
	dial(t, ln, req[:1000], req[1000:])
	next(t, acc)
}

// TestScreenRefusesHeadersOverTheBound: headers that have not ended after
// bound get the HTTP server's 431 and a closed connection, and
// never reach the server, whether they would end one byte later or never.
func TestScreenRefusesHeadersOverTheBound(t *testing.T) {
	ln, stats := screenedCounted(t, time.Minute)
	acc := acceptAll(ln)
	for i, req := range []string{
		headersOf(bound + 1),
		"GET / HTTP/1.1\r\nX-Long: " + strings.Repeat("a", 1<<20),    // one 1 MiB line
		"GET / HTTP/1.1\r\n" + strings.Repeat("X-A: b\r\n", bound/8), // many small lines
	} {
		c := dial(t, ln)
		// The client may still be sending when the screen answers.
		go io.WriteString(c, req)
		br := bufio.NewReader(c)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || !resp.Close || string(body) != "431 Request Header Fields Too Large" {
			t.Errorf("request %d: %d %q, close %v; want 431 and the connection closed", i, resp.StatusCode, body, resp.Close)
		}
		screenCounts(t, stats, 0, uint64(i+1))
	}
	select {
	case a := <-acc:
		t.Fatalf("a connection with headers over the bound was handed on: %v %v", a.c, a.err)
	default:
	}
}

func TestScreenClosesConnectionsThatMissTheHeaderDeadline(t *testing.T) {
	ln := screened(t, 300*time.Millisecond)
	acc := acceptAll(ln)
	silent := dial(t, ln)
	partial := dial(t, ln, "POST /send HTTP/1.1\r\nHost: bus\r\nContent-Type: app")
	// Both end cleanly, not with a reset, and were never handed on.
	for _, c := range []net.Conn{silent, partial} {
		if got, err := readEnd(t, c); err != nil || got != "" {
			t.Errorf("a connection that missed the header deadline read %q, %v; want a clean end", got, err)
		}
	}
	dial(t, ln, "GET / HTTP/1.1\r\n\r\n")
	got := next(t, acc)
	if got.RemoteAddr().String() == silent.LocalAddr().String() || got.RemoteAddr().String() == partial.LocalAddr().String() {
		t.Error("a connection that missed the header deadline was handed on")
	}
}

func TestScreenClosesConnectionsThatEndInTheirHeaders(t *testing.T) {
	ln := screened(t, time.Minute)
	acc := acceptAll(ln)
	gone := dial(t, ln)
	gone.Close()
	dial(t, ln, "GET / HTTP/1.1\r\n\r\n")
	next(t, acc)
	s := ln.(*screen)
	testutil.Eventually(t, 10*time.Second, "the closed connection to be dropped", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.waiting) == 0
	})
}

func TestClosingTheScreenClosesConnectionsStillInTheirHeaders(t *testing.T) {
	ln := screened(t, time.Minute)
	acc := acceptAll(ln)
	c := dial(t, ln, "GET / HTTP/1.1\r\n")
	s := ln.(*screen)
	testutil.Eventually(t, 10*time.Second, "the connection to be screened", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.waiting) == 1
	})
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := readEnd(t, c); err != nil || got != "" {
		t.Errorf("after the listener closed, its waiting connection read %q, %v; want a clean end", got, err)
	}
	a := <-acc
	if !errors.Is(a.err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v, %v; want net.ErrClosed", a.c, a.err)
	}
}

// TestScreenedServerServesKeptAndPipelinedRequests: an HTTP server behind
// the screen answers a request whose headers come a byte at a time, the
// next request on the same connection, and two requests sent at once.
func TestScreenedServerServesKeptAndPipelinedRequests(t *testing.T) {
	ln := screened(t, time.Minute)
	hs := &http.Server{
		ReadHeaderTimeout: time.Minute,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			io.WriteString(w, r.URL.Path+" "+string(body))
		}),
	}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })

	req := "POST /one HTTP/1.1\r\nHost: bus\r\nContent-Length: 5\r\n\r\nhello"
	parts := strings.Split(req, "")
	c := dial(t, ln, parts...)
	br := bufio.NewReader(c)
	read := func(want string) {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != want {
			t.Fatalf("answer %d %q, want 200 %q", resp.StatusCode, body, want)
		}
	}
	read("/one hello")
	io.WriteString(c, "POST /two HTTP/1.1\r\nHost: bus\r\nContent-Length: 2\r\n\r\nhi")
	read("/two hi")
	io.WriteString(c, "GET /three HTTP/1.1\r\nHost: bus\r\n\r\nGET /four HTTP/1.1\r\nHost: bus\r\n\r\n")
	read("/three ")
	read("/four ")
}

// errListener returns err from its first Accept, then the connections
// sent on conns.
type errListener struct {
	net.Listener
	err   error
	conns chan net.Conn
}

func (l *errListener) Accept() (net.Conn, error) {
	if err := l.err; err != nil {
		l.err = nil
		return nil, err
	}
	c, ok := <-l.conns
	if !ok {
		return nil, net.ErrClosed
	}
	return c, nil
}

func (l *errListener) Close() error {
	close(l.conns)
	return nil
}

func TestScreenPassesAcceptErrorsOnAndGoesOn(t *testing.T) {
	if !canPeek {
		t.Skip("connections are not screened on this system")
	}
	failure := errors.New("too many open files")
	inner := &errListener{err: failure, conns: make(chan net.Conn, 1)}
	ln := Listen(inner, time.Minute, bound, nil)
	defer ln.Close()
	if _, err := ln.Accept(); !errors.Is(err, failure) {
		t.Fatalf("Accept: %v, want the wrapped listener's error", err)
	}
	// A connection without a socket to look at is handed on as it is.
	mine, theirs := net.Pipe()
	defer theirs.Close()
	inner.conns <- mine
	c, err := ln.Accept()
	if err != nil || c != mine {
		t.Fatalf("Accept: %v, %v; want the connection", c, err)
	}
}

// screenCounts waits until stats read waiting and dropped.
func screenCounts(t *testing.T, stats *Stats, waiting int64, dropped uint64) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, fmt.Sprintf("%d connections waiting and %d dropped", waiting, dropped), func() bool {
		return stats.Waiting() == waiting && stats.Dropped() == dropped
	})
}

func TestScreenCountsConnectionsWaitingAndDropped(t *testing.T) {
	ln, stats := screenedCounted(t, time.Minute)
	acc := acceptAll(ln)
	silent := dial(t, ln)
	other := dial(t, ln, "POST /send HTTP/1.1\r\n")
	screenCounts(t, stats, 2, 0)

	// Whole headers: handed on, neither waiting nor dropped.
	dial(t, ln, "GET /b HTTP/1.1\r\nHost: bus\r\n\r\n")
	next(t, acc)
	screenCounts(t, stats, 2, 0)

	// A client that hangs up is dropped. (One that hangs up after part of
	// its headers is dropped at the deadline, as the next test shows.)
	silent.Close()
	screenCounts(t, stats, 1, 1)

	// So is one still waiting when the listener closes.
	ln.Close()
	screenCounts(t, stats, 0, 2)
	if _, err := readEnd(t, other); err != nil {
		t.Errorf("the connection still waiting at close ended with %v, want a clean end", err)
	}
}

func TestScreenCountsConnectionsCutOffAtTheDeadline(t *testing.T) {
	ln, stats := screenedCounted(t, 50*time.Millisecond)
	c := dial(t, ln, "GET / HTTP/1.1\r\n")
	if _, err := readEnd(t, c); err != nil {
		t.Fatalf("the stalled connection ended with %v, want a clean end", err)
	}
	screenCounts(t, stats, 0, 1)
}
