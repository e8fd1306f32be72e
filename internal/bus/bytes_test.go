package bus

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/store/bolt"
)

// boundedStores opens the real stores with the given byte bounds.
var boundedStores = []struct {
	name string
	open func(tb testing.TB, opts *store.Options) store.Store
}{
	{"memory", func(_ testing.TB, opts *store.Options) store.Store { return store.NewMemory(opts) }},
	{"bolt", func(tb testing.TB, opts *store.Options) store.Store {
		tb.Helper()
		bo := &bolt.Options{}
		if opts != nil {
			bo.Options = *opts
		}
		st, err := bolt.Open(filepath.Join(tb.TempDir(), "bus.db"), bo)
		if err != nil {
			tb.Fatal(err)
		}
		return st
	}},
}

// payload returns a JSON string payload of n bytes in all.
func payload(tag string, n int) string {
	return `"` + tag + strings.Repeat(".", n-len(tag)-2) + `"`
}

// errorOf decodes a JSON error body.
func errorOf(tb testing.TB, body []byte) string {
	tb.Helper()
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error == "" {
		tb.Fatalf("error body %q: %v", body, err)
	}
	return e.Error
}

// A bus whose queues hold all its total allows answers a send 507, with
// Retry-After and a JSON error naming the bound, and stores nothing; every
// message it had accepted is still there, and once a receiver acknowledges
// one, the same send is accepted.
func TestFullBusAnswers507AndLosesNothing(t *testing.T) {
	const total = 40_000
	for _, kind := range boundedStores {
		t.Run(kind.name, func(t *testing.T) {
			h := newHarness(t, kind.open(t, &store.Options{RouteBytes: 20_000, TotalBytes: total}), 0)
			send := func(route, p string) *http.Response {
				rec := h.do(http.MethodPost, "/send", fmt.Sprintf(`{"to":%s,"payload":%s}`, jstr(route), p))
				return rec.Result()
			}
			accepted := 0
			var refused *http.Response
			for i := range 20 {
				route := fmt.Sprintf("K#%02d", i)
				resp := send(route, payload(route, 5_000))
				if resp.StatusCode == http.StatusAccepted {
					accepted++
					continue
				}
				refused = resp
				break
			}
			if refused == nil {
				t.Fatalf("20 sends of 5,000 bytes to a bus bounded at %d bytes all accepted", total)
			}
			if refused.StatusCode != http.StatusInsufficientStorage {
				t.Fatalf("send to a full bus: %d, want 507", refused.StatusCode)
			}
			if got := refused.Header.Get("Retry-After"); got != "5" {
				t.Errorf("Retry-After = %q, want 5", got)
			}
			if got := refused.Header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type = %q", got)
			}
			want := fmt.Sprintf("bus full: queued messages would exceed the bus's total bound of %d bytes; retry later", total)
			rec := h.do(http.MethodPost, "/send", fmt.Sprintf(`{"to":"K#00","payload":%s}`, payload("again", 5_000)))
			if rec.Code != http.StatusInsufficientStorage || errorOf(t, rec.Body.Bytes()) != want {
				t.Fatalf("send to a route with messages on a full bus: %d %s, want 507 %q", rec.Code, rec.Body, want)
			}
			if n := h.depth("K#00"); n != 1 {
				t.Fatalf("depth of K#00 after a refused send = %d, want 1", n)
			}
			st := h.srv.Stats()
			if st.RefusedFull < 2 || st.Stored != uint64(accepted) || st.Dropped != 0 {
				t.Fatalf("stats %+v after %d accepted sends and refusals", st, accepted)
			}
			if !st.Totals || st.QueuedBytes > total || st.Queued != accepted {
				t.Fatalf("stats %+v: want %d messages within %d bytes", st, accepted, total)
			}
			for i := range accepted {
				route := fmt.Sprintf("K#%02d", i)
				if r := h.poll(route, 0); string(r.Envelope.Payload) != payload(route, 5_000) {
					t.Fatalf("%s holds %.20s", route, r.Envelope.Payload)
				}
			}

			r := h.poll("K#00", 0)
			if code := h.ack("K#00", r.Ack); code != http.StatusOK {
				t.Fatalf("ack: %d", code)
			}
			route := fmt.Sprintf("K#%02d", accepted)
			if resp := send(route, payload(route, 5_000)); resp.StatusCode != http.StatusAccepted {
				t.Fatalf("send after an ack made room: %d", resp.StatusCode)
			}
		})
	}
}

