package agent_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/identity"
)

// BenchmarkSendToCommit measures one message from alice's send_message call
// (in-process MCP client) to its commit in bob's mailbox, through a real
// in-memory bus on loopback: the roster lookup, signing, the outbox, HTTP
// /send, bob's long-poll wake-up, the trust gate and the locked mailbox
// write with fsync. It reports the median and 99th percentile besides the
// mean.
//
// Acknowledged messages stay as tombstones for 24 hours, in a log beside
// the mailbox file that a commit only appends to. The sub-benchmarks start
// bob's mailbox empty and with 1000 or 4000 acknowledged messages, and keep
// it near that size; the cost should not depend on it.
func BenchmarkSendToCommit(b *testing.B) {
	for _, prefill := range []int{0, 1000, 4000} {
		b.Run(fmt.Sprintf("mailbox=%d", prefill), func(b *testing.B) { benchSendToCommit(b, prefill) })
	}
}

func benchSendToCommit(b *testing.B, prefill int) {
	url := agenttest.StartBus(b)
	alice, bob := agenttest.Pair(b)
	root := b.TempDir()
	writeAcknowledged(b, root, alice, bob, "b1", prefill)
	got := make(chan string, 1)
	a := agenttest.Start(b, alice, "a1", []string{url}, &agenttest.Options{NoSink: true})
	agenttest.Start(b, bob, "b1", []string{url}, &agenttest.Options{Root: root, NoSink: true, Edit: func(c *agent.Config) {
		c.Delivered = func(m *identity.Message, _ string) { got <- m.MsgID }
	}})
	agenttest.OnRoster(b, url, bob.Key(), "b1")
	args := map[string]any{"to": "bob", "session": "b1", "text": "benchmark message of a typical length, about one line of prose."}
	var lat []time.Duration
	n := 0
	for b.Loop() {
		if n == 90 { // stay within 90 records of the starting size
			b.StopTimer()
			writeAcknowledged(b, root, alice, bob, "b1", prefill)
			n = 0
			b.StartTimer()
		}
		n++
		t0 := time.Now()
		id := agenttest.MsgID(b, a.OK("send_message", args))
		select {
		case m := <-got:
			if m != id {
				b.Fatalf("committed %s, sent %s", m, id)
			}
		case <-time.After(10 * time.Second):
			b.Fatal("message not committed within 10 s")
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// writeAcknowledged replaces the mailbox of to's session with the state n
// acknowledged messages from from leave behind, in the documented shape: a
// file without unread records and n lines in the tombstone log beside it.
func writeAcknowledged(tb testing.TB, root string, from, to *agenttest.Ident, session string, n int) {
	tb.Helper()
	type tombstone struct {
		Sender       string `json:"sender"`
		MsgID        string `json:"msg_id"`
		TS           uint64 `json:"ts"`
		Acknowledged bool   `json:"acknowledged"`
	}
	var log []byte
	now := identity.Millis(time.Now())
	for i := range n {
		line, err := json.Marshal(tombstone{Sender: from.Key(), MsgID: fmt.Sprintf("%032x", i), TS: now, Acknowledged: true})
		if err != nil {
			tb.Fatal(err)
		}
		log = append(append(log, line...), '\n')
	}
	dir := filepath.Join(root, "mailbox", to.Key())
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, session+".json"), []byte(`{"records":[],"notice":null}`), 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, session+".tombstones.jsonl"), log, 0o600); err != nil {
		tb.Fatal(err)
	}
}
