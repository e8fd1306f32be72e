package bus

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/wire"
)

func TestQueueIsFirstInFirstOut(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		h := newHarness(t, kind.open(t, 0), 0)
		for i := range 100 {
			h.send("K#s", strconv.Itoa(i))
		}
		for i := range 100 {
			r := h.poll("K#s", 0)
			if r.Status != "message" || string(r.Envelope.Payload) != strconv.Itoa(i) {
				t.Fatalf("message %d: %+v", i, r)
			}
			if code := h.ack("K#s", r.Ack); code != http.StatusOK {
				t.Fatalf("ack %d: %d", i, code)
			}
		}
		if r := h.poll("K#s", 0); r.Status != "timeout" {
			t.Errorf("after 100 acks: %+v", r)
		}
	})
}

func TestUnacknowledgedMessageIsDeliveredAgain(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		h := newHarness(t, kind.open(t, 0), 0)
		h.send("K#s", `{"n":1}`)
		first, second := h.poll("K#s", 0), h.poll("K#s", 1000)
		if first.Status != "message" || first.Ack != second.Ack ||
			string(first.Envelope.Payload) != string(second.Envelope.Payload) {
			t.Errorf("two polls differ:\n%+v\n%+v", first, second)
		}
	})
}

func TestAcknowledgedMessageIsGone(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		h := newHarness(t, kind.open(t, 0), 0)
		h.send("K#s", `1`)
		r := h.poll("K#s", 0)
		if code := h.ack("K#s", r.Ack); code != http.StatusOK {
			t.Fatalf("ack: %d", code)
		}
		if r := h.poll("K#s", 50); r.Status != "timeout" {
			t.Errorf("after ack: %+v", r)
		}
	})
}

func TestAckOfAnUnknownKey(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		h := newHarness(t, kind.open(t, 2), 0)
		h.send("K#s", `0`)
		evicted := h.poll("K#s", 0).Ack
		h.send("K#s", `1`)
		h.send("K#s", `2`)
		h.send("K#s", `3`)
		head := h.poll("K#s", 0)
		if code := h.ack("K#s", head.Ack); code != http.StatusOK {
			t.Fatalf("first ack: %d", code)
		}
		keys := map[string]string{
			"acked twice":      head.Ack,
			"never issued":     store.Key("K#s", 99999999999999999),
			"evicted":          evicted,
			"nothing after it": "K#s\x00",
		}
		for name, key := range keys {
			rec := h.do(http.MethodPost, "/ack", fmt.Sprintf(`{"me":"K#s","ack":%s}`, jstr(key)))
			if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
				t.Errorf("%s: %d %q, want 200 and an empty body", name, rec.Code, rec.Body)
			}
		}
		if n := h.depth("K#s"); n != 1 {
			t.Errorf("depth = %d, want 1", n)
		}
	})
}

func TestAckKeyMustBelongToTheRoute(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		h := newHarness(t, kind.open(t, 0), 0)
		h.send("K#s2", `1`)
		key := h.poll("K#s2", 0).Ack
		for _, me := range []string{"K#s", "K", "", "K#s2\x00", "other", "K#s20"} {
			body := fmt.Sprintf(`{"me":%s,"ack":%s}`, jstr(me), jstr(key))
			rec := h.do(http.MethodPost, "/ack", body)
			want := http.StatusForbidden
			if strings.ContainsRune(me, 0) {
				want = http.StatusBadRequest // a NUL in a route is refused first
			}
			if rec.Code != want {
				t.Errorf("me %q: %d %s, want %d", me, rec.Code, rec.Body, want)
			}
			checkErrorBody(t, rec.Code, rec.Body.Bytes())
		}
		if code := h.ack("K#s2", "K#s2"); code != http.StatusForbidden {
			t.Errorf("key without NUL: %d, want 403", code)
		}
		if n := h.depth("K#s2"); n != 1 {
			t.Errorf("depth = %d after refused acks, want 1", n)
		}
	})
}

