package bus

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// answerOf reads one answer from br and says when it came.
func answerOf(t *testing.T, br *bufio.Reader, start time.Time) (*http.Response, time.Duration) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, time.Since(start)
}

// closedAfter checks that the bus closed c, whose reader is br.
func closedAfter(t *testing.T, br *bufio.Reader) {
	t.Helper()
	if b, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("after the answer the connection read %q, %v; want it closed", b, err)
	}
}

// TestEveryRequestEndsByItsDeadline: whatever its route and status, and
// whether or not its handler reads its body, a request whose body does not
// arrive is answered and its connection closed when the request's deadline
// passes, 30 s after it started; a long-poll's deadline comes that much
// after its wait.
func TestEveryRequestEndsByItsDeadline(t *testing.T) {
	declared := "Content-Length: 100\r\n\r\n" // and never sent
	for _, tc := range []struct {
		name string
		req  string
		want int
		at   time.Duration // when the answer comes
	}{
		{"GET /healthz with a body declared", "GET /healthz HTTP/1.1\r\nHost: bus\r\n" + declared, 200, 30 * time.Second},
		{"HEAD /healthz with a body declared", "HEAD /healthz HTTP/1.1\r\nHost: bus\r\n" + declared, 200, 30 * time.Second},
		{"GET /roster with a body declared", "GET /roster HTTP/1.1\r\nHost: bus\r\n" + declared, 200, 30 * time.Second},
		{"GET / with a body declared", "GET / HTTP/1.1\r\nHost: bus\r\n" + declared, 200, 30 * time.Second},
		{"GET /recv without waiting, with a body declared", "GET /recv?me=r&timeout_ms=0 HTTP/1.1\r\nHost: bus\r\n" + declared, 200, 30 * time.Second},
		{"GET /recv waiting a minute, with a body declared", "GET /recv?me=r&timeout_ms=60000 HTTP/1.1\r\nHost: bus\r\n" + declared, 200, 90 * time.Second},
		{"an unknown path", "GET /nowhere HTTP/1.1\r\nHost: bus\r\n" + declared, 404, 30 * time.Second},
		{"a wrong method", "PUT /healthz HTTP/1.1\r\nHost: bus\r\n" + declared, 405, 30 * time.Second},
		{"a body that is not JSON", "POST /send HTTP/1.1\r\nHost: bus\r\nContent-Type: text/plain\r\n" + declared, 415, 30 * time.Second},
		{"OPTIONS *, which the HTTP server answers itself", "OPTIONS * HTTP/1.1\r\nHost: bus\r\n" + declared, 200, 30 * time.Second},
		{"a chunked body that never ends, read", "POST /send HTTP/1.1\r\nHost: bus\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n", 408, 30 * time.Second},
		{"a chunked body that never ends, not read", "POST /nowhere HTTP/1.1\r\nHost: bus\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n", 404, 30 * time.Second},
		{"a body the client waits to be asked for, not read", "POST /nowhere HTTP/1.1\r\nHost: bus\r\nExpect: 100-continue\r\n" + declared, 404, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := servePipes(t, New(newFakeStore(0), nil), nil)
				c := l.dial()
				defer c.Close()
				start := time.Now()
				go io.WriteString(c, tc.req)
				br := bufio.NewReader(c)
				resp, at := answerOf(t, br, start)
				if resp.StatusCode != tc.want || at != tc.at {
					t.Errorf("answered %d after %v, want %d after %v", resp.StatusCode, at, tc.want, tc.at)
				}
				closedAfter(t, br)
			})
		})
	}
}

