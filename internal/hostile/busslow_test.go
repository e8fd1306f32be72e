//go:build unix

package hostile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/testutil"
)

// stalledConns is how many connections the test holds open at once.
const stalledConns = 3000

// stallRequest is a send whose body the bus waits for: the headers promise
// 2 MiB and ask the bus to say when it starts reading them.
const stallRequest = "POST /send HTTP/1.1\r\nHost: bus\r\nContent-Type: application/json\r\n" +
	"Content-Length: 2097152\r\nExpect: 100-continue\r\n\r\n"

// stall opens a connection to addr, sends stallRequest and returns once the
// bus has answered 100 Continue, which it does when its handler starts
// reading the body; one byte of the body follows.
func stall(addr string) (net.Conn, *bufio.Reader, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, nil, err
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	if _, err := io.WriteString(c, stallRequest); err != nil {
		c.Close()
		return nil, nil, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusContinue {
		c.Close()
		return nil, nil, fmt.Errorf("status %d, want 100", resp.StatusCode)
	}
	if _, err := io.WriteString(c, "{"); err != nil {
		c.Close()
		return nil, nil, err
	}
	c.SetDeadline(time.Time{})
	return c, br, nil
}

// raiseFileLimit makes sure this process may hold n sockets, or skips the
// test. The bus, a Go program, raises its own limit to the same hard limit.
func raiseFileLimit(t *testing.T, n uint64) {
	t.Helper()
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Skipf("reading the open-file limit: %v", err)
	}
	if rl.Cur >= n+256 {
		return
	}
	rl.Cur = min(rl.Max, n+256)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur < n+256 {
		t.Skipf("cannot raise the open-file limit to %d (hard limit %d): %v", n+256, rl.Max, err)
	}
}

// headerStallBound is the most memory a new connection stalled in its
// first headers may cost the bus. The bus screens such a connection before
// Go's HTTP server sees it: a small goroutine waits on the socket, with
// the bytes left in the kernel.
const headerStallBound = 16 << 10

// stallBound is the most memory a connection stalled in its body may cost
// the bus. Go's HTTP server holds its 4 KiB read and 4 KiB write buffers,
// a 2 KiB response buffer, the parsed request and a handler goroutine with
// a 4 KiB stack. The bus's own part is a 64-byte body buffer; it used to
// be up to 64 KiB for a body declared and not sent.
const stallBound = 20 << 10

// keptStallBound is the most memory a kept connection stalled in a later
// request's headers may cost the bus. It has passed the screen with its
// first request, so it costs what Go's HTTP server holds for it, with a
// goroutine whose stack the first request's handler has grown to 8 KiB
// and what that request left for the collector.
const keptStallBound = 24 << 10

// stallFiles is how many files this process may need for the stall tests,
// which may all run at once.
const stallFiles = 3*stalledConns + 64