func TestManyRoutesKeepSeparateQueues(t *testing.T) {
	routes := 10_000
	if testing.Short() {
		routes = 1_000
	}
	{
		h := newMemoryHarness(t, 0, 0)
		// Routes R1, R10, R100... differ only by suffix.
		for j := range 3 {
			for i := range routes {
				h.send("R"+strconv.Itoa(i), fmt.Sprintf(`[%d,%d]`, i, j))
			}
		}
		for i := range routes {
			route := "R" + strconv.Itoa(i)
			for j := range 3 {
				r := h.poll(route, 0)
				if want := fmt.Sprintf(`[%d,%d]`, i, j); string(r.Envelope.Payload) != want {
					t.Fatalf("%s message %d: %s, want %s", route, j, r.Envelope.Payload, want)
				}
				if code := h.ack(route, r.Ack); code != http.StatusOK {
					t.Fatalf("%s ack %d: %d", route, j, code)
				}
			}
			if r := h.poll(route, 0); r.Status != "timeout" {
				t.Fatalf("%s after 3 acks: %+v", route, r)
			}
		}
	}
}

func TestFullQueueDropsTheOldest(t *testing.T) {
	forEachFastStore(t, func(t *testing.T, kind storeKind) {
		t.Run("cap 2", func(t *testing.T) {
			h := newHarness(t, kind.open(t, 2), 0)
			for i := range 4 {
				h.send("K#s", strconv.Itoa(i))
			}
			if n := h.depth("K#s"); n != 2 {
				t.Errorf("depth = %d, want 2", n)
			}
			if r := h.poll("K#s", 0); string(r.Envelope.Payload) != "2" {
				t.Errorf("head = %s, want 2", r.Envelope.Payload)
			}
			// The first drop is logged at once; the second, in the same
			// second, waits for the next drop after the second is up.
			logs := h.logs.find("queue full; dropped oldest")
			if len(logs) != 1 || logs[0]["to"] != "K#s" || logs[0]["dropped"] != int64(1) {
				t.Fatalf("drop warnings = %v, want one for 1 message", logs)
			}
			h.clock.Add(time.Second)
			h.send("K#s", `4`)
			logs = h.logs.find("queue full; dropped oldest")
			if len(logs) != 2 || logs[1]["dropped"] != int64(2) {
				t.Fatalf("drop warnings = %v, want a second one for 2 messages", logs)
			}
		})
		t.Run("default cap", func(t *testing.T) {
			h := newHarness(t, kind.open(t, 0), 0)
			for i := range 1030 {
				h.send("K#s", strconv.Itoa(i))
			}
			if n := h.depth("K#s"); n != store.DefaultCap {
				t.Errorf("depth = %d, want %d", n, store.DefaultCap)
			}
			if r := h.poll("K#s", 0); string(r.Envelope.Payload) != "6" {
				t.Errorf("head = %s, want 6", r.Envelope.Payload)
			}
			logs := h.logs.find("queue full; dropped oldest")
			if len(logs) != 1 || logs[0]["level"] != slog.LevelWarn {
				t.Errorf("drop warnings = %v, want one warning", logs)
			}
		})
	})
}

