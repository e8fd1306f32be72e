package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/store/natstest"
)

// The bounds these tests give the bus through its environment: a route
// holds 4 MiB, all routes 6 MiB. A message of mib bytes on a route of
// four bytes counts a little over 1 MiB, so a route holds three of them
// and the bus five.
const (
	testQueueBytes = 4 << 20
	testTotalBytes = 6 << 20
	mib            = 1 << 20
)

var boundsEnv = []string{
	"INTERLINK_QUEUE_BYTES=" + strconv.Itoa(testQueueBytes),
	"INTERLINK_TOTAL_BYTES=6MiB",
}

// bigPayload is a JSON string payload of mib bytes, starting with tag.
func bigPayload(tag string) json.RawMessage {
	b := bytes.Repeat([]byte{'.'}, mib)
	b[0], b[len(b)-1] = '"', '"'
	copy(b[1:], tag)
	return b
}

// sendStatus posts payload to route and returns the status, the
// Retry-After header and the body.
func sendStatus(t testing.TB, base, route string, payload json.RawMessage) (int, string, string) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"to": route, "payload": payload})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpc.Post(base+"/send", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("send to %q: %v", route, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
}

// metricInt returns the sample named name, labels included as /metrics
// writes them, as an integer.
func metricInt(t *testing.T, base, name string) int64 {
	t.Helper()
	v := metricValue(t, base, name)
	n, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("%s = %q: %v", name, v, err)
	}
	return int64(n)
}

// fillBus sends a message of mib bytes to each of routes R#00, R#01, ...
// until the bus refuses one with 507, checks the refusal, and returns how
// many it accepted.
func fillBus(t *testing.T, base string) int {
	t.Helper()
	for i := 0; ; i++ {
		route := fmt.Sprintf("R#%02d", i)
		code, retry, body := sendStatus(t, base, route, bigPayload(route))
		if code == http.StatusAccepted {
			if i >= testTotalBytes/mib {
				t.Fatalf("the bus accepted %d messages of 1 MiB under a total of %d bytes", i+1, testTotalBytes)
			}
			continue
		}
		want := fmt.Sprintf(`{"error":"bus full: queued messages would exceed the bus's total bound of %d bytes; retry later"}`, testTotalBytes)
		if code != http.StatusInsufficientStorage || retry != "5" || body != want {
			t.Fatalf("send %d to a full bus: %d, Retry-After %q, %s; want 507, 5, %s", i, code, retry, body, want)
		}
		return i
	}
}

