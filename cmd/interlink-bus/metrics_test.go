package main

import (
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// commitCount returns interlink_bus_db_commit_seconds_count from the bus's
// /metrics.
func commitCount(t *testing.T, base string) int {
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
	m := regexp.MustCompile(`(?m)^interlink_bus_db_commit_seconds_count (\d+)$`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("/metrics has no commit count:\n%s", body)
	}
	n, _ := strconv.Atoi(string(m[1]))
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