func TestConcurrentSendsToOneRoute(t *testing.T) {
	forEachFastStore(t, func(t *testing.T, kind storeKind) {
		rs := &recordingStore{Store: kind.open(t, 64)}
		h := newHarness(t, rs, 0)
		var wg sync.WaitGroup
		errs := make(chan error, 50)
		for g := range 50 {
			wg.Go(func() {
				for i := range 100 {
					body := fmt.Sprintf(`{"to":"hot","payload":[%d,%d]}`, g, i)
					if rec := h.do(http.MethodPost, "/send", body); rec.Code != http.StatusAccepted {
						errs <- fmt.Errorf("send %d/%d: %d %s", g, i, rec.Code, rec.Body)
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
		if n := h.depth("hot"); n != 64 {
			t.Fatalf("depth = %d, want 64", n)
		}
		all := rs.enqueued()
		if len(all) != 5000 {
			t.Fatalf("%d keys enqueued, want 5000", len(all))
		}
		slices.Sort(all) // one route, fixed-width sequence: byte order is sequence order
		want := all[len(all)-64:]
		for i, key := range want {
			r := h.poll("hot", 0)
			if r.Ack != key {
				t.Fatalf("survivor %d is %q, want %q", i, r.Ack, key)
			}
			h.ack("hot", r.Ack)
		}
	})
}

func TestAckOfAMessageEvictedWhileDelivered(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		h := newHarness(t, kind.open(t, 2), 0)
		h.send("K#s", `0`)
		stale := h.poll("K#s", 0).Ack
		h.send("K#s", `1`)
		h.send("K#s", `2`)
		if code := h.ack("K#s", stale); code != http.StatusOK {
			t.Errorf("stale ack: %d, want 200", code)
		}
		r := h.poll("K#s", 0)
		if r.Ack == stale || string(r.Envelope.Payload) != "1" {
			t.Errorf("head after eviction: %+v, want payload 1", r)
		}
	})
}

func TestQueueOutlivesUnregister(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		h := newHarness(t, kind.open(t, 0), 0)
		announce := `{"pubkey":"K","session":{"session_id":"s"}}`
		h.send("K#s", `1`)
		if code := h.post("/announce", announce); code != http.StatusAccepted {
			t.Fatalf("announce: %d", code)
		}
		if code := h.post("/unregister", announce); code != http.StatusAccepted {
			t.Fatalf("unregister: %d", code)
		}
		if n := h.depth("K#s"); n != 1 {
			t.Fatalf("depth after unregister = %d, want 1", n)
		}
		h.post("/announce", announce)
		h.clock.Add(RosterRetention)
		h.post("/announce", `{"pubkey":"other"}`) // prunes K#s from the roster
		if n := h.srv.roster.Len(); n != 1 {
			t.Fatalf("roster holds %d entries, want 1", n)
		}
		if n := h.depth("K#s"); n != 1 {
			t.Errorf("depth after roster expiry = %d, want 1", n)
		}
	})
}

func TestBareKeyRouteIsSeparate(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		h := newHarness(t, kind.open(t, 0), 0)
		h.send("K", `"bare"`)
		h.send("K#s", `"session"`)
		if r := h.poll("K", 0); string(r.Envelope.Payload) != `"bare"` {
			t.Errorf("K: %s", r.Envelope.Payload)
		}
		r := h.poll("K#s", 0)
		if string(r.Envelope.Payload) != `"session"` {
			t.Errorf("K#s: %s", r.Envelope.Payload)
		}
		if code := h.ack("K", r.Ack); code != http.StatusForbidden {
			t.Errorf("acking K#s's key as K: %d, want 403", code)
		}
		h.ack("K#s", r.Ack)
		if n := h.depth("K"); n != 1 {
			t.Errorf("depth of K = %d, want 1", n)
		}
	})
}

