package bus

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/store/bolt"
	"github.com/interlink-go/interlink/internal/testutil"
)

// testEpoch is where the fake clock starts: a fixed time in Unix ms.
const testEpoch = 1_700_000_000_000

// storeKind is a store implementation the HTTP tests run against.
type storeKind struct {
	name string
	slow bool // every write waits for fsync
	// open returns an empty store holding at most capacity entries per
	// route; 0 means [store.DefaultCap].
	open func(tb testing.TB, capacity int) store.Store
}

// storeKinds lists every store implementation. The in-package fake can be
// made to fail, which the real stores cannot.
var storeKinds = []storeKind{
	{name: "fake", open: func(_ testing.TB, capacity int) store.Store { return newFakeStore(capacity) }},
	{name: "memory", open: func(_ testing.TB, capacity int) store.Store {
		return store.NewMemory(&store.Options{Cap: capacity})
	}},
	{name: "bolt", slow: true, open: func(tb testing.TB, capacity int) store.Store {
		tb.Helper()
		st, err := bolt.Open(filepath.Join(tb.TempDir(), "bus.db"), &bolt.Options{Options: store.Options{Cap: capacity}})
		if err != nil {
			tb.Fatal(err)
		}
		return st
	}},
}

// forEachStore runs f once per store implementation, as a subtest.
func forEachStore(t *testing.T, f func(t *testing.T, kind storeKind)) {
	t.Helper()
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) { f(t, kind) })
	}
}

// forEachFastStore is forEachStore without the stores that fsync, for tests
// that write thousands of messages.
func forEachFastStore(t *testing.T, f func(t *testing.T, kind storeKind)) {
	t.Helper()
	for _, kind := range storeKinds {
		if !kind.slow {
			t.Run(kind.name, func(t *testing.T) { f(t, kind) })
		}
	}
}

// newMemoryHarness returns a harness on a fresh in-memory store.
func newMemoryHarness(tb testing.TB, capacity int, maxWait time.Duration) *harness {
	tb.Helper()
	return newHarness(tb, store.NewMemory(&store.Options{Cap: capacity}), maxWait)
}

// fakeClock is a wall clock that moves only when told to.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time // guarded by mu
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.UnixMilli(testEpoch)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// logRecorder is a slog handler that keeps every record.
type logRecorder struct {
	mu   sync.Mutex
	recs []slog.Record // guarded by mu
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }

func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}

// find returns the attributes of every record with message msg.
func (l *logRecorder) find(msg string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, r := range l.recs {
		if r.Message != msg {
			continue
		}
		attrs := map[string]any{"level": r.Level}
		r.Attrs(func(a slog.Attr) bool {
			attrs[a.Key] = a.Value.Any()
			return true
		})
		out = append(out, attrs)
	}
	return out
}

// harness is a Server on a fake clock with its store and logs at hand.
type harness struct {
	tb    testing.TB
	srv   *Server
	st    store.Store
	clock *fakeClock
	logs  *logRecorder
}

// newHarness returns a harness serving st. maxWait is the Server's
// MaxRecvTimeout (0 for the default).
func newHarness(tb testing.TB, st store.Store, maxWait time.Duration) *harness {
	tb.Helper()
	h := &harness{tb: tb, st: st, clock: newFakeClock(), logs: &logRecorder{}}
	h.srv = New(st, &Options{Logger: slog.New(h.logs), Now: h.clock.Now, MaxRecvTimeout: maxWait})
	tb.Cleanup(func() { st.Close() })
	return h
}

// newFakeHarness returns a harness on a fresh fake store with the given cap.
func newFakeHarness(tb testing.TB, capacity int) (*harness, *fakeStore) {
	tb.Helper()
	st := newFakeStore(capacity)
	return newHarness(tb, st, 0), st
}