// Messages to many routes, each far under its own bound, fill the bus to
// its total: the next send is refused with 507 whatever its route, nothing
// the bus accepted is lost, the bytes held stay within the bound, and an
// acknowledgement makes room for the refused message, sent again.
func TestBusRefusesSendsBeyondItsTotalBytes(t *testing.T) {
	t.Parallel()
	p := startBus(t, busEnv(boundsEnv...), "--addr", "127.0.0.1:0")
	defer p.stop(t)
	accepted := fillBus(t, p.base)
	if accepted != 5 {
		t.Fatalf("accepted %d messages of 1 MiB under a total of 6 MiB, want 5", accepted)
	}
	// A route that has a message is refused as well.
	if code, _, _ := sendStatus(t, p.base, "R#00", bigPayload("R#00 again")); code != http.StatusInsufficientStorage {
		t.Fatalf("send to a route with a message on a full bus: %d, want 507", code)
	}
	if held := metricInt(t, p.base, "interlink_bus_queued_bytes"); held > testTotalBytes || held < int64(accepted)*mib {
		t.Fatalf("interlink_bus_queued_bytes = %d for %d messages of 1 MiB, bound %d", held, accepted, testTotalBytes)
	}
	if n := metricInt(t, p.base, `interlink_bus_sends_refused_total{reason="total_bytes"}`); n != 2 {
		t.Fatalf("refusals counted: %d, want 2", n)
	}
	for name, want := range map[string]int64{
		"interlink_bus_queued_limit_bytes":     testTotalBytes,
		"interlink_bus_queue_limit_bytes":      testQueueBytes,
		"interlink_bus_messages_queued":        int64(accepted),
		"interlink_bus_messages_dropped_total": 0,
	} {
		if got := metricInt(t, p.base, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}

	got := drain(t, p.base, "R#00")
	if len(got) != 1 || got[0] != string(bigPayload("R#00")) {
		t.Fatalf("R#00 held %d messages", len(got))
	}
	route := fmt.Sprintf("R#%02d", accepted)
	if code, _, body := sendStatus(t, p.base, route, bigPayload(route)); code != http.StatusAccepted {
		t.Fatalf("the refused message, sent again after an acknowledgement: %d %s", code, body)
	}
	for i := 1; i <= accepted; i++ {
		route := fmt.Sprintf("R#%02d", i)
		if got := drain(t, p.base, route); len(got) != 1 || got[0] != string(bigPayload(route)) {
			t.Fatalf("%s held %d messages", route, len(got))
		}
	}
	if held := metricInt(t, p.base, "interlink_bus_queued_bytes"); held != 0 {
		t.Fatalf("interlink_bus_queued_bytes = %d with every queue drained", held)
	}
}

// One route sent large messages keeps at most its own bound, dropping its
// oldest as a full queue does, and leaves the rest of the total to others.
func TestBusRouteKeepsItsBytesDroppingTheOldest(t *testing.T) {
	t.Parallel()
	p := startBus(t, busEnv(boundsEnv...), "--addr", "127.0.0.1:0")
	defer p.stop(t)
	for i := range 8 {
		if code, _, body := sendStatus(t, p.base, "R#me", bigPayload(strconv.Itoa(i))); code != http.StatusAccepted {
			t.Fatalf("send %d to one route: %d %s", i, code, body)
		}
	}
	if n := metricInt(t, p.base, "interlink_bus_messages_dropped_total"); n != 5 {
		t.Fatalf("dropped %d, want 5: a route of 4 MiB holds three messages of 1 MiB", n)
	}
	if held := metricInt(t, p.base, "interlink_bus_queued_bytes"); held > testQueueBytes {
		t.Fatalf("one route holds %d bytes, over its bound of %d", held, testQueueBytes)
	}
	// Two other messages still fit in the total.
	for _, route := range []string{"R#a1", "R#a2"} {
		if code, _, body := sendStatus(t, p.base, route, bigPayload(route)); code != http.StatusAccepted {
			t.Fatalf("send to %s: %d %s", route, code, body)
		}
	}
	got := drain(t, p.base, "R#me")
	want := []string{string(bigPayload("5")), string(bigPayload("6")), string(bigPayload("7"))}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("R#me held %d messages; want the newest three, in order", len(got))
	}
	if logs := logLines(p.logs.String(), "queue full; dropped oldest"); len(logs) == 0 || !strings.Contains(logs[0], "to=R#me") {
		t.Fatalf("no drop warning for R#me:\n%s", p.logs.String())
	}
}

// A bus restarted on its database counts the bytes in the file again: full
// before the restart, it is full after it, and an acknowledgement after
// the restart makes room.
func TestBusCountsQueuedBytesAgainAfterARestart(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "bus.db")
	p := startBus(t, busEnv(boundsEnv...), "--addr", "127.0.0.1:0", "--db", db)
	accepted := fillBus(t, p.base)
	held := metricInt(t, p.base, "interlink_bus_queued_bytes")
	p.stop(t)

	p = startBus(t, busEnv(boundsEnv...), "--addr", "127.0.0.1:0", "--db", db)
	defer p.stop(t)
	if got := metricInt(t, p.base, "interlink_bus_queued_bytes"); got != held {
		t.Fatalf("interlink_bus_queued_bytes = %d after the restart, %d before", got, held)
	}
	route := fmt.Sprintf("R#%02d", accepted)
	if code, _, _ := sendStatus(t, p.base, route, bigPayload(route)); code != http.StatusInsufficientStorage {
		t.Fatalf("send to the restarted full bus: %d, want 507", code)
	}
	if got := drain(t, p.base, "R#00"); len(got) != 1 {
		t.Fatalf("R#00 held %d messages after the restart, want 1", len(got))
	}
	if code, _, body := sendStatus(t, p.base, route, bigPayload(route)); code != http.StatusAccepted {
		t.Fatalf("send after an acknowledgement: %d %s", code, body)
	}
}

