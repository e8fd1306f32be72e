package agent_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/keylimit"
	"github.com/interlink-go/interlink/internal/mailbox"
)

// unlimitedBus starts a bus for a benchmark that times messages: its
// per-key and per-address limits are far above any rate the benchmark
// reaches, since a send held back by them waits a second and the figures
// would measure the limit. A request the bus still refuses with 429
// fails the benchmark when it ends.
func unlimitedBus(b *testing.B) string {
	b.Helper()
	fast := keylimit.Rate{Every: time.Nanosecond, Burst: 1 << 30}
	var limited atomic.Int64
	b.Cleanup(func() {
		if n := limited.Load(); n > 0 {
			b.Errorf("the bus refused %d requests for its rate limits; the figures measure the limit", n)
		}
	})
	return bustest.Start(b, &bustest.Options{
		Limits: &bus.Limits{Sends: fast, RosterUpdates: fast, Unsigned: fast},
		Wrap: func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h.ServeHTTP(statusWatcher{ResponseWriter: w, limited: &limited}, r)
			})
		},
	})
}

// statusWatcher counts the answers with status 429.
type statusWatcher struct {
	http.ResponseWriter
	limited *atomic.Int64
}

func (s statusWatcher) WriteHeader(code int) {
	if code == http.StatusTooManyRequests {
		s.limited.Add(1)
	}
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the writer's own methods
// (flushing a long poll, its deadlines).
func (s statusWatcher) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// BenchmarkSendToCommit measures one message from alice's send_message call
// (in-process MCP client) to its commit in bob's mailbox, through a real
// in-memory bus on loopback: the roster lookup, signing, the outbox, HTTP
// /send, bob's long-poll wake-up, the trust gate and the locked mailbox
// write with fsync.
//
// Acknowledged messages stay for 24 hours as tombstones, in a log beside
// the mailbox file, and their text stays in the history, a log per day
// beside it; a commit writes neither. Two sessions of bob receive, in
// turn, so that a change of the machine's load falls on both: "empty"
// starts with nothing, "read" with 4,000 messages acknowledged that day
// (their tombstones and history lines), and each is brought back to that
// state every 45 messages. It reports the median and 99th percentile of
// each, and read/empty, the ratio of their means.
func BenchmarkSendToCommit(b *testing.B) {
	const prefill = 4000
	url := unlimitedBus(b)
	alice, bob := agenttest.Pair(b)
	a := agenttest.Start(b, alice, "a1", []string{url}, &agenttest.Options{NoSink: true})
	type side struct {
		session, root string
		prefill       int
		got           chan string
		lat           []time.Duration
		sum           time.Duration
	}
	sides := []*side{{session: "b0"}, {session: "b4", prefill: prefill}}
	for _, s := range sides {
		s.root, s.got = b.TempDir(), make(chan string, 1)
		writeAcknowledged(b, s.root, alice, bob, s.session, s.prefill)
		mb, err := mailbox.Open(s.root, bob.Signer.Public(), s.session, nil)
		if err != nil {
			b.Fatal(err)
		}
		if h, err := mb.History("alice", 0, false); err != nil || len(h) != s.prefill {
			b.Fatalf("session %s shows %d messages in its history, %v; want %d", s.session, len(h), err, s.prefill)
		}
		agenttest.Start(b, bob, s.session, []string{url}, &agenttest.Options{Root: s.root, NoSink: true, Edit: func(c *agent.Config) {
			c.Delivered = func(m *identity.Message, _ string) { s.got <- m.MsgID }
		}})
		agenttest.OnRoster(b, url, bob.Key(), s.session)
	}
	n := 0
	for b.Loop() {
		if n == 45 { // stay within 45 unread records of the starting state
			b.StopTimer()
			for _, s := range sides {
				writeAcknowledged(b, s.root, alice, bob, s.session, s.prefill)
			}
			n = 0
			b.StartTimer()
		}
		n++
		for _, s := range sides {
			args := map[string]any{"to": "bob", "session": s.session, "text": "benchmark message of a typical length, about one line of prose."}
			t0 := time.Now()
			id := agenttest.MsgID(b, a.OK("send_message", args))
			select {
			case m := <-s.got:
				if m != id {
					b.Fatalf("committed %s, sent %s", m, id)
				}
			case <-time.After(10 * time.Second):
				b.Fatal("message not committed within 10 s")
			}
			d := time.Since(t0)
			s.lat = append(s.lat, d)
			s.sum += d
		}
	}
	for _, s := range sides {
		name := "empty"
		if s.prefill > 0 {
			name = "read"
		}
		slices.Sort(s.lat)
		b.ReportMetric(float64(s.lat[len(s.lat)/2].Microseconds()), name+"-p50-µs")
		b.ReportMetric(float64(s.lat[len(s.lat)*99/100].Microseconds()), name+"-p99-µs")
	}
	b.ReportMetric(float64(sides[1].sum)/float64(sides[0].sum), "read/empty")
}

// writeAcknowledged replaces the mailbox of to's session with the state n
// acknowledged messages from from leave behind, in the documented shape: a
// file without unread records, n lines in the tombstone log beside it,
// and n lines in the history file of the day.
func writeAcknowledged(tb testing.TB, root string, from, to *agenttest.Ident, session string, n int) {
	tb.Helper()
	type tombstone struct {
		Sender       string `json:"sender"`
		MsgID        string `json:"msg_id"`
		TS           uint64 `json:"ts"`
		Acknowledged bool   `json:"acknowledged"`
	}
	type line struct {
		tombstone
		Peer    string          `json:"peer"`
		State   string          `json:"state"`
		Message json.RawMessage `json:"message"`
	}
	var log, hist []byte
	now := identity.Millis(time.Now())
	for i := range n {
		t := tombstone{Sender: from.Key(), MsgID: fmt.Sprintf("%032x", i), TS: now, Acknowledged: true}
		tl, err := json.Marshal(t)
		if err != nil {
			tb.Fatal(err)
		}
		log = append(append(log, tl...), '\n')
		m := identity.Message{To: to.Key(), Text: "an earlier message of a typical length, about one line of prose.", TS: now, MsgID: t.MsgID}
		if err := from.Signer.SignMessage(&m); err != nil {
			tb.Fatal(err)
		}
		raw, err := m.MarshalJSON()
		if err != nil {
			tb.Fatal(err)
		}
		t.Acknowledged = false // the history line has no such field
		hl, err := json.Marshal(line{tombstone: t, Peer: "alice", State: "receiver_acknowledged", Message: raw})
		if err != nil {
			tb.Fatal(err)
		}
		hist = append(append(hist, hl...), '\n')
	}
	dir := filepath.Join(root, "mailbox", to.Key())
	histDir := filepath.Join(dir, session+".history")
	if err := os.MkdirAll(histDir, 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, session+".json"), []byte(`{"records":[],"notice":null}`), 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, session+".tombstones.jsonl"), log, 0o600); err != nil {
		tb.Fatal(err)
	}
	day := time.UnixMilli(int64(now)).UTC().Format(time.DateOnly)
	if err := os.WriteFile(filepath.Join(histDir, day+".jsonl"), hist, 0o600); err != nil {
		tb.Fatal(err)
	}
}
