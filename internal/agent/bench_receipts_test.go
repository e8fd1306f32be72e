package agent_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/keylimit"
)

// requestCounter counts the bus's requests by path, and the /send bodies
// addressed to each of a few routes.
type requestCounter struct {
	paths  [3]atomic.Int64 // /send, /recv, /ack
	routes map[string]*atomic.Int64
	failed atomic.Int64 // answers other than 2xx
}

func newRequestCounter(routes ...string) *requestCounter {
	c := &requestCounter{routes: map[string]*atomic.Int64{}}
	for _, r := range routes {
		c.routes[r] = &atomic.Int64{}
	}
	return c
}

func (c *requestCounter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/send":
			c.paths[0].Add(1)
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			for rt, n := range c.routes {
				if bytes.HasPrefix(body, []byte(`{"to":"`+rt+`"`)) {
					n.Add(1)
				}
			}
		case "/recv":
			c.paths[1].Add(1)
		case "/ack":
			c.paths[2].Add(1)
		}
		rec := &codeRecorder{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rec, r)
		if rec.code >= 300 {
			c.failed.Add(1)
		}
	})
}

// codeRecorder keeps the status of an answer.
type codeRecorder struct {
	http.ResponseWriter
	code int
}

func (s *codeRecorder) WriteHeader(code int) { s.code = code; s.ResponseWriter.WriteHeader(code) }
func (s *codeRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// BenchmarkReceiptsOnAndOff measures what end-to-end receipts cost, from
// alice's send_message call to the commit in the recipient's mailbox (the
// path of BenchmarkSendToCommit), through a real in-memory bus on
// loopback. Alice, with receipts on, sends in turn to two recipients:
// bob, with receipts on, who notes each message stored (one locked file
// write before the relay is acknowledged) and sends alice a receipt per
// gathering window, and carol, with receipts off, as the original. Both
// see the same machine, so a change of its load falls on both; bob's
// receipts and alice's reading of them run while the next messages go.
// The run fails unless carol's side carried no receipt and bob's some.
//
// It reports the median of each side, on/off-rate (the rate of messages
// to bob as a fraction of the rate to carol, from their mean times),
// receipts-per-msg (receipts bob sent per message he got), and
// requests-per-msg: every /send, /recv and /ack the bus served, per
// message, over the whole run.
func BenchmarkReceiptsOnAndOff(b *testing.B) {
	alice, bob, carol := agenttest.NewIdent(b), agenttest.NewIdent(b), agenttest.NewIdent(b)
	alice.Admit(b, "bob", bob, "carol", carol)
	bob.Admit(b, "alice", alice)
	carol.Admit(b, "alice", alice)
	aliceRoute, carolRoute := alice.Key()+"#a1", carol.Key()+"#c1"
	count := newRequestCounter(aliceRoute, carolRoute)
	// The bus's per-key limits would hold up the sender long before the
	// receipts matter; they are measured on their own.
	fast := keylimit.Rate{Every: time.Nanosecond, Burst: 1 << 30}
	url := bustest.Start(b, &bustest.Options{Wrap: count.wrap,
		Limits: &bus.Limits{Sends: fast, RosterUpdates: fast, Unsigned: fast}})
	a := agenttest.Start(b, alice, "a1", []string{url}, &agenttest.Options{NoSink: true})
	agenttest.OnRoster(b, url, alice.Key(), "a1")

	sides := []*turnSide{
		{name: "on", peer: "bob", session: "b1", sender: a, from: alice, id: bob},
		{name: "off", peer: "carol", session: "c1", sender: a, from: alice, id: carol},
	}
	for _, s := range sides {
		s.startRecipient(b, url, func(c *agent.Config) { c.NoReceipts = s.name == "off" })
	}
	var startRequests, startReceipts int64
	runTurns(b, func() { // once everyone learnt everyone's capabilities
		startRequests = count.paths[0].Load() + count.paths[1].Load() + count.paths[2].Load()
		startReceipts = count.routes[aliceRoute].Load()
	}, sides...)

	msgs := sides[0].sent + sides[1].sent - 2
	// Let the last window's receipt go, so that the count is whole.
	agenttest.Eventually(b, "bob's last receipt", func() bool {
		return strings.Contains(a.OK("message_status", map[string]any{"msg_id": lastSent(b, a, "bob")}), "receipt: ")
	})
	requests := count.paths[0].Load() + count.paths[1].Load() + count.paths[2].Load() - startRequests
	receipts := count.routes[aliceRoute].Load() - startReceipts
	if receipts == 0 {
		b.Fatal("bob sent no receipt")
	}
	if n := count.failed.Load(); n != 0 {
		b.Fatalf("the bus refused %d requests", n)
	}
	if got := count.routes[carolRoute].Load(); got != sides[1].sent {
		b.Fatalf("%d sends to carol for %d messages: a receipt went to a peer without receipts", got, sides[1].sent)
	}
	for _, s := range sides {
		s.reportLatency(b, false)
	}
	b.ReportMetric(float64(sides[1].sum)/float64(sides[0].sum), "on/off-rate")
	b.ReportMetric(float64(receipts)/float64(sides[0].sent-1), "receipts-per-msg")
	b.ReportMetric(float64(requests)/float64(msgs), "requests-per-msg")
}

// lastSent returns the msg_id of the newest message n sent to peer.
func lastSent(tb testing.TB, n *agenttest.Node, peer string) string {
	tb.Helper()
	hist := n.OK("conversation_history", map[string]any{"peer": peer, "limit": 1})
	_, rest, ok := strings.Cut(hist, "(msg_id ")
	if !ok {
		tb.Fatalf("no sent message in %q", hist)
	}
	id, _, _ := strings.Cut(rest, ")")
	return id
}
