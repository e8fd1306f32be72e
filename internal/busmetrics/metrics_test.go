package busmetrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/testutil"
)

// served is a bus with its metrics on loopback.
type served struct {
	t   *testing.T
	srv *bus.Server
	m   *Metrics
	url string
}

func serve(t *testing.T, capacity int) *served {
	t.Helper()
	st := store.NewMemory(&store.Options{Cap: capacity})
	srv := bus.New(st, nil)
	m := New()
	ts := httptest.NewServer(m.Handler(srv))
	t.Cleanup(func() { srv.Shutdown(); ts.Close(); st.Close() })
	return &served{t: t, srv: srv, m: m, url: ts.URL}
}

// do makes one request and returns its status and body.
func (s *served) do(method, path, body string) (int, []byte) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (s *served) send(route string) {
	s.t.Helper()
	if code, b := s.do(http.MethodPost, "/send", fmt.Sprintf(`{"to":%s,"payload":{}}`, jstr(route))); code != http.StatusAccepted {
		s.t.Fatalf("send: %d %s", code, b)
	}
}

// jstr returns s as a JSON string.
func jstr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// recv polls route once without waiting and returns the ack key, if any.
func (s *served) recv(route string) string {
	s.t.Helper()
	_, b := s.do(http.MethodGet, "/recv?timeout_ms=0&me="+url.QueryEscape(route), "")
	var r struct{ Ack string }
	if err := json.Unmarshal(b, &r); err != nil {
		s.t.Fatalf("recv %s: %v", b, err)
	}
	return r.Ack
}

