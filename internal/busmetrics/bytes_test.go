package busmetrics

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/wire"
)

// The bytes the queues hold, the bounds and the refusals by reason are on
// /metrics; the gauge of bytes goes down as messages are acknowledged.
func TestQueuedBytesBoundsAndRefusals(t *testing.T) {
	const routeBytes, total = 3_000, 5_000
	st := store.NewMemory(&store.Options{RouteBytes: routeBytes, TotalBytes: total})
	srv := bus.New(st, nil)
	m := New()
	m.Limits(Limits{QueueCap: 1024, QueueBytes: routeBytes, TotalBytes: total})
	ts := httptest.NewServer(m.Handler(srv))
	t.Cleanup(func() { srv.Shutdown(); ts.Close(); st.Close() })
	s := &served{t: t, srv: srv, m: m, url: ts.URL}

	body := func(route string, n int) string {
		return fmt.Sprintf(`{"to":%s,"payload":"%s"}`, jstr(route), strings.Repeat("x", n))
	}
	for _, r := range []string{"K#a", "K#b"} {
		if code, b := s.do(http.MethodPost, "/send", body(r, 2_000)); code != http.StatusAccepted {
			t.Fatalf("send: %d %s", code, b)
		}
	}
	if code, _ := s.do(http.MethodPost, "/send", body("K#c", 2_000)); code != http.StatusInsufficientStorage {
		t.Fatalf("send to a full bus: %d, want 507", code)
	}
	if code, _ := s.do(http.MethodPost, "/send", body("K#c", 3_000)); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("send over a route's bound: %d, want 413", code)
	}

	fams := s.scrape()
	held := value(t, fams, "interlink_bus_queued_bytes")
	if want := float64(2 * store.EntrySize("K#a", len(`{"payload":"","ts":}`)+2_000+13)); held != want {
		t.Errorf("queued bytes = %v, want %v", held, want)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"interlink_bus_sends_refused_total", []string{"reason", "total_bytes"}, 1},
		{"interlink_bus_sends_refused_total", []string{"reason", "route_bytes"}, 1},
		{"interlink_bus_queue_cap_messages", nil, 1024},
		{"interlink_bus_queue_limit_bytes", nil, routeBytes},
		{"interlink_bus_queued_limit_bytes", nil, total},
		{"interlink_bus_requests_total", []string{"endpoint", "send", "code", "507"}, 1},
		{"interlink_bus_requests_total", []string{"endpoint", "send", "code", "413"}, 1},
	} {
		if got := value(t, fams, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}

	key := s.recv("K#a")
	if code, b := s.do(http.MethodPost, "/ack", fmt.Sprintf(`{"me":"K#a","ack":%s}`, jstr(key))); code != http.StatusOK {
		t.Fatalf("ack: %d %s", code, b)
	}
	if got := value(t, s.scrape(), "interlink_bus_queued_bytes"); got != held/2 {
		t.Errorf("queued bytes after one ack = %v, want %v", got, held/2)
	}
}

// A bus started without the bounds known leaves their gauges out, and one
// without a per-route byte bound (NATS) leaves out that one only.
func TestLimitsLeaveOutWhatIsNotSet(t *testing.T) {
	s := serve(t, 0)
	s.m.Limits(Limits{QueueCap: 8, TotalBytes: 1 << 20})
	fams := s.scrape()
	if fams["interlink_bus_queue_limit_bytes"] != nil {
		t.Error("a per-route byte bound reported where none was set")
	}
	if got := value(t, fams, "interlink_bus_queued_limit_bytes"); got != 1<<20 {
		t.Errorf("total bound = %v", got)
	}
}

// limitedStore is a store in memory that takes values of up to limit
// bytes, as a NATS store does.
type limitedStore struct {
	store.Store
	limit int64
}

func (l limitedStore) MaxValue() int64 { return l.limit }

// The largest body the bus accepts is a gauge: 2 MiB on a store without a
// limit of its own, less on one that takes less.
func TestMaxBodyIsAGauge(t *testing.T) {
	s := serve(t, 0)
	if got := value(t, s.scrape(), "interlink_bus_max_body_bytes"); got != wire.MaxBodyBytes {
		t.Errorf("max body on a store in memory = %v, want %v", got, wire.MaxBodyBytes)
	}

	st := limitedStore{Store: store.NewMemory(nil), limit: 1 << 20}
	srv := bus.New(st, nil)
	ts := httptest.NewServer(New().Handler(srv))
	t.Cleanup(func() { srv.Shutdown(); ts.Close(); st.Close() })
	l := &served{t: t, srv: srv, url: ts.URL}
	if got, want := value(t, l.scrape(), "interlink_bus_max_body_bytes"), float64(bus.BodyLimit(1<<20)); got != want {
		t.Errorf("max body on a store taking 1 MiB = %v, want %v", got, want)
	}
}
