package bus

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/wire"
)

// sharedStore is a fake store that other buses share: the test stores
// messages "elsewhere" by writing to the fake directly, and decides when
// the watch hints them. Its health can be set.
type sharedStore struct {
	*fakeStore

	mu      sync.Mutex
	stored  func(string) // guarded by mu; the watch's callbacks
	lost    func()       // guarded by mu
	stopped int          // guarded by mu; stop calls
	health  error        // guarded by mu
}

var (
	_ store.Watcher = (*sharedStore)(nil)
	_ store.Health  = (*sharedStore)(nil)
)

func (s *sharedStore) Watch(stored func(string), lost func()) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stored, s.lost = stored, lost
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.stopped++
	}
}

func (s *sharedStore) Healthy() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.health
}

// elsewhere stores value for route as another bus would, without a hint.
func (s *sharedStore) elsewhere(t *testing.T, route, value string) {
	t.Helper()
	if _, _, err := s.fakeStore.Enqueue(route, []byte(value)); err != nil {
		t.Fatal(err)
	}
}

func (s *sharedStore) hint(route string) {
	s.mu.Lock()
	stored := s.stored
	s.mu.Unlock()
	stored(route)
}

func (s *sharedStore) hintLost() {
	s.mu.Lock()
	lost := s.lost
	s.mu.Unlock()
	lost()
}

// parkPoll starts a long-poll of route on base and returns its answer's
// channel once the poll is parked.
func parkPoll(t *testing.T, h *harness, base, route string) <-chan recvReply {
	t.Helper()
	ch := make(chan recvReply, 1)
	before := h.srv.waiters.parked(route)
	go func() {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, base+recvTarget(route, 60_000), nil)
		if err != nil {
			t.Error(err)
			return
		}
		code, body := httpDo(t, http.DefaultClient, req)
		if code != http.StatusOK {
			t.Errorf("recv %q: %d %s", route, code, body)
		}
		ch <- decodeReply(t, body)
	}()
	waitFor(t, 10*time.Second, "the poll to park", func() bool { return h.srv.waiters.parked(route) > before })
	return ch
}

// reply waits for a parked poll's answer.
func reply(t *testing.T, ch <-chan recvReply) recvReply {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("the parked poll did not return")
		return recvReply{}
	}
}

// A poll parked on a route returns when the store hints a message that
// another bus stored there, and every parked poll looks again when the
// store says hints may have been lost.
func TestWatchedStoreWakesParkedPolls(t *testing.T) {
	st := &sharedStore{fakeStore: newFakeStore(0)}
	h := newHarness(t, st, 0)
	base := h.listen()

	first := parkPoll(t, h, base, "K#a")
	st.elsewhere(t, "K#a", `{"n":1}`)
	st.hint("K#a")
	if r := reply(t, first); r.Status != "message" || r.Ack == "" {
		t.Fatalf("hinted poll answered %+v", r)
	}

	// A hint for a route with nothing new wakes its poll, which parks
	// again; a hint for another route leaves it parked.
	second := parkPoll(t, h, base, "K#b")
	third := parkPoll(t, h, base, "K#c")
	st.hint("K#b")
	st.hint("K#d")
	waitFor(t, 10*time.Second, "the woken poll to park again", func() bool { return h.srv.waiters.parked("K#b") == 1 })

	st.elsewhere(t, "K#b", `{"n":2}`)
	st.elsewhere(t, "K#c", `{"n":3}`)
	st.hintLost()
	for _, ch := range []<-chan recvReply{second, third} {
		if r := reply(t, ch); r.Status != "message" {
			t.Fatalf("poll after a lost hint answered %+v", r)
		}
	}
	h.srv.Shutdown()
	h.srv.Shutdown()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.stopped != 1 {
		t.Fatalf("Shutdown stopped the watch %d times, want 1", st.stopped)
	}
}

// /healthz follows a store that reports its health: 503 with the JSON
// error shape while it is unavailable, 200 again once it recovers.
func TestHealthzFollowsTheStore(t *testing.T) {
	st := &sharedStore{fakeStore: newFakeStore(0)}
	srv := New(st, &Options{Version: "v1"})
	check := func(method string, wantCode int, wantBody string) {
		t.Helper()
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(method, "/healthz", nil))
		if rec.Code != wantCode || rec.Body.String() != wantBody {
			t.Errorf("%s /healthz = %d %s, want %d %s", method, rec.Code, rec.Body, wantCode, wantBody)
		}
		if rec.Header().Get(wire.VersionHeader) != "v1" || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s /healthz headers %v", method, rec.Header())
		}
	}
	check(http.MethodGet, http.StatusOK, `{"status":"ok"}`)
	st.mu.Lock()
	st.health = errors.New("connection down")
	st.mu.Unlock()
	check(http.MethodGet, http.StatusServiceUnavailable, `{"error":"store unavailable"}`)
	check(http.MethodHead, http.StatusServiceUnavailable, `{"error":"store unavailable"}`)
	st.mu.Lock()
	st.health = nil
	st.mu.Unlock()
	check(http.MethodGet, http.StatusOK, `{"status":"ok"}`)
}
