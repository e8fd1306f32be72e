package main

// Tests of buses on NATS JetStream as processes: the NATS server runs in
// the test process (natstest), the buses are the built interlink-bus.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/interlink-go/interlink/internal/store/natstest"
	"github.com/interlink-go/interlink/internal/testutil"
)

// natsBus starts interlink-bus with its queues in stream on srv.
func natsBus(t *testing.T, srv *natstest.Server, stream string, extra ...string) *busProc {
	t.Helper()
	args := append([]string{"--addr", "127.0.0.1:0", "--nats", srv.URL(), "--nats-stream", stream}, extra...)
	return startBus(t, busEnv(), args...)
}

// parkedPolls returns interlink_bus_longpolls_parked from the bus's
// /metrics.
func parkedPolls(t *testing.T, base string) int {
	t.Helper()
	_, body := get(t, base, "/metrics")
	m := regexp.MustCompile(`(?m)^interlink_bus_longpolls_parked (\d+)$`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("/metrics has no parked polls:\n%s", body)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// rosterWithoutAges returns the bus's roster with every age_ms removed,
// since two buses answer at different moments.
func rosterWithoutAges(t *testing.T, base string) []map[string]any {
	t.Helper()
	code, body := get(t, base, "/roster")
	if code != http.StatusOK {
		t.Fatalf("/roster: %d %s", code, body)
	}
	var r struct{ Roster []map[string]any }
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("/roster %s: %v", body, err)
	}
	for _, e := range r.Roster {
		delete(e, "age_ms")
	}
	return r.Roster
}

// Two bus processes on one stream: what is sent through one is received
// and acknowledged through the other, in order; a poll parked on one
// wakes for a send through the other; both list the same roster.
func TestTwoBusProcessesOnOneStream(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	a, b := natsBus(t, srv, "TWO"), natsBus(t, srv, "TWO")
	if len(logLines(a.logs.String(), "queues and roster in NATS JetStream")) != 1 {
		t.Errorf("bus a does not say where its queues are:\n%s", a.logs)
	}

	var want []string
	for i := range 100 {
		send(t, a.base, "K#order", i)
		want = append(want, strconv.Itoa(i))
	}
	if diff := cmp.Diff(want, drain(t, b.base, "K#order")); diff != "" {
		t.Fatalf("received through b (-sent through a +got):\n%s", diff)
	}
	if p := recv(t, a.base, "K#order"); p.Status != "timeout" {
		t.Fatalf("queue after b acknowledged everything, seen through a: %+v", p)
	}

	woken := make(chan polled, 1)
	go func() {
		resp, err := httpc.Get(b.base + "/recv?me=K%23wake&timeout_ms=8000")
		if err != nil {
			t.Error(err)
			woken <- polled{}
			return
		}
		defer resp.Body.Close()
		var p polled
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
			t.Error(err)
		}
		woken <- p
	}()
	testutil.Eventually(t, 5*time.Second, "the poll to park on b", func() bool { return parkedPolls(t, b.base) == 1 })
	send(t, a.base, "K#wake", "hello")
	if p := <-woken; p.Status != "message" || string(p.Envelope.Payload) != `"hello"` {
		t.Fatalf("poll parked on b answered %+v", p)
	}

	for base, body := range map[string]string{
		a.base: `{"pubkey":"k1","name":"through a","session":{"session_id":"s"}}`,
		b.base: `{"pubkey":"k2","name":"through b"}`,
	} {
		if code := post(t, base, "/announce", json.RawMessage(body)); code != http.StatusAccepted {
			t.Fatalf("announce: %d", code)
		}
	}
	testutil.Eventually(t, 10*time.Second, "both buses to list both announcements", func() bool {
		ra, rb := rosterWithoutAges(t, a.base), rosterWithoutAges(t, b.base)
		return len(ra) == 2 && cmp.Equal(ra, rb)
	})
	for _, p := range []*busProc{a, b} {
		if code, body := get(t, p.base, "/healthz"); code != http.StatusOK {
			t.Errorf("/healthz: %d %s", code, body)
		}
		p.stop(t)
	}
}

