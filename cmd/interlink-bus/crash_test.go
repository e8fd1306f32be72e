package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// A bus killed with SIGKILL while messages are being sent, received and
// acknowledged keeps every message it answered 202 for and that was not
// acknowledged. Acknowledged ones may come back, since acknowledgements
// are committed after their answer, but nothing else appears: no message
// that was never sent, and none twice.
func TestKillDuringSendAndAckBurstKeepsUnacknowledged(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a second of sends and acks and a full drain")
	}
	db := filepath.Join(t.TempDir(), "crash.db")
	// The acknowledgements of the last second at most are committed on
	// their own, so the kill finds some waiting.
	p := startBus(t, busEnv(), "--addr", "127.0.0.1:0", "--db", db, "--queue-cap", "1000000", "--ack-delay", "1s")

	const routes, killAfter = 4, 800
	type ledger struct {
		mu       sync.Mutex
		accepted map[int]bool // sends answered 202
		acked    map[int]bool // messages whose ack was answered 200
		tried    int          // sends attempted
	}
	books := make([]*ledger, routes)
	var (
		stop  atomic.Bool
		count atomic.Int64
		wg    sync.WaitGroup
		// due is closed when the sends answered 202 reach killAfter.
		due     = make(chan struct{})
		dueOnce sync.Once
	)
	client := &http.Client{Timeout: 2 * time.Second}
	for i := range routes {
		l := &ledger{accepted: map[int]bool{}, acked: map[int]bool{}}
		books[i] = l
		route := fmt.Sprintf("crash-%d", i)
		wg.Go(func() { // sender
			for j := 0; !stop.Load(); j++ {
				l.mu.Lock()
				l.tried = j + 1
				l.mu.Unlock()
				body := fmt.Sprintf(`{"to":%q,"payload":%d}`, route, j)
				resp, err := client.Post(p.base+"/send", "application/json", strings.NewReader(body))
				if err != nil {
					return // the bus is gone
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusAccepted {
					l.mu.Lock()
					l.accepted[j] = true
					l.mu.Unlock()
					if count.Add(1) >= killAfter {
						dueOnce.Do(func() { close(due) })
					}
				}
			}
		})
		if i%2 == 1 {
			continue // a route nobody reads: its messages stay unacknowledged
		}
		wg.Go(func() { // receiver
			for !stop.Load() {
				resp, err := client.Get(p.base + "/recv?timeout_ms=200&me=" + url.QueryEscape(route))
				if err != nil {
					return
				}
				var m polled
				err = json.NewDecoder(resp.Body).Decode(&m)
				resp.Body.Close()
				if err != nil || m.Status != "message" {
					continue
				}
				var n int
				if err := json.Unmarshal(m.Envelope.Payload, &n); err != nil {
					t.Errorf("route %s: payload %s", route, m.Envelope.Payload)
					return
				}
				ack, _ := json.Marshal(map[string]string{"me": route, "ack": m.Ack})
				resp, err = client.Post(p.base+"/ack", "application/json", strings.NewReader(string(ack)))
				if err != nil {
					return
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					l.mu.Lock()
					l.acked[n] = true
					l.mu.Unlock()
				}
			}
		})
	}
	select {
	case <-due:
	case <-time.After(time.Minute): // only stops a hung test
		t.Fatalf("%d sends answered 202 in a minute, want %d before the kill", count.Load(), killAfter)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(t, 5*time.Second)
	stop.Store(true)
	wg.Wait()

	p = startBus(t, busEnv(), "--addr", "127.0.0.1:0", "--db", db)
	var accepted, acked, back, kept int
	for i, l := range books {
		route := fmt.Sprintf("crash-%d", i)
		seen := map[int]bool{}
		for _, payload := range drain(t, p.base, route) {
			var n int
			if _, err := fmt.Sscanf(payload, "%d", &n); err != nil || n < 0 || n >= l.tried {
				t.Errorf("route %s: a message that was never sent: %s", route, payload)
				continue
			}
			if seen[n] {
				t.Errorf("route %s: message %d stored twice", route, n)
			}
			seen[n] = true
			if l.acked[n] {
				back++
			}
		}
		for n := range l.accepted {
			if !l.acked[n] && !seen[n] {
				t.Errorf("route %s: message %d was accepted, never acknowledged, and is lost", route, n)
			}
			if !l.acked[n] {
				kept++
			}
		}
		accepted += len(l.accepted)
		acked += len(l.acked)
	}
	if kept == 0 || acked == 0 {
		t.Fatalf("%d sends accepted, %d of them unacknowledged, %d acknowledged before the kill: the test exercised nothing", accepted, kept, acked)
	}
	t.Logf("before the kill: %d accepted, %d acknowledged; after it: %d unacknowledged kept, %d acknowledged came back",
		accepted, acked, kept, back)
	p.stop(t)
}
