package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// pollResult is the outcome of a long-poll run in the background.
type pollResult struct {
	reply recvReply
	err   error
	at    time.Time // when the reply arrived
}

// pollAsync long-polls route on a real listener in the background.
func pollAsync(ctx context.Context, client *http.Client, base, route string, timeoutMs int) <-chan pollResult {
	out := make(chan pollResult, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+recvTarget(route, timeoutMs), nil)
		if err != nil {
			out <- pollResult{err: err}
			return
		}
		resp, err := client.Do(req)
		if err != nil {
			out <- pollResult{err: err, at: time.Now()}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		res := pollResult{err: err, at: time.Now()}
		if err == nil && resp.StatusCode != http.StatusOK {
			res.err = fmt.Errorf("status %d: %s", resp.StatusCode, body)
		}
		if res.err == nil {
			res.err = json.Unmarshal(body, &res.reply)
		}
		out <- res
	}()
	return out
}

// await returns the result of a background poll, failing after d.
func await(tb testing.TB, ch <-chan pollResult, d time.Duration) pollResult {
	tb.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(d):
		tb.Fatalf("poll did not return within %v", d)
		return pollResult{}
	}
}

// waitParked waits until n polls are registered on route.
func waitParked(tb testing.TB, srv *Server, route string, n int) {
	tb.Helper()
	waitFor(tb, 10*time.Second, fmt.Sprintf("%d polls parked on %q", n, route), func() bool {
		return srv.waiters.parked(route) == n
	})
}

func TestSendWakesAParkedPoll(t *testing.T) {
	h := newMemoryHarness(t, 0, 0)
	base := h.listen()
	var lat []time.Duration
	for i := range 20 {
		route := "wake" + strconv.Itoa(i)
		ch := pollAsync(t.Context(), http.DefaultClient, base, route, 10_000)
		waitParked(t, h.srv, route, 1)
		sent := time.Now()
		h.send(route, `1`)
		r := await(t, ch, 10*time.Second)
		if r.err != nil || r.reply.Status != "message" {
			t.Fatalf("poll %d: %+v", i, r)
		}
		lat = append(lat, r.at.Sub(sent))
	}
	slices.Sort(lat)
	// Loose on purpose: a loaded CI machine under -race is slow. The
	// waiter must only beat its own 10 s timeout by far.
	t.Logf("wake latency: p50 %v, max %v (target < 50ms)", lat[len(lat)/2], lat[len(lat)-1])
	if lat[len(lat)-1] > 5*time.Second {
		t.Errorf("slowest wake took %v", lat[len(lat)-1])
	}
}

// TestSendWakesEveryPollOnTheRoute: one send wakes every poll on the route. The original woke
// only one of them; the others slept until their own timeout.
func TestSendWakesEveryPollOnTheRoute(t *testing.T) {
	h := newMemoryHarness(t, 0, 0)
	base := h.listen()
	const k = 10
	chs := make([]<-chan pollResult, k)
	for i := range chs {
		chs[i] = pollAsync(t.Context(), http.DefaultClient, base, "shared", 10_000)
	}
	waitParked(t, h.srv, "shared", k)
	h.send("shared", `"all"`)
	var ack string
	for i, ch := range chs {
		r := await(t, ch, 5*time.Second)
		if r.err != nil || r.reply.Status != "message" {
			t.Fatalf("poll %d: %+v", i, r)
		}
		if ack == "" {
			ack = r.reply.Ack
		} else if r.reply.Ack != ack {
			t.Errorf("poll %d got %q, others %q", i, r.reply.Ack, ack)
		}
	}
	if n := h.srv.waiters.len(); n != 0 {
		t.Errorf("waiter map holds %d routes", n)
	}
}