// do serves one request in process. POST requests get a JSON content type
// unless contentType says otherwise ("-" for none).
func (h *harness) do(method, target, body string, contentType ...string) *httptest.ResponseRecorder {
	h.tb.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.RemoteAddr = loopbackClient
	switch {
	case len(contentType) > 0 && contentType[0] == "-":
	case len(contentType) > 0:
		req.Header.Set("Content-Type", contentType[0])
	case method == http.MethodPost:
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	h.srv.ServeHTTP(rec, req)
	return rec
}

// loopbackClient is the address of in-process requests: a client on this
// machine, which the per-address limit leaves alone, as it does the
// clients of a bus on loopback.
const loopbackClient = "127.0.0.1:40000"

// serveOnce serves one request with a JSON content type.
func serveOnce(srv *Server, method, target, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.RemoteAddr = loopbackClient
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	return rec
}

// post serves a POST of body to path and returns its status.
func (h *harness) post(path, body string) int {
	h.tb.Helper()
	return h.do(http.MethodPost, path, body).Code
}

// send posts payload (raw JSON) to route and requires 202.
func (h *harness) send(route, payload string) {
	h.tb.Helper()
	body := fmt.Sprintf(`{"to":%s,"payload":%s}`, jstr(route), payload)
	if rec := h.do(http.MethodPost, "/send", body); rec.Code != http.StatusAccepted {
		h.tb.Fatalf("send to %q: %d %s", route, rec.Code, rec.Body)
	}
}

// recvReply is a decoded /recv answer.
type recvReply struct {
	Status   string `json:"status"`
	Ack      string `json:"ack"`
	Envelope struct {
		Payload json.RawMessage `json:"payload"`
		TS      int64           `json:"ts"`
	} `json:"envelope"`
	Error string `json:"error"`
}

// recvTarget returns the /recv URL for route and a timeout in ms.
func recvTarget(route string, timeoutMs int) string {
	return fmt.Sprintf("/recv?me=%s&timeout_ms=%d", url.QueryEscape(route), timeoutMs)
}

// poll serves /recv for route and requires 200.
func (h *harness) poll(route string, timeoutMs int) recvReply {
	h.tb.Helper()
	rec := h.do(http.MethodGet, recvTarget(route, timeoutMs), "")
	if rec.Code != http.StatusOK {
		h.tb.Fatalf("recv %q: %d %s", route, rec.Code, rec.Body)
	}
	return decodeReply(h.tb, rec.Body.Bytes())
}

// ack acks key as route and returns the status.
func (h *harness) ack(route, key string) int {
	h.tb.Helper()
	return h.post("/ack", fmt.Sprintf(`{"me":%s,"ack":%s}`, jstr(route), jstr(key)))
}

// depth returns the depth of route's queue.
func (h *harness) depth(route string) int {
	h.tb.Helper()
	n, err := h.st.Depth(route)
	if err != nil {
		h.tb.Fatal(err)
	}
	return n
}

// listen serves the harness on a loopback listener and returns its URL.
// Parked polls are ended before the listener closes.
func (h *harness) listen() string {
	h.tb.Helper()
	ts := httptest.NewServer(h.srv)
	h.tb.Cleanup(ts.Close)
	h.tb.Cleanup(h.srv.Shutdown)
	return ts.URL
}

func decodeReply(tb testing.TB, body []byte) recvReply {
	tb.Helper()
	var r recvReply
	if err := json.Unmarshal(body, &r); err != nil {
		tb.Fatalf("decoding %s: %v", body, err)
	}
	return r
}

// errorBody is the JSON shape of every error answer.
type errorBody struct {
	Status string `json:"status,omitempty"`
	Error  string `json:"error"`
}

// jstr returns s as a JSON string.
func jstr(s string) string {
	b, err := identity.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// jsonDiff compares two JSON texts as values; numbers compare by their
// literal text.
func jsonDiff(tb testing.TB, got, want []byte) string {
	tb.Helper()
	return cmp.Diff(decodeAny(tb, want), decodeAny(tb, got))
}

func decodeAny(tb testing.TB, b []byte) any {
	tb.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		tb.Fatalf("decoding %q: %v", b, err)
	}
	return v
}

// httpDo sends a request to a real listener and returns the status and
// body.
func httpDo(tb testing.TB, client *http.Client, req *http.Request) (int, []byte) {
	tb.Helper()
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("%s %s: reading body: %v", req.Method, req.URL, err)
	}
	return resp.StatusCode, body
}

// waitFor polls cond until it holds, failing after d.
func waitFor(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	testutil.Eventually(tb, d, what, cond)
}

// settleGoroutines waits until the goroutine count is at most limit.
func settleGoroutines(tb testing.TB, limit int) {
	tb.Helper()
	testutil.EventuallyNil(tb, 10*time.Second, "the goroutines to end", func() error {
		if n := runtime.NumGoroutine(); n > limit {
			return fmt.Errorf("goroutines: %d, want at most %d", n, limit)
		}
		return nil
	})
}