// openStalled opens n connections to addr with open, 64 at a time, and
// returns them with their readers; open returns once its connection is
// stalled where the test wants it.
func openStalled(t *testing.T, addr string, n int, open func(string) (net.Conn, *bufio.Reader, error)) ([]net.Conn, []*bufio.Reader) {
	t.Helper()
	conns := make([]net.Conn, n)
	readers := make([]*bufio.Reader, n)
	t.Cleanup(func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 64 {
		wg.Go(func() {
			for i := range next {
				c, br, err := open(addr)
				if err != nil {
					errs <- fmt.Errorf("connection %d: %v", i, err)
					continue
				}
				conns[i], readers[i] = c, br
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return conns, readers
}

// warmUp sends a few whole requests, so that a baseline taken afterwards
// includes what any serving bus holds.
func warmUp(t *testing.T, p *busProcess) {
	t.Helper()
	for i := range 50 {
		resp, err := http.Post(p.base+"/send", "application/json", strings.NewReader(fmt.Sprintf(`{"to":"warm","payload":%d}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
}

// openFiles returns how many files the bus process has open.
func (p *busProcess) openFiles(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/fd")
	if err != nil {
		t.Skipf("counting the bus's open files: %v", err)
	}
	return len(fds)
}

// TestStalledHeadersCheapAndCutOff: 3,000 clients that open a connection
// and stop in the middle of its first request's headers cost the bus a
// few KiB each, and the bus closes them all once its header deadline
// passes.
func TestStalledHeadersCheapAndCutOff(t *testing.T) {
	checkHeaderStalls(t, "in their first headers", headerStallBound, func(net.Conn, *bufio.Reader) error { return nil })
}

// TestKeptConnectionsStalledInALaterRequestCutOff: 3,000 clients that send
// one whole request on their connection and stop in the middle of the
// next one's headers cost the bus no more than Go's HTTP server needs for
// a connection, and the bus closes them all once the header deadline
// passes.
func TestKeptConnectionsStalledInALaterRequestCutOff(t *testing.T) {
	checkHeaderStalls(t, "in a later request's headers", keptStallBound, func(c net.Conn, br *bufio.Reader) error {
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: bus\r\n\r\n"); err != nil {
			return err
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Close {
			return fmt.Errorf("first request: status %d, close %v; want 200 on a kept connection", resp.StatusCode, resp.Close)
		}
		return nil
	})
}

// checkHeaderStalls opens stalledConns connections to a new bus, runs
// first on each, then sends half a request's headers and stops. Each
// connection must cost the bus less than bound, and all must be closed by
// the bus's header deadline.
func checkHeaderStalls(t *testing.T, where string, bound int64, first func(net.Conn, *bufio.Reader) error) {
	if testing.Short() {
		t.Skip("holds 3,000 connections until the bus's header deadline")
	}
	t.Parallel()
	raiseFileLimit(t, stallFiles)
	p := startBusProcess(t)
	addr := strings.TrimPrefix(p.base, "http://")
	warmUp(t, p)
	before, _ := p.memory(t)
	files := p.openFiles(t)
	conns, readers := openStalled(t, addr, stalledConns, func(addr string) (net.Conn, *bufio.Reader, error) {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			return nil, nil, err
		}
		br := bufio.NewReader(c)
		c.SetDeadline(time.Now().Add(30 * time.Second))
		if err := first(c, br); err != nil {
			c.Close()
			return nil, nil, err
		}
		c.SetDeadline(time.Time{})
		if _, err := io.WriteString(c, "POST /send HTTP/1.1\r\nHost: bus\r\nContent-Type: app"); err != nil {
			c.Close()
			return nil, nil, err
		}
		return c, br, nil
	})
	// Every connection is accepted once the bus holds a file for each;
	// what it allocates for them comes at once after.
	testutil.Eventually(t, 30*time.Second, "the bus to accept every connection", func() bool {
		return p.openFiles(t) >= files+stalledConns
	})
	var after int64
	testutil.Eventually(t, 10*time.Second, "the bus's memory to settle", func() bool {
		prev := after
		after, _ = p.memory(t)
		return after == prev
	})
	per := (after - before) / stalledConns
	t.Logf("%d connections stalled %s: bus resident memory %s before, %s after, %d bytes each (bound %d)",
		stalledConns, where, mib(before), mib(after), per, bound)
	if per >= bound {
		t.Errorf("each connection stalled %s costs the bus %d bytes, want under %d", where, per, bound)
	}
	var wg sync.WaitGroup
	open := make(chan int, stalledConns)
	for i, c := range conns {
		wg.Go(func() {
			c.SetReadDeadline(time.Now().Add(time.Minute))
			if _, err := readers[i].ReadByte(); !errors.Is(err, io.EOF) {
				open <- i
			}
		})
	}
	wg.Wait()
	close(open)
	if n := len(open); n > 0 {
		t.Errorf("%d of %d connections stalled %s were not closed by the bus", n, stalledConns, where)
	}
}

// TestSlowBodiesCutOffStalledBodiesCheap: 3,000 clients that declare a
// 2 MiB body and send one byte of it cost the bus a few KiB each, not a
// buffer sized by the declared length; a client that sends its body one
// byte a second is cut off with 408 after 30 s, as are all the stalled
// ones; the bus serves on.
func TestSlowBodiesCutOffStalledBodiesCheap(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the 30 s body deadline")
	}
	t.Parallel()
	raiseFileLimit(t, stallFiles)
	p := startBusProcess(t)
	addr := strings.TrimPrefix(p.base, "http://")
	warmUp(t, p)
	before, _ := p.memory(t)

	// The trickler stalls first, so its deadline runs out first.
	trickler, tbr, err := stall(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer trickler.Close()
	trickleStart := time.Now()
	type cut struct {
		sent int
		line string
		err  error
	}
	trickled := make(chan cut, 1)
	go func() {
		sent := 1
		lines := make(chan string, 1)
		go func() {
			line, _ := tbr.ReadString('\n')
			lines <- line
		}()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case line := <-lines:
				trickled <- cut{sent: sent, line: line}
				return
			case <-tick.C:
				if _, err := io.WriteString(trickler, "x"); err != nil {
					trickled <- cut{sent: sent, line: <-lines, err: err}
					return
				}
				sent++
			}
		}
	}()

	conns, readers := openStalled(t, addr, stalledConns, stall)
	after, peak := p.memory(t)
	per := (after - before) / stalledConns
	t.Logf("%d connections stalled in a 2 MiB body: bus resident memory %s before, %s after, %d bytes each (bound %d); peak %s",
		stalledConns, mib(before), mib(after), per, stallBound, mib(peak))
	if per >= stallBound {
		t.Errorf("each connection stalled in its body costs the bus %d bytes, want under %d", per, stallBound)
	}

	// The trickler is cut off while still sending, about 30 s after its
	// handler started, and gets 408.
	select {
	case c := <-trickled:
		t.Logf("the one-byte-a-second client was cut off after %v, having sent %d bytes of its body",
			time.Since(trickleStart).Round(100*time.Millisecond), c.sent)
		if !strings.HasPrefix(c.line, "HTTP/1.1 408 ") {
			t.Errorf("the trickler got %q (%v), want 408", c.line, c.err)
		}
		// At one byte a second, 25 bytes means it was not cut early.
		if c.sent < 25 {
			t.Errorf("the trickler was cut off after sending only %d bytes", c.sent)
		}
	case <-time.After(bus.DefaultRequestTimeout + 30*time.Second):
		t.Fatal("the one-byte-a-second client was never cut off")
	}

	// Every stalled connection gets 408 and is closed.
	var cutWG sync.WaitGroup
	bad := make(chan string, stalledConns)
	for i, c := range conns {
		cutWG.Go(func() {
			c.SetReadDeadline(time.Now().Add(bus.DefaultRequestTimeout + 30*time.Second))
			resp, err := http.ReadResponse(readers[i], nil)
			if err != nil {
				bad <- fmt.Sprintf("connection %d: %v", i, err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != http.StatusRequestTimeout || !resp.Close {
				bad <- fmt.Sprintf("connection %d: status %d, close %v", i, resp.StatusCode, resp.Close)
				return
			}
			if _, err := readers[i].ReadByte(); !errors.Is(err, io.EOF) {
				bad <- fmt.Sprintf("connection %d still open after its 408: %v", i, err)
			}
		})
	}
	cutWG.Wait()
	close(bad)
	n := 0
	for msg := range bad {
		if n++; n <= 5 {
			t.Error(msg)
		}
	}
	if n > 0 {
		t.Errorf("%d of %d stalled connections were not cut off with 408", n, stalledConns)
	}

	resp, err := http.Get(p.base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("after the attack /healthz answers %d", resp.StatusCode)
	}
}
