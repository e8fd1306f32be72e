package stall

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/loadgen/busclient"
	"github.com/interlink-go/interlink/internal/loadgen/latency"
	"github.com/interlink-go/interlink/internal/loadgen/measure"
	"github.com/interlink-go/interlink/internal/loadgen/target"
)

// DefaultConns is how many connections [Run] stalls of each kind when
// [Options.Conns] is zero.
const DefaultConns = 600

// MaxConns bounds [Options.Conns].
const MaxConns = 100_000

// Options say what [Run] measures.
type Options struct {
	// Command starts each bus process: interlink-bus and any arguments,
	// to which --addr 127.0.0.1:0 is added.
	Command []string
	// Conns is how many connections are stalled of each kind; 0 means
	// [DefaultConns].
	Conns int
	// Kinds names the kinds to measure ([Kinds]); empty means all.
	Kinds []string
}

// stallKind is one way to leave a connection to the bus unfinished.
type stallKind struct {
	name, about string
	// first is a whole request sent and answered before, or empty.
	first string
	// req is sent then, and nothing more.
	req string
}

// stallBody ends headers that promise a body the client never sends.
const stallBody = "Content-Length: 1000\r\n\r\n"

// stallSend starts a send that promises a 2 MiB body and sends one byte.
const stallSend = "POST /send HTTP/1.1\r\nHost: bus\r\nContent-Type: application/json\r\n"

// stallHeaders returns header lines of about n bytes in all: one line, or
// many short ones.
func stallHeaders(n int, many bool) string {
	if many {
		return strings.Repeat("X-A: b\r\n", n/8)
	}
	return "X-Pad: " + strings.Repeat("a", n-len("X-Pad: \r\n")) + "\r\n"
}

// stallKinds returns the kinds [Run] measures, in order. They are
// made when asked for: some requests are large, and every interlink-bus
// links this package.
func stallKinds() []stallKind {
	return []stallKind{
		{name: "headers", about: "a new connection stalled in its first headers",
			req: "GET /healthz HTTP/1.1\r\nHost: bus\r\n"},
		{name: "body", about: "a send stalled after one byte of a 2 MiB body",
			req: stallSend + "Content-Length: 2097152\r\n\r\n{"},
		{name: "chunked", about: "a send whose chunked body never ends",
			req: stallSend + "Transfer-Encoding: chunked\r\n\r\n1\r\n{\r\n"},
		{name: "getbody", about: "GET /healthz with a body declared and never sent",
			req: "GET /healthz HTTP/1.1\r\nHost: bus\r\n" + stallBody},
		{name: "notfound", about: "an unknown path with a body declared and never sent",
			req: "GET /nowhere HTTP/1.1\r\nHost: bus\r\n" + stallBody},
		{name: "method", about: "a wrong method (405) with a body declared and never sent",
			req: "DELETE /roster HTTP/1.1\r\nHost: bus\r\n" + stallBody},
		{name: "kept", about: "a kept connection stalled in its second request's headers",
			first: "GET /healthz HTTP/1.1\r\nHost: bus\r\n\r\n", req: "GET /healthz HTTP/1.1\r\nHost: bus\r\n"},
		{name: "keptbody", about: "a kept connection stalled in its second request's body",
			first: "GET /healthz HTTP/1.1\r\nHost: bus\r\n\r\n", req: stallSend + "Content-Length: 2097152\r\n\r\n{"},
		{name: "bigheader", about: "a send with one header line near the header bound, stalled in its body",
			req: stallSend + stallHeaders(bus.MaxHeaderBytes-256, false) + "Content-Length: 2097152\r\n\r\n{"},
		{name: "manyheaders", about: "a send with short header lines up to near the header bound, stalled in its body",
			req: stallSend + stallHeaders(bus.MaxHeaderBytes-256, true) + "Content-Length: 2097152\r\n\r\n{"},
		{name: "hugeheader", about: "a new connection whose first headers hold a 1 MiB line that never ends",
			req: "GET /healthz HTTP/1.1\r\nHost: bus\r\nX-Huge: " + strings.Repeat("a", 1<<20)},
		{name: "idle", about: "a kept connection idle after one request",
			first: "GET /healthz HTTP/1.1\r\nHost: bus\r\n\r\n"},
		{name: "poll", about: "a long-poll parked for two minutes (what agents do)",
			req: "GET /recv?me=stall&timeout_ms=120000 HTTP/1.1\r\nHost: bus\r\n\r\n"},
	}
}

// Kinds returns the names of the kinds [Run] measures.
func Kinds() []string {
	kinds := stallKinds()
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = k.name
	}
	return out
}

// Check reports a name in names that is not one of [Kinds].
func Check(names []string) error {
	_, err := stallKindsOf(names)
	return err
}

// stallKindsOf returns the kinds named in names, all of them for none.
func stallKindsOf(names []string) ([]stallKind, error) {
	all := stallKinds()
	if len(names) == 0 {
		return all, nil
	}
	var out []stallKind
	for _, n := range names {
		i := slices.IndexFunc(all, func(k stallKind) bool { return k.name == n })
		if i < 0 {
			return nil, fmt.Errorf("unknown stall kind %q (want %s)", n, strings.Join(Kinds(), ", "))
		}
		out = append(out, all[i])
	}
	return out, nil
}

