package main

import (
	"io"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/screen"
	"github.com/interlink-go/interlink/internal/testutil"
)

// commitCount returns interlink_bus_db_commit_seconds_count from the bus's
// /metrics.
func commitCount(t *testing.T, base string) int {
	t.Helper()
	v := metricValue(t, base, "interlink_bus_db_commit_seconds_count")
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("commit count %q: %v", v, err)
	}
	return n
}

func TestMetricsTimeDatabaseCommits(t *testing.T) {
	p := startBus(t, busEnv(), "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "bus.db"))
	defer p.stop(t)
	before := commitCount(t, p.base)
	for range 3 {
		if code := post(t, p.base, "/send", map[string]any{"to": "K#s", "payload": map[string]any{}}); code != 202 {
			t.Fatalf("send: %d", code)
		}
	}
	if after := commitCount(t, p.base); after < before+3 {
		t.Errorf("commits counted: %d before three sends, %d after", before, after)
	}
}

func TestMetricsOfAnInMemoryBusHaveNoCommits(t *testing.T) {
	p := startBus(t, busEnv(), "--addr", "127.0.0.1:0")
	defer p.stop(t)
	if code := post(t, p.base, "/send", map[string]any{"to": "K#s", "payload": map[string]any{}}); code != 202 {
		t.Fatalf("send: %d", code)
	}
	if n := commitCount(t, p.base); n != 0 {
		t.Errorf("an in-memory bus counted %d database commits", n)
	}
}

// metricValue returns the value of the sample named name, without labels,
// from the bus's /metrics.
func metricValue(t *testing.T, base, name string) string {
	t.Helper()
	resp, err := httpc.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("/metrics has no %s:\n%s", name, body)
	}
	return string(m[1])
}

func TestMetricsCountConnectionsThatNeverSendTheirHeaders(t *testing.T) {
	if !screen.Enabled {
		t.Skip("connections are not screened on this system")
	}
	p := startBus(t, busEnv(), "--addr", "127.0.0.1:0")
	defer p.stop(t)
	const (
		waiting = "interlink_bus_connections_awaiting_headers"
		dropped = "interlink_bus_connections_dropped_before_headers_total"
	)
	// The connection that asks for /metrics is counted as waiting from its
	// accept until the screen's goroutine lets go of it, which may come
	// after it was handed on and served: the gauge settles, with no
	// stalled connection, at 0. The counter only grows, so 0 once is 0
	// throughout.
	var w, d string
	if !testutil.Poll(10*time.Second, func() bool {
		w, d = metricValue(t, p.base, waiting), metricValue(t, p.base, dropped)
		return w == "0" && d == "0"
	}) {
		t.Fatalf("before any stalled connection: %s %s, %s %s", waiting, w, dropped, d)
	}
	for range 2 {
		c, err := net.Dial("tcp", strings.TrimPrefix(p.base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "GET /roster HTTP/1.1\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 10*time.Second, "two connections awaiting their headers", func() bool {
		return metricValue(t, p.base, waiting) == "2"
	})
	// One that closes before sending anything is let go at once.
	silent, err := net.Dial("tcp", strings.TrimPrefix(p.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	silent.Close()
	testutil.Eventually(t, 10*time.Second, "the silent connection dropped, the two others still waiting", func() bool {
		return metricValue(t, p.base, dropped) == "1" && metricValue(t, p.base, waiting) == "2"
	})
}