func TestSendWakesNoPollOfAnotherRoute(t *testing.T) {
	h := newMemoryHarness(t, 0, 0)
	base := h.listen()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	a := pollAsync(ctx, http.DefaultClient, base, "A", 10_000)
	b := pollAsync(ctx, http.DefaultClient, base, "B", 10_000)
	prefixed := pollAsync(ctx, http.DefaultClient, base, "A#x", 10_000)
	waitParked(t, h.srv, "A", 1)
	waitParked(t, h.srv, "B", 1)
	waitParked(t, h.srv, "A#x", 1)
	h.send("A", `1`)
	if r := await(t, a, 5*time.Second); r.reply.Status != "message" {
		t.Fatalf("A: %+v", r)
	}
	select {
	case r := <-b:
		t.Fatalf("B returned after a send to A: %+v", r)
	case r := <-prefixed:
		t.Fatalf("A#x returned after a send to A: %+v", r)
	case <-time.After(200 * time.Millisecond):
	}
	if h.srv.waiters.parked("B") != 1 || h.srv.waiters.parked("A#x") != 1 {
		t.Errorf("B and A#x should still be parked")
	}
	h.send("B", `2`)
	if r := await(t, b, 5*time.Second); r.reply.Status != "message" || string(r.reply.Envelope.Payload) != "2" {
		t.Fatalf("B: %+v", r)
	}
}

