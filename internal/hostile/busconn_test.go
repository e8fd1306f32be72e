//go:build unix

package hostile

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/testutil"
	"github.com/interlink-go/interlink/internal/wire"
)

// stalledKind is one way a client leaves a request unfinished, and what
// the bus must answer before it closes the connection.
type stalledKind struct {
	name string
	// first is a whole request sent and answered on the connection
	// before, or empty.
	first string
	// req is sent at once; trickle then sends one byte every 50 ms
	// until the answer comes.
	req     string
	trickle bool
	// want is the status of the answer; 0 means the connection is
	// closed without one.
	want int
}

// declared ends headers that promise a body the client never sends.
const declared = "Content-Length: 1000\r\n\r\n"

// stalledKinds are the ways to stall a request that every route, status
// and handler must bound.
var stalledKinds = []stalledKind{
	{name: "in its first headers", req: "GET /healthz HTTP/1.1\r\nHost: bus\r\n", want: 0},
	{name: "GET /healthz with a body declared", req: "GET /healthz HTTP/1.1\r\nHost: bus\r\n" + declared, want: 200},
	{name: "GET /roster with a body declared", req: "GET /roster HTTP/1.1\r\nHost: bus\r\n" + declared, want: 200},
	{name: "GET / with a body declared", req: "GET / HTTP/1.1\r\nHost: bus\r\n" + declared, want: 200},
	{name: "GET /recv with a body declared", req: "GET /recv?me=x&timeout_ms=0 HTTP/1.1\r\nHost: bus\r\n" + declared, want: 200},
	{name: "an unknown path", req: "GET /nowhere HTTP/1.1\r\nHost: bus\r\n" + declared, want: 404},
	{name: "a wrong method", req: "DELETE /roster HTTP/1.1\r\nHost: bus\r\n" + declared, want: 405},
	{name: "a body that is not JSON", req: "POST /announce HTTP/1.1\r\nHost: bus\r\nContent-Type: text/plain\r\n" + declared, want: 415},
	{name: "a body stalled after one byte", req: "POST /send HTTP/1.1\r\nHost: bus\r\nContent-Type: application/json\r\n" + declared + "{", want: 408},
	{name: "a chunked body that never ends", req: "POST /send HTTP/1.1\r\nHost: bus\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n", want: 408},
	{name: "a body trickled to a route that does not read it", req: "POST /healthz HTTP/1.1\r\nHost: bus\r\n" + declared, trickle: true, want: 405},
	{name: "a body trickled to a route that reads it", req: "POST /send HTTP/1.1\r\nHost: bus\r\nContent-Type: application/json\r\n" + declared, trickle: true, want: 408},
	{name: "a pipelined request with a body declared", req: "GET /healthz HTTP/1.1\r\nHost: bus\r\n\r\nGET /nowhere HTTP/1.1\r\nHost: bus\r\n" + declared, want: 404},
	{name: "many header lines with a body declared", req: "GET /healthz HTTP/1.1\r\nHost: bus\r\n" + strings.Repeat("X-A: b\r\n", 100) + declared, want: 431},
	{name: "a kept connection in its second headers", first: "GET /healthz HTTP/1.1\r\nHost: bus\r\n\r\n", req: "GET /healthz HTTP/1.1\r\nHost: bus\r\n", want: 0},
	{name: "a kept connection with a second body declared", first: "GET /healthz HTTP/1.1\r\nHost: bus\r\n\r\n", req: "GET /roster HTTP/1.1\r\nHost: bus\r\n" + declared, want: 200},
}

// stallOne opens a connection to addr, stalls it as k says, and returns
// it with its reader once the stall has started.
func stallOne(addr string, k stalledKind) (net.Conn, *bufio.Reader, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReader(c)
	if k.first != "" {
		c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.WriteString(c, k.first); err != nil {
			c.Close()
			return nil, nil, err
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			c.Close()
			return nil, nil, err
		}
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK || resp.Close {
			c.Close()
			return nil, nil, fmt.Errorf("first request: %d, close %v", resp.StatusCode, resp.Close)
		}
		c.SetDeadline(time.Time{})
	}
	if _, err := io.WriteString(c, k.req); err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, br, nil
}