// A bus killed with SIGKILL in the middle of a burst of 1,000 sends loses
// nothing it answered 202: the client sends what it did not answer through
// the other bus, and every message arrives through that one, once unless
// it was sent twice.
func TestKilledBusLosesNothingItAccepted(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a burst of 1,000 sends and a drain")
	}
	srv := natstest.Start(t, nil)
	a, b := natsBus(t, srv, "KILL"), natsBus(t, srv, "KILL")

	const senders, total, killAfter = 8, 1000, 300
	// attempts[id] counts the buses the message was sent to: 2 when a
	// did not answer and b took it.
	var attempts [total]atomic.Int32
	var fromA atomic.Int64
	var aDead atomic.Bool
	client := &http.Client{Timeout: 5 * time.Second}
	sendTo := func(base, route string, id int) bool {
		body := fmt.Sprintf(`{"to":%q,"payload":%d}`, route, id)
		resp, err := client.Post(base+"/send", "application/json", strings.NewReader(body))
		if err != nil {
			return false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusAccepted
	}
	// due is closed once a has taken killAfter sends, or once a send to a
	// failed first, which stops the senders' use of a.
	due := make(chan struct{})
	var dueOnce sync.Once
	kill := func() { dueOnce.Do(func() { close(due) }) }
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		<-due
		a.cmd.Process.Signal(syscall.SIGKILL)
		a.wait(t, 5*time.Second)
	}()
	var wg sync.WaitGroup
	for i := range senders {
		wg.Go(func() {
			route := fmt.Sprintf("burst-%d", i)
			for id := i; id < total; id += senders {
				if !aDead.Load() {
					attempts[id].Add(1)
					if sendTo(a.base, route, id) {
						if fromA.Add(1) >= killAfter {
							kill()
						}
						continue
					}
					aDead.Store(true)
					kill()
				}
				attempts[id].Add(1)
				if !testutil.Poll(10*time.Second, func() bool { return sendTo(b.base, route, id) }) {
					t.Errorf("b did not take message %d", id)
					return
				}
			}
		})
	}
	wg.Wait()
	<-killed
	if t.Failed() {
		t.FailNow()
	}

	got := make(map[int]int)
	for i := range senders {
		route := fmt.Sprintf("burst-%d", i)
		var firsts []int
		for _, payload := range drain(t, b.base, route) {
			id, err := strconv.Atoi(payload)
			if err != nil || id%senders != i {
				t.Fatalf("route %s: unexpected payload %s", route, payload)
			}
			if got[id] == 0 {
				firsts = append(firsts, id)
			}
			got[id]++
		}
		if !slices.IsSorted(firsts) {
			t.Errorf("route %s: out of order: %v", route, firsts)
		}
	}
	twice := 0
	for id := range total {
		n, sent := got[id], int(attempts[id].Load())
		switch {
		case n == 0:
			t.Errorf("message %d, accepted with 202, never arrived", id)
		case n > sent:
			t.Errorf("message %d arrived %d times, sent %d times", id, n, sent)
		case n == 2:
			twice++
		}
	}
	t.Logf("%d accepted by a before the kill, %d by b after; %d arrived twice (a stored them without answering)", fromA.Load(), total-int(fromA.Load()), twice)
	b.stop(t)
}