// scrape reads /metrics and parses it with Prometheus's own text parser.
func (s *served) scrape() map[string]*dto.MetricFamily {
	s.t.Helper()
	code, b := s.do(http.MethodGet, Path, "")
	if code != http.StatusOK {
		s.t.Fatalf("/metrics: %d", code)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		s.t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// value returns the value of the one series of fams[name] whose labels
// include every pair of labels (name, value, name, value...); for a
// histogram, its sample count.
func value(tb testing.TB, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	tb.Helper()
	f := fams[name]
	if f == nil {
		tb.Fatalf("no metric %s", name)
	}
	var found []float64
	for _, m := range f.Metric {
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			match := false
			for _, lp := range m.Label {
				match = match || lp.GetName() == labels[i] && lp.GetValue() == labels[i+1]
			}
			ok = ok && match
		}
		if !ok {
			continue
		}
		switch {
		case m.Counter != nil:
			found = append(found, m.Counter.GetValue())
		case m.Gauge != nil:
			found = append(found, m.Gauge.GetValue())
		case m.Histogram != nil:
			found = append(found, float64(m.Histogram.GetSampleCount()))
		}
	}
	if len(found) != 1 {
		tb.Fatalf("%s%v: %d series, want 1", name, labels, len(found))
	}
	return found[0]
}

func TestCountersEqualTheTrafficSent(t *testing.T) {
	s := serve(t, 3)
	// Five messages to one route of cap 3 (two dropped), two to another.
	for range 5 {
		s.send("K#a")
	}
	s.send("K#b")
	s.send("K#b")
	// Three deliveries, two acknowledged; one poll of an empty route.
	ka, kb := s.recv("K#a"), s.recv("K#b")
	s.recv("K#b")
	for route, key := range map[string]string{"K#a": ka, "K#b": kb} {
		if code, b := s.do(http.MethodPost, "/ack", fmt.Sprintf(`{"me":%s,"ack":%s}`, jstr(route), jstr(key))); code != http.StatusOK {
			t.Fatalf("ack: %d %s", code, b)
		}
	}
	s.recv("K#empty")
	s.do(http.MethodPost, "/send", `{"to":1}`) // 422
	s.do(http.MethodPost, "/announce", `{"pubkey":"k1","name":"a"}`)
	s.do(http.MethodPost, "/announce", `{"pubkey":"k2","name":"b"}`)
	s.do(http.MethodGet, "/nowhere", "")
	s.do(http.MethodGet, "/", "")

	fams := s.scrape()
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"interlink_bus_messages_stored_total", nil, 7},
		{"interlink_bus_messages_dropped_total", nil, 2},
		{"interlink_bus_messages_delivered_total", nil, 3},
		{"interlink_bus_messages_acknowledged_total", nil, 2},
		{"interlink_bus_requests_total", []string{"endpoint", "send", "code", "202"}, 7},
		{"interlink_bus_requests_total", []string{"endpoint", "send", "code", "422"}, 1},
		{"interlink_bus_requests_total", []string{"endpoint", "recv", "code", "200"}, 4},
		{"interlink_bus_requests_total", []string{"endpoint", "ack", "code", "200"}, 2},
		{"interlink_bus_requests_total", []string{"endpoint", "announce", "code", "202"}, 2},
		{"interlink_bus_requests_total", []string{"endpoint", "other", "code", "404"}, 1},
		{"interlink_bus_requests_total", []string{"endpoint", "status", "code", "200"}, 1},
		{"interlink_bus_request_duration_seconds", []string{"endpoint", "recv"}, 4},
		{"interlink_bus_routes", nil, 2},           // K#a holds 2, K#b holds 1
		{"interlink_bus_messages_queued", nil, 3},  // 5-2 dropped-1 acked, 2-1 acked
		{"interlink_bus_roster_entries", nil, 2},   // two announcements
		{"interlink_bus_longpolls_parked", nil, 0}, // nobody waits
		{"interlink_bus_db_commit_seconds", nil, 0},
	} {
		if got := value(t, fams, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	for _, name := range []string{"process_resident_memory_bytes", "go_goroutines"} {
		if fams[name] == nil {
			t.Errorf("no %s", name)
		}
	}
	// The scrape itself is counted by the next one.
	if got := value(t, s.scrape(), "interlink_bus_requests_total", "endpoint", "metrics", "code", "200"); got != 1 {
		t.Errorf("metrics requests = %v, want 1", got)
	}
}

func TestLabelsNeverNameARouteKeyOrPath(t *testing.T) {
	s := serve(t, 0)
	for _, route := range []string{"KEY1#s1", "KEY2#s2", "KEY3"} {
		s.send(route)
		s.recv(route)
	}
	s.do(http.MethodPost, "/announce", `{"pubkey":"KEY4","name":"secret-name"}`)
	for i := range 50 {
		s.do(http.MethodGet, fmt.Sprintf("/KEY5-%d", i), "")
	}
	fams := s.scrape()
	series := 0
	for name, f := range fams {
		for _, m := range f.Metric {
			series++
			for _, lp := range m.Label {
				if strings.Contains(lp.GetValue(), "KEY") || strings.Contains(lp.GetValue(), "secret") {
					t.Errorf("%s carries the label %s=%q", name, lp.GetName(), lp.GetValue())
				}
			}
		}
	}
	if got := value(t, fams, "interlink_bus_requests_total", "endpoint", "other", "code", "404"); got != 50 {
		t.Errorf("unknown paths counted %v times under other, want 50", got)
	}
}

func TestParkedLongPollsAreCounted(t *testing.T) {
	s := serve(t, 0)
	done := make(chan error, 1)
	go func() {
		resp, err := http.Get(s.url + "/recv?timeout_ms=60000&me=K%23w")
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	testutil.Eventually(t, 10*time.Second, "the poll to park", func() bool { return s.srv.Stats().Parked == 1 })
	if got := value(t, s.scrape(), "interlink_bus_longpolls_parked"); got != 1 {
		t.Errorf("parked = %v, want 1", got)
	}
	s.send("K#w")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := value(t, s.scrape(), "interlink_bus_longpolls_parked"); got != 0 {
		t.Errorf("parked after the wake = %v, want 0", got)
	}
}

func TestMetricsRefuseOtherMethods(t *testing.T) {
	s := serve(t, 0)
	if code, b := s.do(http.MethodPost, Path, `{}`); code != http.StatusMethodNotAllowed || !json.Valid(b) {
		t.Errorf("POST /metrics: %d %s", code, b)
	}
}

// TestMetricsRefuseRequestsWithTooManyHeaderLines: /metrics, served before
// the bus sees the request, holds requests to the bus's bound on header
// lines as the bus does.
func TestMetricsRefuseRequestsWithTooManyHeaderLines(t *testing.T) {
	s := serve(t, 0)
	for _, tc := range []struct {
		lines, want int
	}{{bus.MaxHeaderFields - 2, http.StatusOK}, {bus.MaxHeaderFields + 1, http.StatusRequestHeaderFieldsTooLarge}} {
		req, err := http.NewRequest(http.MethodGet, s.url+Path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range tc.lines {
			req.Header.Add("X-Line", fmt.Sprint(i))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%d header lines: %d, want %d", tc.lines, resp.StatusCode, tc.want)
		}
	}
}