// awaitCutOff waits up to limit for the bus to answer c as k says and
// close it, and returns what went otherwise.
func awaitCutOff(c net.Conn, br *bufio.Reader, k stalledKind, limit time.Duration) error {
	c.SetReadDeadline(time.Now().Add(limit))
	answered := make(chan struct{})
	defer close(answered)
	if k.trickle {
		go func() {
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-answered:
					return
				case <-tick.C:
					if _, err := io.WriteString(c, "x"); err != nil {
						return
					}
				}
			}
		}()
	}
	if strings.Count(k.req, "HTTP/1.1\r\n") == 2 { // pipelined: the first is answered at once
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return fmt.Errorf("first pipelined request: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
	}
	if k.want == 0 {
		if b, err := br.ReadByte(); !errors.Is(err, io.EOF) {
			return fmt.Errorf("read %q, %v; want the connection closed without an answer", b, err)
		}
		return nil
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return fmt.Errorf("no answer: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != k.want {
		return fmt.Errorf("answered %d, want %d", resp.StatusCode, k.want)
	}
	if b, err := br.ReadByte(); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		return fmt.Errorf("after the answer read %q, %v; want the connection closed", b, err)
	}
	return nil
}

// checkCutOff opens n connections of each stalled kind to the bus at
// base, the kinds side by side, and checks that within limit every one is answered as its kind
// says and closed, and that the bus then still serves.
func checkCutOff(t *testing.T, base string, kinds []stalledKind, n int, limit time.Duration) {
	addr := strings.TrimPrefix(base, "http://")
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := range n {
				wg.Go(func() {
					c, br, err := stallOne(addr, k)
					if err != nil {
						errs <- fmt.Errorf("connection %d: %v", i, err)
						return
					}
					defer c.Close()
					if err := awaitCutOff(c, br, k, limit); err != nil {
						errs <- fmt.Errorf("connection %d: %v", i, err)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
	t.Cleanup(func() {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			t.Errorf("after the stalls: %v", err)
			return
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("after the stalls /healthz answers %d", resp.StatusCode)
		}
	})
}

// TestStalledRequestsOfEveryKindAreCutOff: however a client leaves its
// request unfinished, on whatever route and with whatever status, the bus
// answers it (or, in headers, drops it) and closes the connection once
// the request's deadline passes; it never holds one for good.
func TestStalledRequestsOfEveryKindAreCutOff(t *testing.T) {
	base := bustest.Start(t, &bustest.Options{HeaderTimeout: time.Second, RequestTimeout: time.Second})
	checkCutOff(t, base, stalledKinds, 10, 30*time.Second)
}

// TestBusProcessCutsOffRequestsWhoseBodyNeverComes: the same, against
// interlink-bus with its own deadlines, for the kinds whose handler never
// reads the body.
func TestBusProcessCutsOffRequestsWhoseBodyNeverComes(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the bus's 30 s request deadline")
	}
	p := startBusProcess(t)
	var kinds []stalledKind
	for _, k := range stalledKinds {
		switch k.want {
		case 200, 404, 405, 415:
			kinds = append(kinds, k)
		}
	}
	checkCutOff(t, p.base, kinds, 5, bus.DefaultRequestTimeout+bus.AnswerTimeout+30*time.Second)
}

// smallReadBuffer dials with a receive buffer of 4 KiB, so that an answer
// the client does not read fills what the kernels hold for it quickly.
var smallReadBuffer = &net.Dialer{Timeout: 10 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
	var err error
	rc.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	return err
}}

// TestLargeAnswerNobodyReadsIsCutOff: a client that asks for the full
// roster, four times over on one connection, and never reads the answers
// holds its connection only until the first answer's deadline; the bus
// then closes it, with most of what was asked for unsent.
func TestLargeAnswerNobodyReadsIsCutOff(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out an answer's 10 s deadline")
	}
	conns := new(bus.ConnStats)
	base := bustest.Start(t, &bustest.Options{RequestTimeout: time.Second, Conns: conns})
	// About 6 MiB of roster.
	pad := strings.Repeat("x", wire.MaxAnnounceBytes-200)
	client := &http.Client{}
	for i := range bus.MaxRosterBytes / wire.MaxAnnounceBytes {
		resp, err := client.Post(base+"/announce", "application/json",
			strings.NewReader(fmt.Sprintf(`{"pubkey":"key%05d","name":%q}`, i, pad)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	resp, err := client.Get(base + "/roster")
	if err != nil {
		t.Fatal(err)
	}
	one, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	client.CloseIdleConnections()
	testutil.Eventually(t, 10*time.Second, "the client's connections to close", func() bool {
		return conns.Limit().Open() == 0
	})

	c, err := smallReadBuffer.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, strings.Repeat("GET /roster HTTP/1.1\r\nHost: bus\r\n\r\n", 4)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the bus to take the connection", func() bool {
		return conns.Limit().Open() == 1
	})
	testutil.Eventually(t, 60*time.Second, "the bus to close the connection nobody reads", func() bool {
		return conns.Limit().Open() == 0
	})
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, _ := io.Copy(io.Discard, c)
	t.Logf("after the bus closed the connection, the client could read %d bytes of the %d it asked for", got, 4*one)
	if got >= 2*one {
		t.Errorf("the client could read %d bytes of the %d it asked for: the bus wrote on after the deadline", got, 4*one)
	}
}

// dialFrom returns a client whose connections come from the local address
// ip, a client of its own for the bus; the test is skipped where that
// address cannot be used.
func dialFrom(t *testing.T, ip string) *net.Dialer {
	t.Helper()
	d := &net.Dialer{Timeout: 10 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Skipf("cannot connect from %s on this system: %v", ip, err)
	}
	c.Close()
	return d
}

// clientFrom returns an HTTP client whose connections come from d.
func clientFrom(d *net.Dialer) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
}