// TestRoutesWithControlCharactersAreRefused pins the decision for routes holding NUL and other
// control characters: 400 on every route that names one.
func TestRoutesWithControlCharactersAreRefused(t *testing.T) {
	h, _ := newFakeHarness(t, 0)
	h.send("a", `1`)
	long := strings.Repeat("k", wire.MaxRouteBytes)
	cases := []struct {
		name  string
		route string
		ok    bool
	}{
		{"NUL", "a\x00b", false},
		{"trailing NUL", "a\x00", false},
		{"SOH", "a\x01", false},
		{"unit separator", "a\x1f", false},
		{"tab", "a\tb", false},
		{"newline", "a\nb", false},
		{"DEL", "a\x7f", false},
		{"too long", long + "k", false},
		{"at the limit", long, true},
		{"empty", "", true},
		{"C1 control is not refused", "a\u0085", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := http.StatusBadRequest
			if tc.ok {
				want = http.StatusAccepted
			}
			rec := h.do(http.MethodPost, "/send", fmt.Sprintf(`{"to":%s,"payload":1}`, jstr(tc.route)))
			if rec.Code != want {
				t.Errorf("send: %d %s, want %d", rec.Code, rec.Body, want)
			}
			checkErrorBody(t, rec.Code, rec.Body.Bytes())
			if want = http.StatusOK; !tc.ok {
				want = http.StatusBadRequest
			}
			rec = h.do(http.MethodGet, recvTarget(tc.route, 0), "")
			if rec.Code != want {
				t.Errorf("recv: %d %s, want %d", rec.Code, rec.Body, want)
			}
			checkErrorBody(t, rec.Code, rec.Body.Bytes())
			if !tc.ok {
				body := fmt.Sprintf(`{"me":%s,"ack":%s}`, jstr(tc.route), jstr(tc.route+"\x0000000000000000000001"))
				rec = h.do(http.MethodPost, "/ack", body)
				if rec.Code != http.StatusBadRequest {
					t.Errorf("ack: %d %s, want 400", rec.Code, rec.Body)
				}
			}
		})
	}
	// Route "a" never sees the messages of "a\x00b", because that route
	// cannot be sent to: its queue is untouched.
	if n := h.depth("a"); n != 1 {
		t.Errorf("depth of a = %d, want 1", n)
	}
	// Invalid UTF-8 can reach a route only through the query.
	rec := h.do(http.MethodGet, "/recv?me=%FF&timeout_ms=0", "")
	if rec.Code != http.StatusBadRequest {
		t.Errorf("recv with invalid UTF-8: %d, want 400", rec.Code)
	}
}

// TestStorageErrors checks the 500 answers when the store fails: JSON
// bodies that do not leak the store's error, the status field on /recv,
// and an error log.
func TestStorageErrors(t *testing.T) {
	h, st := newFakeHarness(t, 0)
	h.send("r", `1`)
	st.fail(errors.New("disk on fire"))
	cases := []struct {
		method, target, body, want string
	}{
		{http.MethodPost, "/send", `{"to":"r","payload":1}`, `{"error":"storage error"}`},
		{http.MethodGet, "/recv?me=r&timeout_ms=0", ``, `{"status":"error","error":"storage error"}`},
		{http.MethodGet, "/recv?me=r&timeout_ms=1000", ``, `{"status":"error","error":"storage error"}`},
		{http.MethodPost, "/ack", `{"me":"r","ack":"r\u00001"}`, `{"error":"storage error"}`},
	}
	for _, tc := range cases {
		rec := h.do(tc.method, tc.target, tc.body)
		if rec.Code != http.StatusInternalServerError || rec.Body.String() != tc.want {
			t.Errorf("%s %s: %d %s, want 500 %s", tc.method, tc.target, rec.Code, rec.Body, tc.want)
		}
	}
	for _, msg := range []string{"enqueue failed", "recv failed", "ack failed"} {
		logs := h.logs.find(msg)
		if len(logs) == 0 || !strings.Contains(fmt.Sprint(logs[0]["error"]), "disk on fire") {
			t.Errorf("%s: logs %v", msg, logs)
		}
	}
	// Roster and health do not touch the store.
	if code := h.post("/announce", `{"pubkey":"k"}`); code != http.StatusAccepted {
		t.Errorf("announce with a failing store: %d", code)
	}
	st.fail(nil)
	if r := h.poll("r", 0); r.Status != "message" {
		t.Errorf("after the store recovered: %+v", r)
	}
}

// TestPoisonedEnvelope checks that a stored value that is not JSON answers
// 500 with the error status until its key is acked.
func TestPoisonedEnvelope(t *testing.T) {
	h, st := newFakeHarness(t, 0)
	key := store.Key("r", 7)
	st.put("r", key, []byte(`{"payload":`))
	rec := h.do(http.MethodGet, "/recv?me=r&timeout_ms=0", "")
	if rec.Code != http.StatusInternalServerError || rec.Body.String() != `{"status":"error","error":"storage error"}` {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if code := h.ack("r", key); code != http.StatusOK {
		t.Fatalf("ack: %d", code)
	}
	if r := h.poll("r", 0); r.Status != "timeout" {
		t.Errorf("after ack: %+v", r)
	}
}