// A message that counts more than a route may hold can never be stored:
// 413, as for a body over the limit, which clients do not retry.
func TestMessageOverRouteBytesAnswers413(t *testing.T) {
	for _, kind := range boundedStores {
		t.Run(kind.name, func(t *testing.T) {
			const routeBytes = 4_096
			h := newHarness(t, kind.open(t, &store.Options{RouteBytes: routeBytes}), 0)
			h.send("K#s", payload("fits", 3_000))
			rec := h.do(http.MethodPost, "/send", fmt.Sprintf(`{"to":"K#s","payload":%s}`, payload("big", 4_000)))
			if rec.Code != http.StatusRequestEntityTooLarge {
				t.Fatalf("send of a message over the route bound: %d %s, want 413", rec.Code, rec.Body)
			}
			msg := errorOf(t, rec.Body.Bytes())
			if !strings.HasPrefix(msg, "request body too large: the message counts ") || !strings.HasSuffix(msg, fmt.Sprintf("a route holds at most %d", routeBytes)) {
				t.Fatalf("error %q does not name the route's bound", msg)
			}
			if n := h.depth("K#s"); n != 1 {
				t.Fatalf("depth = %d, want the 1 message that fits", n)
			}
			if st := h.srv.Stats(); st.RefusedTooLarge != 1 || st.RefusedFull != 0 {
				t.Fatalf("stats %+v, want one refusal for size", st)
			}
		})
	}
}

// A route over its byte bound drops its oldest messages through the bus as
// through the store, and the drop is counted and logged like a cap drop.
func TestRouteOverItsBytesDropsTheOldest(t *testing.T) {
	for _, kind := range boundedStores {
		t.Run(kind.name, func(t *testing.T) {
			h := newHarness(t, kind.open(t, &store.Options{RouteBytes: 16_000}), 0)
			for i := range 6 {
				h.send("K#s", payload(fmt.Sprint(i), 5_000))
			}
			if n := h.depth("K#s"); n != 3 {
				t.Fatalf("depth = %d, want 3", n)
			}
			if r := h.poll("K#s", 0); string(r.Envelope.Payload) != payload("3", 5_000) {
				t.Fatalf("head %.10s, want message 3", r.Envelope.Payload)
			}
			if st := h.srv.Stats(); st.Dropped != 3 || st.RefusedFull != 0 {
				t.Fatalf("stats %+v, want 3 dropped", st)
			}
			if logs := h.logs.find("queue full; dropped oldest"); len(logs) == 0 || logs[0]["to"] != "K#s" {
				t.Fatalf("drop warnings %v", logs)
			}
		})
	}
}

// Refusals of a full bus are logged at most once a second, with how many
// there were, so a flood of sends does not also flood the log.
func TestFullBusWarningIsRateLimited(t *testing.T) {
	h := newHarness(t, store.NewMemory(&store.Options{TotalBytes: 2_000}), 0)
	h.send("K#a", payload("a", 1_500))
	for range 5 {
		if rec := h.do(http.MethodPost, "/send", `{"to":"K#b","payload":`+payload("b", 1_000)+`}`); rec.Code != http.StatusInsufficientStorage {
			t.Fatalf("send: %d", rec.Code)
		}
	}
	logs := h.logs.find("queues full; refusing sends")
	if len(logs) != 1 || logs[0]["refused"] != int64(1) || logs[0]["total_bytes"] != int64(2_000) {
		t.Fatalf("warnings %v, want one for the first refusal", logs)
	}
	h.clock.Add(time.Second)
	h.do(http.MethodPost, "/send", `{"to":"K#b","payload":`+payload("b", 1_000)+`}`)
	logs = h.logs.find("queues full; refusing sends")
	if len(logs) != 2 || logs[1]["refused"] != int64(5) {
		t.Fatalf("warnings %v, want a second for the 5 since", logs)
	}
}