// A NATS server that restarts (same store) in the middle of a run: the bus
// says it is unhealthy meanwhile, recovers by itself, and loses none of
// the messages it answered 202.
func TestBusRecoversFromNATSRestart(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	p := natsBus(t, srv, "RESTART")

	const before, after = 200, 200
	var accepted []int // in order
	next := 0
	// sendSome sends until n were accepted, pausing only after a refusal.
	sendSome := func(n int) {
		t.Helper()
		testutil.EventuallyNil(t, time.Minute, fmt.Sprintf("%d sends accepted", n), func() error {
			for len(accepted) < n {
				body := fmt.Sprintf(`{"to":"K#r","payload":%d}`, next)
				resp, err := httpc.Post(p.base+"/send", "application/json", strings.NewReader(body))
				next++
				if err != nil {
					return fmt.Errorf("only %d accepted: %v", len(accepted), err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					return fmt.Errorf("only %d accepted: status %d", len(accepted), resp.StatusCode)
				}
				accepted = append(accepted, next-1)
			}
			return nil
		})
	}
	sendSome(before)

	srv.Shutdown()
	testutil.Eventually(t, 10*time.Second, "the bus to report the outage", func() bool {
		code, body := get(t, p.base, "/healthz")
		return code == http.StatusServiceUnavailable && body == `{"error":"store unavailable"}`
	})
	if code := post(t, p.base, "/send", map[string]any{"to": "K#r", "payload": -1}); code != http.StatusInternalServerError {
		t.Errorf("send during the outage: %d, want 500", code)
	}
	srv.Restart()
	testutil.Eventually(t, 30*time.Second, "the bus to recover", func() bool {
		code, _ := get(t, p.base, "/healthz")
		return code == http.StatusOK
	})
	sendSome(before + after)
	select {
	case <-p.done:
		t.Fatalf("the bus exited with status %d", p.code)
	default:
	}

	var got []int
	for _, payload := range drain(t, p.base, "K#r") {
		id, err := strconv.Atoi(payload)
		if err != nil {
			t.Fatalf("unexpected payload %s", payload)
		}
		got = append(got, id)
	}
	// A send that failed may still have been stored; it shows up
	// between the accepted ones.
	for _, id := range accepted {
		if !slices.Contains(got, id) {
			t.Errorf("message %d, accepted with 202, is missing", id)
		}
	}
	if !slices.IsSorted(got) {
		t.Errorf("received out of order: %v", got)
	}
	if n := len(logLines(p.logs.String(), "NATS connection lost")); n == 0 {
		t.Error("the bus did not log the lost connection")
	}
	p.stop(t)
}

// A server without JetStream stops the bus at start with what to do.
func TestBusRefusesNATSWithoutJetStream(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, &natstest.Options{NoJetStream: true})
	p := launch(t, busEnv(), "--addr", "127.0.0.1:0", "--nats", srv.URL())
	if code := p.wait(t, 20*time.Second); code != exitError {
		t.Fatalf("status %d, want %d", code, exitError)
	}
	lines := strings.Split(strings.TrimSpace(p.logs.String()), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "interlink-bus: cannot open the queues in NATS: JetStream not enabled") ||
		!strings.Contains(last, "nats-server with -js") {
		t.Errorf("last line %q does not say JetStream is off and how to turn it on", last)
	}
}

// A user and password in the URL connect; given on the command line they
// draw a warning, since the process list shows them, and from the
// environment they do not. The log never shows the password.
func TestNATSPasswordInTheURL(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, &natstest.Options{User: "bus", Password: "s3cret"})
	warning := "the NATS credentials in --nats can be read by other users of this machine in the process list; " +
		"use --nats-creds FILE, or give the URL in INTERLINK_NATS"

	p := startBus(t, busEnv(), "--addr", "127.0.0.1:0", "--nats", srv.UserURL("bus", "s3cret"))
	if n := len(logLines(p.logs.String(), warning)); n != 1 {
		t.Errorf("%d warnings about the password on the command line, want 1:\n%s", n, p.logs)
	}
	send(t, p.base, "K#s", "through a password")
	p.stop(t)

	q := startBus(t, busEnv("INTERLINK_NATS="+srv.UserURL("bus", "s3cret")), "--addr", "127.0.0.1:0")
	if n := len(logLines(q.logs.String(), warning)); n != 0 {
		t.Errorf("a URL from the environment was warned about:\n%s", q.logs)
	}
	if got := drain(t, q.base, "K#s"); !slices.Equal(got, []string{`"through a password"`}) {
		t.Errorf("drained %v", got)
	}
	q.stop(t)
	for _, logs := range []string{p.logs.String(), q.logs.String()} {
		if strings.Contains(logs, "s3cret") {
			t.Errorf("the log shows the password:\n%s", logs)
		}
	}

	bad := launch(t, busEnv(), "--addr", "127.0.0.1:0", "--nats", srv.UserURL("bus", "wrong"))
	if code := bad.wait(t, 20*time.Second); code != exitError {
		t.Fatalf("a wrong password: status %d, want %d", code, exitError)
	}
	if !strings.Contains(bad.logs.String(), "interlink-bus: cannot open the queues in NATS:") || strings.Contains(bad.logs.String(), "wrong") {
		t.Errorf("a wrong password gave:\n%s", bad.logs)
	}
}