// TestLaterRequestsEndByTheirDeadline: on a kept connection, the deadline
// of each request counts from its own start, whether its body is declared
// and never sent, or sent a byte a second to a route that does not read
// it.
func TestLaterRequestsEndByTheirDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := servePipes(t, New(newFakeStore(0), nil), nil)
		c := l.dial()
		defer c.Close()
		br := bufio.NewReader(c)
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: bus\r\n\r\n")
		if resp, _ := answerOf(t, br, time.Now()); resp.StatusCode != 200 || resp.Close {
			t.Fatalf("first request: %d, close %v", resp.StatusCode, resp.Close)
		}
		time.Sleep(time.Minute) // kept, idle
		start := time.Now()
		io.WriteString(c, "POST /healthz HTTP/1.1\r\nHost: bus\r\nContent-Length: 100\r\n\r\n")
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-tick.C:
					if _, err := io.WriteString(c, "x"); err != nil {
						return
					}
				case <-stop:
					return
				}
			}
		}()
		resp, at := answerOf(t, br, start)
		if resp.StatusCode != http.StatusMethodNotAllowed || at != 30*time.Second {
			t.Errorf("second request answered %d after %v, want 405 after 30s", resp.StatusCode, at)
		}
		closedAfter(t, br)
	})
}

// TestAnswerNobodyReadsIsCutOff: a client that sends a request and never
// reads the answer holds its connection until the answer's deadline, 40 s
// after the request, and no longer.
func TestAnswerNobodyReadsIsCutOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := servePipes(t, New(newFakeStore(0), nil), nil)
		c := l.dial()
		defer c.Close()
		// A pipe holds nothing: the bus's answer waits for the client to
		// read it.
		io.WriteString(c, "GET /roster HTTP/1.1\r\nHost: bus\r\n\r\n")
		time.Sleep(DefaultRequestTimeout + AnswerTimeout)
		synctest.Wait()
		c.SetReadDeadline(time.Now())
		got, err := io.ReadAll(c)
		if !errors.Is(err, io.EOF) && err != nil || len(got) != 0 {
			t.Errorf("after the answer's deadline the client read %q, %v; want the connection closed", got, err)
		}
	})
}

// TestLongPollOutlivesTheRequestDeadline: a long-poll is not cut off by
// the request deadline it outlasts; it is woken by a message sent long
// after, and otherwise answers at the end of its wait.
func TestLongPollOutlivesTheRequestDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opts := &Options{RequestTimeout: time.Second}
		st := newFakeStore(0)
		l := servePipes(t, New(st, opts), opts)
		c := l.dial()
		defer c.Close()
		br := bufio.NewReader(c)
		start := time.Now()
		io.WriteString(c, "GET /recv?me=r&timeout_ms=120000 HTTP/1.1\r\nHost: bus\r\n\r\n")
		time.Sleep(100 * time.Second)
		s := l.dial()
		defer s.Close()
		body := `{"to":"r","payload":"late"}`
		io.WriteString(s, "POST /send HTTP/1.1\r\nHost: bus\r\nContent-Type: application/json\r\nContent-Length: 27\r\n\r\n"+body)
		if resp, _ := answerOf(t, bufio.NewReader(s), time.Now()); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("send: %d", resp.StatusCode)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		if at := time.Since(start); !strings.Contains(string(got), `"late"`) || at != 100*time.Second {
			t.Errorf("the poll answered %s after %v, want the message after 100s", got, at)
		}

		// The same connection waits its whole two minutes for nothing.
		start = time.Now()
		io.WriteString(c, "GET /recv?me=other&timeout_ms=120000 HTTP/1.1\r\nHost: bus\r\n\r\n")
		resp, err = http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ = io.ReadAll(resp.Body)
		if at := time.Since(start); string(got) != `{"status":"timeout"}` || at != 120*time.Second {
			t.Errorf("the poll answered %s after %v, want a timeout after 2m", got, at)
		}
	})
}

