package bus

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/wire"
)

// limitedStore is a store that takes values up to a limit that a test may
// change while the bus runs, as a NATS store's limit changes when its
// connection moves to another server. enqueueLimit, when set, is what
// Enqueue applies instead, for a limit that changed between the bus's
// check and the enqueue.
type limitedStore struct {
	store.Store
	limit, enqueueLimit atomic.Int64
}

func newLimitedStore(limit int64) *limitedStore {
	l := &limitedStore{Store: store.NewMemory(nil)}
	l.limit.Store(limit)
	return l
}

func (l *limitedStore) MaxValue() int64 { return l.limit.Load() }

func (l *limitedStore) Enqueue(route string, value []byte) (string, int, error) {
	limit := l.limit.Load()
	if e := l.enqueueLimit.Load(); e > 0 {
		limit = e
	}
	if int64(len(value)) > limit {
		return "", 0, &store.BoundError{Err: store.ErrPayloadLimit, Bound: limit, Size: int64(len(value))}
	}
	return l.Store.Enqueue(route, value)
}

// sendBody returns a /send body of exactly n bytes for route.
func sendBody(tb testing.TB, route string, n int64) string {
	tb.Helper()
	head := `{"to":` + jstr(route) + `,"payload":"`
	pad := n - int64(len(head)) - 2
	if pad < 0 {
		tb.Fatalf("a body of %d bytes cannot hold route %q", n, route)
	}
	return head + strings.Repeat("x", int(pad)) + `"}`
}

// wantTooLarge checks that rec is a 413 whose JSON error names limit.
func wantTooLarge(tb testing.TB, rec *httptest.ResponseRecorder, limit int64) {
	tb.Helper()
	body := rec.Body.Bytes()
	if rec.Code != http.StatusRequestEntityTooLarge {
		tb.Fatalf("status %d %s, want 413", rec.Code, body)
	}
	var e errorBody
	if err := json.Unmarshal(body, &e); err != nil {
		tb.Fatalf("413 body %s: %v", body, err)
	}
	if want := "request body too large: more than " + strconv.FormatInt(limit, 10) + " bytes, the most this bus's store takes"; e.Error != want {
		tb.Fatalf("413 error %q, want %q", e.Error, want)
	}
}

// A store that takes less than the bus's 2 MiB lowers the largest /send
// body to what its envelope leaves: a body of exactly that size is stored
// and read back, one byte more gets 413 naming the limit, and every
// answer tells the limit in its header. When the store's limit changes,
// the bus follows it; when it drops between the bus's check and the
// enqueue, the send still gets 413, not a storage error.
func TestSendBodyLimitFollowsTheStore(t *testing.T) {
	st := newLimitedStore(64 << 10)
	h := newHarness(t, st, 0)
	limit := int64(64<<10) - wire.EnvelopeOverhead
	if got := h.srv.MaxBody(); got != limit {
		t.Fatalf("MaxBody() = %d, want %d", got, limit)
	}
	body := sendBody(t, "K#s", limit)
	if rec := h.do(http.MethodPost, "/send", body); rec.Code != http.StatusAccepted {
		t.Fatalf("send of %d bytes: %d %s", limit, rec.Code, rec.Body)
	}
	r := h.poll("K#s", 0)
	if r.Status != "message" || len(r.Envelope.Payload) != int(limit)-len(`{"to":"K#s","payload":}`) {
		t.Fatalf("poll: %s with a payload of %d bytes", r.Status, len(r.Envelope.Payload))
	}
	if code := h.ack("K#s", r.Ack); code != http.StatusOK {
		t.Fatalf("ack: %d", code)
	}
	rec := h.do(http.MethodPost, "/send", sendBody(t, "K#s", limit+1))
	wantTooLarge(t, rec, limit)
	if h.depth("K#s") != 0 {
		t.Fatal("a refused send was stored")
	}

	for _, target := range []string{"/healthz", "/send", "/roster", "/nowhere", recvTarget("K#s", 0)} {
		method := http.MethodGet
		if target == "/send" {
			method = http.MethodPost
		}
		rec := h.do(method, target, "{}")
		if got := rec.Header().Get(wire.MaxBodyHeader); got != strconv.FormatInt(limit, 10) {
			t.Errorf("%s %s answers %s %q, want %d", method, target, wire.MaxBodyHeader, got, limit)
		}
	}
	if rec := h.do(http.MethodGet, "/healthz", ""); rec.Body.String() != `{"status":"ok"}` {
		t.Errorf("/healthz answers %s, want {\"status\":\"ok\"} alone", rec.Body)
	}

	// The connection moved to a server that takes less.
	st.limit.Store(40 << 10)
	lower := int64(40<<10) - wire.EnvelopeOverhead
	rec = h.do(http.MethodPost, "/send", body)
	wantTooLarge(t, rec, lower)
	if got := rec.Header().Get(wire.MaxBodyHeader); got != strconv.FormatInt(lower, 10) {
		t.Errorf("header after the limit changed: %q, want %d", got, lower)
	}

	// The limit drops after the check: the store refuses the enqueue.
	st.enqueueLimit.Store(1 << 10)
	rec = h.do(http.MethodPost, "/send", sendBody(t, "K#s", 2<<10))
	wantTooLarge(t, rec, (1<<10)-wire.EnvelopeOverhead)
	if got := h.logs.find("message longer than the store takes"); len(got) != 1 {
		t.Errorf("logged %d warnings about the refused enqueue, want 1", len(got))
	}
}

// A store without a limit of its own leaves the 2 MiB of the original's
// relays, which every answer tells too.
func TestSendBodyLimitWithoutAStoreLimit(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		h := newHarness(t, kind.open(t, 0), 0)
		if got := h.srv.MaxBody(); got != wire.MaxBodyBytes {
			t.Fatalf("MaxBody() = %d, want %d", got, wire.MaxBodyBytes)
		}
		rec := h.do(http.MethodGet, "/healthz", "")
		if got := rec.Header().Get(wire.MaxBodyHeader); got != strconv.Itoa(wire.MaxBodyBytes) {
			t.Fatalf("%s = %q, want %d", wire.MaxBodyHeader, got, wire.MaxBodyBytes)
		}
		rec = h.do(http.MethodPost, "/send", sendBody(t, "K#s", wire.MaxBodyBytes+1))
		if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "more than 2097152 bytes") {
			t.Fatalf("send of 2 MiB + 1: %d %s", rec.Code, rec.Body)
		}
	})
}

func TestBodyLimit(t *testing.T) {
	for _, c := range []struct{ value, want int64 }{
		{MaxEnvelopeBytes, wire.MaxBodyBytes},
		{8 << 20, wire.MaxBodyBytes},
		{MaxEnvelopeBytes - 1, wire.MaxBodyBytes - 1},
		{MinEnvelopeBytes, MinBodyBytes},
		{wire.EnvelopeOverhead, 0},
		{0, 0},
	} {
		if got := BodyLimit(c.value); got != c.want {
			t.Errorf("BodyLimit(%d) = %d, want %d", c.value, got, c.want)
		}
	}
}