// TestNoWakeupIsLostWhenSendsRacePolls races sends against polls registering and requires
// every poll to see its message long before its deadline.
func TestNoWakeupIsLostWhenSendsRacePolls(t *testing.T) {
	iterations := 10_000
	if testing.Short() {
		iterations = 1_000
	}
	h := newMemoryHarness(t, 0, 0)
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < iterations; i += workers {
				route := "race" + strconv.Itoa(i)
				sent := make(chan int, 1)
				go func() {
					if i%2 == 0 {
						runtime.Gosched()
					}
					sent <- h.do(http.MethodPost, "/send", `{"to":"`+route+`","payload":1}`).Code
				}()
				start := time.Now()
				rec := h.do(http.MethodGet, recvTarget(route, 5_000), "")
				if code := <-sent; code != http.StatusAccepted {
					errs <- fmt.Errorf("iteration %d: send: %d", i, code)
					return
				}
				var r recvReply
				if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil || r.Status != "message" {
					errs <- fmt.Errorf("iteration %d: %s after %v", i, rec.Body, time.Since(start))
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := h.srv.waiters.len(); n != 0 {
		t.Errorf("waiter map holds %d routes", n)
	}
}

// TestWakeBetweenRegisterAndPark drives the window the design closes:
// the message arrives after the poll registered and peeked, before it
// selects. The closed channel must still wake it.
func TestWakeBetweenRegisterAndPark(t *testing.T) {
	h := newMemoryHarness(t, 0, 0)
	wake := h.srv.waiters.register("r")
	if _, ok, _ := h.st.Peek("r"); ok {
		t.Fatal("queue should be empty")
	}
	h.send("r", `1`)
	select {
	case <-wake:
	default:
		t.Fatal("a send after register did not close the channel")
	}
	h.srv.waiters.unregister("r")
	if n := h.srv.waiters.len(); n != 0 {
		t.Errorf("waiter map holds %d routes", n)
	}
}

func TestDisconnectedPollLeavesNothingBehind(t *testing.T) {
	h := newMemoryHarness(t, 0, 0)
	base := h.listen()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	// Warm up: one complete exchange starts whatever the server keeps.
	h.send("warm", `1`)
	if r := await(t, pollAsync(t.Context(), client, base, "warm", 0), 5*time.Second); r.err != nil {
		t.Fatal(r.err)
	}
	settleGoroutines(t, runtime.NumGoroutine())
	baseline := runtime.NumGoroutine()

	for round := range 3 {
		ctx, cancel := context.WithCancel(t.Context())
		chs := make([]<-chan pollResult, 5)
		for i := range chs {
			chs[i] = pollAsync(ctx, client, base, "gone"+strconv.Itoa(i%2), 60_000)
		}
		waitFor(t, 10*time.Second, "5 parked polls", func() bool {
			return h.srv.waiters.parked("gone0")+h.srv.waiters.parked("gone1") == 5
		})
		cancel()
		for _, ch := range chs {
			if r := await(t, ch, 10*time.Second); r.err == nil {
				t.Fatalf("round %d: a cancelled poll succeeded: %+v", round, r)
			}
		}
		waitFor(t, 10*time.Second, "the waiter map to empty", func() bool { return h.srv.waiters.len() == 0 })
	}
	settleGoroutines(t, baseline+2)
}

// TestManyIdlePollsTimeOut parks 5,000 polls that all time out.
func TestManyIdlePollsTimeOut(t *testing.T) {
	n := 5_000
	if testing.Short() {
		n = 1_000
	}
	h := newMemoryHarness(t, 0, 0)
	baseline := runtime.NumGoroutine()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		bad  []string
		peak int
	)
	start := time.Now()
	for i := range n {
		route := "idle" + strconv.Itoa(i%(n/2)) // two polls per route
		wg.Go(func() {
			t0 := time.Now()
			rec := h.do(http.MethodGet, recvTarget(route, 50), "")
			d := time.Since(t0)
			if rec.Code != http.StatusOK || rec.Body.String() != `{"status":"timeout"}` || d < 50*time.Millisecond {
				mu.Lock()
				bad = append(bad, fmt.Sprintf("%s: %d %s after %v", route, rec.Code, rec.Body, d))
				mu.Unlock()
			}
		})
		if i == n-1 {
			peak = h.srv.waiters.len()
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	if len(bad) > 0 {
		t.Fatalf("%d of %d polls misbehaved, first: %s", len(bad), n, bad[0])
	}
	if elapsed > 30*time.Second {
		t.Errorf("%d polls of 50 ms took %v", n, elapsed)
	}
	if l := h.srv.waiters.len(); l != 0 {
		t.Errorf("waiter map holds %d routes after every poll ended", l)
	}
	t.Logf("%d polls in %v; waiter map peaked at about %d routes", n, elapsed, peak)
	settleGoroutines(t, baseline+2)
}

// TestPollsOfManyRoutesLeaveNothingBehind: non-blocking polls of many routes leave nothing
// behind, nor do long-polls that find a message at once.
func TestPollsOfManyRoutesLeaveNothingBehind(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	h := newMemoryHarness(t, 0, 0)
	for i := range n {
		rec := h.do(http.MethodGet, "/recv?timeout_ms=0&me=d"+strconv.Itoa(i), "")
		if rec.Code != http.StatusOK {
			t.Fatalf("poll %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	if l := h.srv.waiters.len(); l != 0 {
		t.Errorf("waiter map holds %d routes after %d non-blocking polls", l, n)
	}
	for i := range 1000 {
		route := "full" + strconv.Itoa(i)
		h.send(route, `1`)
		if r := h.poll(route, 10_000); r.Status != "message" {
			t.Fatalf("%s: %+v", route, r)
		}
	}
	if l := h.srv.waiters.len(); l != 0 {
		t.Errorf("waiter map holds %d routes after polls that found messages", l)
	}
}

// TestParkedPollsAllReturn parks 500 polls on different routes over real
// connections and answers each with a message.
func TestParkedPollsAllReturn(t *testing.T) {
	h := newMemoryHarness(t, 0, 0)
	base := h.listen()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 500}}
	defer client.CloseIdleConnections()
	const n = 500
	chs := make([]<-chan pollResult, n)
	for i := range chs {
		chs[i] = pollAsync(t.Context(), client, base, "p"+strconv.Itoa(i), 30_000)
	}
	waitFor(t, 20*time.Second, "500 parked routes", func() bool { return h.srv.waiters.len() == n })
	for i := range n {
		h.send("p"+strconv.Itoa(i), strconv.Itoa(i))
	}
	for i, ch := range chs {
		r := await(t, ch, 20*time.Second)
		if r.err != nil || r.reply.Status != "message" || string(r.reply.Envelope.Payload) != strconv.Itoa(i) {
			t.Fatalf("poll %d: %+v", i, r)
		}
	}
	if l := h.srv.waiters.len(); l != 0 {
		t.Errorf("waiter map holds %d routes", l)
	}
}

// TestBadInputKeepsServing sends the usual garbage over real connections
// and checks that each gets a 4xx and the bus still works afterwards.
func TestBadInputKeepsServing(t *testing.T) {
	h := newMemoryHarness(t, 0, 0)
	base := h.listen()
	huge := paddedBody(t, `{"to":"a","payload":"`, `"}`, 3<<20)
	cases := []struct {
		name, method, path, body string
		chunked                  bool
	}{
		{"malformed JSON", http.MethodPost, "/send", `{"to":`, false},
		{"3 MiB", http.MethodPost, "/send", string(huge), false},
		{"3 MiB chunked", http.MethodPost, "/send", string(huge), true},
		{"3 MiB announce", http.MethodPost, "/announce", string(huge), true},
		{"NUL route", http.MethodPost, "/send", `{"to":"a\u0000b","payload":1}`, false},
		{"NUL query", http.MethodGet, "/recv?me=a%00b", "", false},
		{"unknown path", http.MethodGet, "/admin", "", false},
		{"unknown path with body", http.MethodPost, "/delete", `{}`, false},
	}
	for _, tc := range cases {
		var rd io.Reader = strings.NewReader(tc.body)
		if tc.chunked {
			rd = hideLen{rd}
		}
		req, err := http.NewRequest(tc.method, base+tc.path, rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		code, body := httpDo(t, http.DefaultClient, req)
		if code/100 != 4 {
			t.Errorf("%s: %d %s, want 4xx", tc.name, code, body)
		}
		checkErrorBody(t, code, body)
	}
	resp, err := http.Post(base+"/send", "application/json", strings.NewReader(`{"to":"after","payload":"ok"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("send after bad input: %d", resp.StatusCode)
	}
	if r := await(t, pollAsync(t.Context(), http.DefaultClient, base, "after", 0), 5*time.Second); r.reply.Status != "message" {
		t.Errorf("recv after bad input: %+v", r)
	}
}

// TestShutdown: parked polls answer timeout promptly, new polls do not
// wait, and http.Server.Shutdown finishes instead of waiting for them.
func TestShutdown(t *testing.T) {
	h := newMemoryHarness(t, 0, 0)
	ts := httptest.NewUnstartedServer(h.srv)
	ts.Config.RegisterOnShutdown(h.srv.Shutdown)
	ts.Start()
	defer ts.Close()
	chs := make([]<-chan pollResult, 5)
	for i := range chs {
		chs[i] = pollAsync(t.Context(), http.DefaultClient, ts.URL, "s"+strconv.Itoa(i%2), 60_000)
	}
	waitFor(t, 10*time.Second, "5 parked polls", func() bool {
		return h.srv.waiters.parked("s0")+h.srv.waiters.parked("s1") == 5
	})
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := ts.Config.Shutdown(ctx); err != nil {
		t.Fatalf("http shutdown: %v", err)
	}
	for i, ch := range chs {
		r := await(t, ch, 5*time.Second)
		if r.err != nil || r.reply.Status != "timeout" {
			t.Errorf("poll %d: %+v", i, r)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("shutdown took %v", d)
	}
	// A poll that arrives after Shutdown looks once and returns.
	start = time.Now()
	rec := h.do(http.MethodGet, "/recv?me=late&timeout_ms=60000", "")
	if rec.Body.String() != `{"status":"timeout"}` || time.Since(start) > 5*time.Second {
		t.Errorf("late poll: %s after %v", rec.Body, time.Since(start))
	}
	h.send("late", `1`)
	if r := h.poll("late", 60_000); r.Status != "message" {
		t.Errorf("late poll with a message waiting: %+v", r)
	}
	h.srv.Shutdown() // a second call is harmless
}