// TestRefusedHeadersAgreeWithTheScreen: a later request on a kept
// connection, which the screen does not see, is held to the same header
// bound by the HTTP server: headers of MaxHeaderBytes pass, and more,
// beyond the 4 KiB the server may already have read ahead, get 431.
func TestRefusedHeadersAgreeWithTheScreen(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  string
		want int
	}{
		{"headers of the bound", headersOf(MaxHeaderBytes), 200},
		{"headers over the bound", headersOf(MaxHeaderBytes + httpHeaderSlack + 1), 431},
		{"one line of a mebibyte", "GET / HTTP/1.1\r\nHost: bus\r\nX-Long: " + strings.Repeat("a", 1<<20) + "\r\n\r\n", 431},
		{"many small lines", "GET / HTTP/1.1\r\nHost: bus\r\n" + strings.Repeat("X-A: b\r\n", (MaxHeaderBytes+httpHeaderSlack)/8+1) + "\r\n", 431},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := servePipes(t, New(newFakeStore(0), nil), nil)
				c := l.dial()
				defer c.Close()
				br := bufio.NewReader(c)
				io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: bus\r\n\r\n")
				answerOf(t, br, time.Now())
				go io.WriteString(c, tc.req)
				if resp, _ := answerOf(t, br, time.Now()); resp.StatusCode != tc.want {
					t.Errorf("answered %d, want %d", resp.StatusCode, tc.want)
				}
			})
		})
	}
}

// TestFirstHeadersOfTheBoundAreServed: the HTTP server takes a first
// request whose headers are exactly MaxHeaderBytes, all the screen lets
// through, and refuses one byte more, as the screen does.
func TestFirstHeadersOfTheBoundAreServed(t *testing.T) {
	for _, tc := range []struct {
		size, want int
	}{{MaxHeaderBytes, 200}, {MaxHeaderBytes + 1, 431}} {
		synctest.Test(t, func(t *testing.T) {
			l := servePipes(t, New(newFakeStore(0), nil), nil)
			c := l.dial()
			defer c.Close()
			go io.WriteString(c, headersOf(tc.size))
			if resp, _ := answerOf(t, bufio.NewReader(c), time.Now()); resp.StatusCode != tc.want {
				t.Errorf("headers of %d bytes: %d, want %d", tc.size, resp.StatusCode, tc.want)
			}
		})
	}
}

// TestRequestsWithTooManyHeaderLinesRefused: a request with more than
// MaxHeaderFields header lines gets 431 at once and its connection is
// closed, even if it promised a body it never sends, on a new connection
// or a kept one; one with MaxHeaderFields lines is served.
func TestRequestsWithTooManyHeaderLinesRefused(t *testing.T) {
	lines := func(n int) string { return strings.Repeat("X-A: b\r\n", n) }
	for _, tc := range []struct {
		name string
		kept bool
		req  string
		want int
	}{
		{"as many lines as allowed", false, "GET /healthz HTTP/1.1\r\nHost: bus\r\n" + lines(MaxHeaderFields) + "\r\n", 200},
		{"one line too many", false, "GET /healthz HTTP/1.1\r\nHost: bus\r\n" + lines(MaxHeaderFields+1) + "\r\n", 431},
		{"many lines and a body never sent", false, "POST /send HTTP/1.1\r\nHost: bus\r\nContent-Type: application/json\r\n" + lines(500) + "Content-Length: 100\r\n\r\n{", 431},
		{"many distinct lines on a kept connection", true, "GET /roster HTTP/1.1\r\nHost: bus\r\n" + strings.Repeat("X-Many: b\r\nX-More: c\r\n", MaxHeaderFields) + "\r\n", 431},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := servePipes(t, New(newFakeStore(0), nil), nil)
				c := l.dial()
				defer c.Close()
				br := bufio.NewReader(c)
				if tc.kept {
					io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: bus\r\n\r\n")
					answerOf(t, br, time.Now())
				}
				start := time.Now()
				go io.WriteString(c, tc.req)
				resp, at := answerOf(t, br, start)
				if resp.StatusCode != tc.want || at != 0 {
					t.Errorf("answered %d after %v, want %d at once", resp.StatusCode, at, tc.want)
				}
				if tc.want == 431 {
					if !resp.Close {
						t.Error("the connection is kept after 431")
					}
					closedAfter(t, br)
				}
			})
		})
	}
}

// headersOf returns a request whose headers, the empty line included, are
// n bytes long.
func headersOf(n int) string {
	head := "GET / HTTP/1.1\r\nHost: bus\r\nX-Pad: "
	return head + strings.Repeat("a", n-len(head)-len("\r\n\r\n")) + "\r\n\r\n"
}