// Run measures, for each kind of stalled connection, the resident memory
// of a bus process with none and with [Options.Conns] of them. Each kind
// gets a bus process of its own, started with [Options.Command], so that
// what one kind left behind does not count for the next. A nil log
// discards its progress notes.
func Run(ctx context.Context, opts Options, log *slog.Logger) ([]measure.Result, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Conns == 0 {
		opts.Conns = DefaultConns
	}
	kinds, err := stallKindsOf(opts.Kinds)
	if err != nil {
		return nil, err
	}
	if err := target.CheckOpenFiles(opts.Conns + 64); err != nil {
		return nil, fmt.Errorf("wake: %w", err)
	}
	var results []measure.Result
	for _, k := range kinds {
		if ctx.Err() != nil {
			break
		}
		res, err := stallOne(ctx, opts, log, k)
		results = append(results, res)
		if err != nil {
			return results, fmt.Errorf("stall %s: %w", k.name, err)
		}
	}
	return results, ctx.Err()
}

// stallOne measures one kind against a bus process of its own.
func stallOne(ctx context.Context, opts Options, log *slog.Logger, k stallKind) (measure.Result, error) {
	res := measure.Result{Name: "stall", Extra: []measure.Field{{Key: "kind", Value: k.name}}}
	p, err := target.StartProcess(ctx, opts.Command)
	if err != nil {
		return res, err
	}
	defer p.Stop()
	log.Info("stall: bus started", "kind", k.name, "pid", p.PID(), "addr", p.Addr)

	// What every serving bus holds: a few whole requests first.
	c := busclient.New("http://"+p.Addr, false, 1)
	defer c.Close()
	for range 20 {
		if err := c.Get(ctx, "/healthz"); err != nil {
			return res, err
		}
	}
	c.Close()
	res.RSSBefore = p.SettledRSS(ctx)
	// The load's own connections are closed by now.
	files := p.OpenFiles()

	n := opts.Conns
	start := time.Now()
	rec := latency.NewRecorder(0)
	conns, failed, firstErr := stallConns(ctx, p.Addr, k, n, rec)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	res.Elapsed = time.Since(start)
	res.Ops, res.Errors, res.FirstError = int64(len(conns)), int64(failed), firstErr
	res.Latency = rec.Summary()
	// Every connection is accepted once the bus holds a file for it; one
	// the bus refused or closed at once never gets there, so the wait
	// ends as soon as the count stops growing.
	if files >= 0 {
		last, lastChange := p.OpenFiles(), time.Now()
		for last < files+len(conns) && time.Since(lastChange) < time.Second && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
			if n := p.OpenFiles(); n != last {
				last, lastChange = n, time.Now()
			}
		}
	}
	res.RSSAfter = p.SettledRSS(ctx)
	held := time.Since(start)
	res.Extra = append(res.Extra, measure.Field{Key: "conns", Value: strconv.Itoa(len(conns))})
	if files >= 0 {
		// The connections the bus holds open, which may be fewer than
		// the client has: those it answered and closed, or refused.
		res.Extra = append(res.Extra, measure.Field{Key: "bus_holds", Value: strconv.Itoa(max(p.OpenFiles()-files, 0))})
	}
	if res.RSSBefore > 0 && res.RSSAfter > 0 && len(conns) > 0 {
		per := (res.RSSAfter - res.RSSBefore) / int64(len(conns))
		res.Extra = append(res.Extra, measure.Field{Key: "per_conn", Value: strconv.FormatFloat(float64(per)/1024, 'f', 1, 64) + "KiB"})
	}
	res.Extra = append(res.Extra, measure.Field{Key: "measured_after", Value: held.Round(10 * time.Millisecond).String()})
	return res, ctx.Err()
}

// stallConns opens n connections to addr, 64 at a time, and stalls each as
// k says, recording in rec how long each took. It returns those it
// stalled, and how many failed and why the first did.
func stallConns(ctx context.Context, addr string, k stallKind, n int, rec *latency.Recorder) (conns []net.Conn, failed int, firstErr string) {
	var mu sync.Mutex
	next := make(chan struct{})
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for range next {
				start := time.Now()
				c, err := stallConn(addr, k)
				rec.Add(time.Since(start))
				mu.Lock()
				if err != nil {
					failed++
					if firstErr == "" {
						firstErr = err.Error()
					}
				} else {
					conns = append(conns, c)
				}
				mu.Unlock()
			}
		})
	}
	for range n {
		if ctx.Err() != nil {
			break
		}
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	return conns, failed, firstErr
}

// stallConn opens one connection to addr and stalls it as k says.
func stallConn(addr string, k stallKind) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if k.first != "" {
		if _, err := io.WriteString(c, k.first); err != nil {
			c.Close()
			return nil, err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			c.Close()
			return nil, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Close {
			c.Close()
			return nil, fmt.Errorf("first request: %d, close %v", resp.StatusCode, resp.Close)
		}
	}
	if _, err := io.WriteString(c, k.req); err != nil {
		c.Close()
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return c, nil
}