// hog opens n connections to addr from 127.0.0.1, each stalled with a
// body declared to a route that never reads it, and returns those the bus
// took: the rest it closed at once, before or after the request was
// written.
func hog(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	var (
		mu   sync.Mutex
		held []net.Conn
		wg   sync.WaitGroup
	)
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	next := make(chan int)
	for range 32 {
		wg.Go(func() {
			for range next {
				c, err := net.DialTimeout("tcp", addr, 10*time.Second)
				if err != nil {
					continue
				}
				if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: bus\r\n"+declared); err != nil {
					c.Close()
					continue
				}
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return held
}

// TestClientHoldingEveryConnectionCannotLockOthersOut: a client that takes
// every connection the bus has room for, each stalled in a request that
// would hold it until its deadline, cannot keep another client out: the
// newcomer is served at once, in place of the hog's oldest connections,
// and the hog gets no more than it had.
func TestClientHoldingEveryConnectionCannotLockOthersOut(t *testing.T) {
	const capacity = 40
	victim := dialFrom(t, "127.0.0.2")
	conns := new(bus.ConnStats)
	base := bustest.Start(t, &bustest.Options{MaxConns: capacity, Conns: conns})
	addr := strings.TrimPrefix(base, "http://")
	hog(t, addr, capacity)
	testutil.Eventually(t, 10*time.Second, "the hog to hold every connection", func() bool {
		return conns.Limit().Open() == capacity && conns.Screen().Waiting() == 0
	})
	// More from the hog are refused.
	more := hog(t, addr, 10)
	testutil.Eventually(t, 10*time.Second, "the hog's further connections to be refused", func() bool {
		return conns.Limit().Refused() == 10
	})
	for _, c := range more {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if b, err := bufio.NewReader(c).ReadByte(); err == nil {
			t.Fatalf("a refused connection of the hog read %q", b)
		}
	}
	// The other client is served, over connections of its own.
	vc := clientFrom(victim)
	for i := range 10 {
		c, err := victim.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: bus\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("the other client's connection %d: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the other client's connection %d: %d", i, resp.StatusCode)
		}
	}
	resp, err := vc.Get(base + "/roster")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := conns.Limit().Shed(); n != 11 {
		t.Errorf("%d of the hog's connections shed for 11 of the other client, want 11", n)
	}
	if n := conns.Limit().Open(); n != capacity {
		t.Errorf("%d connections open, want %d", n, capacity)
	}
}

// headersOfSize returns a request whose headers, the empty line that
// ends them included, are exactly n bytes long.
func headersOfSize(n int) string {
	head := "GET /healthz HTTP/1.1\r\nHost: bus\r\nX-Pad: "
	return head + strings.Repeat("a", n-len(head)-len("\r\n\r\n")) + "\r\n\r\n"
}

// TestBusProcessBoundsHeaderBytesOnce: interlink-bus refuses headers over
// its bound with 431, whether the header screen sees them (a new
// connection) or Go's HTTP server alone (a kept connection), and whether
// they are one long line or many short ones; headers of the bound pass.
func TestBusProcessBoundsHeaderBytesOnce(t *testing.T) {
	p := startBusProcess(t)
	addr := strings.TrimPrefix(p.base, "http://")
	long := "GET /healthz HTTP/1.1\r\nHost: bus\r\nX-Long: " + strings.Repeat("a", 1<<20) + "\r\n\r\n"
	many := "GET /healthz HTTP/1.1\r\nHost: bus\r\n" + strings.Repeat("X-A: b\r\n", (bus.MaxHeaderBytes+4096)/8+1) + "\r\n"
	for _, tc := range []struct {
		name string
		kept bool // sent as a connection's second request
		req  string
		want int
	}{
		{"a first request with headers of the bound", false, headersOfSize(bus.MaxHeaderBytes), 200},
		{"a first request with a 1 MiB header line", false, long, 431},
		{"a first request with many small header lines", false, many, 431},
		{"a kept connection's request with headers of the bound", true, headersOfSize(bus.MaxHeaderBytes), 200},
		{"a kept connection's request with a 1 MiB header line", true, long, 431},
		{"a kept connection's request with many small header lines", true, many, 431},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.DialTimeout("tcp", addr, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			br := bufio.NewReader(c)
			if tc.kept {
				io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: bus\r\n\r\n")
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
			}
			// The bus may answer before the client is done sending.
			go io.WriteString(c, tc.req)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != tc.want {
				t.Errorf("answered %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

// startBusWithFiles is startBusProcess for a bus whose open-file limit,
// soft and hard, is files.
func startBusWithFiles(tb testing.TB, files int) *busProcess {
	tb.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		tb.Skipf("no shell to set the bus's open-file limit: %v", err)
	}
	return startBusArgv(tb, []string{sh, "-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, files),
		testutil.BuildBus(tb), "--addr", "127.0.0.1:0"})
}

// TestBusWithFewFilesServesOthersWhileOneClientHoldsMany: a bus allowed
// 256 open files, and a client that opens 600 connections to it, each
// stalled with a body declared to a route that never reads it: another
// client is still served at once, and the bus says what its limit allows.
func TestBusWithFewFilesServesOthersWhileOneClientHoldsMany(t *testing.T) {
	victim := dialFrom(t, "127.0.0.2")
	raiseFileLimit(t, 1000)
	p := startBusWithFiles(t, 256)
	if !strings.Contains(p.logs.String(), `msg="connection limit" max=192 open_file_limit=256`) {
		t.Errorf("the bus did not log its connection limit:\n%s", p.logs.String())
	}
	addr := strings.TrimPrefix(p.base, "http://")
	start := time.Now()
	held := hog(t, addr, 600)
	t.Logf("the hog got %d of its 600 connections written in %v", len(held), time.Since(start))
	vc := clientFrom(victim)
	defer vc.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/healthz", nil)
	start = time.Now()
	resp, err := vc.Do(req)
	if err != nil {
		t.Fatalf("another client is locked out: %v", err)
	}
	t.Logf("another client was answered in %v", time.Since(start))
	// Read whole, so that the next request goes on the same connection.
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("another client got %d", resp.StatusCode)
	}
	resp, err = vc.Get(p.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"interlink_bus_connections_max 192\n", "interlink_bus_connections_open 192\n",
		"interlink_bus_connections_shed_total 1\n"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, grepLines(string(body), "interlink_bus_connections"))
		}
	}
}

// grepLines returns the lines of s that hold sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