// Two buses on one JetStream stream share its total, which the server
// holds: what one bus fills, the other is refused for, and the bytes both
// report are the stream's.
func TestBusesOnOneStreamShareTheTotal(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, nil)
	env := busEnv("INTERLINK_TOTAL_BYTES=6MiB")
	args := []string{"--addr", "127.0.0.1:0", "--nats", srv.URL(), "--nats-stream", "SHARED"}
	a, b := startBus(t, env, args...), startBus(t, env, args...)
	defer a.stop(t)
	defer b.stop(t)
	accepted := fillBus(t, a.base)
	if accepted < 4 || accepted > 5 {
		t.Fatalf("the stream took %d messages of 1 MiB under a total of 6 MiB", accepted)
	}
	route := fmt.Sprintf("R#%02d", accepted)
	if code, _, _ := sendStatus(t, b.base, route, bigPayload(route)); code != http.StatusInsufficientStorage {
		t.Fatalf("send through the other bus: %d, want 507", code)
	}
	if ha, hb := metricInt(t, a.base, "interlink_bus_queued_bytes"), metricInt(t, b.base, "interlink_bus_queued_bytes"); ha != hb || ha > testTotalBytes {
		t.Fatalf("queued bytes: %d through one bus, %d through the other, bound %d", ha, hb, testTotalBytes)
	}
	if got := drain(t, b.base, "R#00"); len(got) != 1 {
		t.Fatalf("R#00 held %d messages", len(got))
	}
	if code, _, body := sendStatus(t, a.base, route, bigPayload(route)); code != http.StatusAccepted {
		t.Fatalf("send after an acknowledgement through the other bus: %d %s", code, body)
	}
}

// The bus says at start which byte bounds it applies: both, or with NATS
// the total alone, and the defaults unless told otherwise; and the largest
// body it takes, 2 MiB where the store takes it.
func TestListeningLogsTheByteBounds(t *testing.T) {
	t.Parallel()
	bounds := regexp.MustCompile(`msg="bus listening" addr=\S+ cap=\d+(?: queue_bytes=(\d+))? total_bytes=(\d+) max_body=2097152\n`)
	srv := natstest.Start(t, nil)
	for _, c := range []struct {
		name         string
		env, args    []string
		route, total string
	}{
		{"defaults", nil, nil, strconv.Itoa(store.DefaultRouteBytes), strconv.Itoa(store.DefaultTotalBytes)},
		{"environment", boundsEnv, nil, strconv.Itoa(testQueueBytes), strconv.Itoa(testTotalBytes)},
		{"flags", boundsEnv, []string{"--queue-bytes", "3MiB", "--total-bytes", "1GiB"}, strconv.Itoa(3 << 20), strconv.Itoa(1 << 30)},
		{"nats", nil, []string{"--nats", srv.URL(), "--total-bytes", "6MiB"}, "", strconv.Itoa(testTotalBytes)},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := startBus(t, busEnv(c.env...), append([]string{"--addr", "127.0.0.1:0"}, c.args...)...)
			defer p.stop(t)
			m := bounds.FindStringSubmatch(p.logs.String())
			if m == nil || m[1] != c.route || m[2] != c.total {
				t.Fatalf("want queue_bytes=%q total_bytes=%q in the listening line:\n%s", c.route, c.total, p.logs.String())
			}
		})
	}
}

// The defaults the help text gives are the store's.
func TestByteBoundDefaults(t *testing.T) {
	for _, c := range []struct {
		flag string
		want int64
	}{{defaultQueueBytes, store.DefaultRouteBytes}, {defaultTotalBytes, store.DefaultTotalBytes}} {
		if got, err := parseBytes(c.flag); err != nil || got != c.want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", c.flag, got, err, c.want)
		}
	}
}
