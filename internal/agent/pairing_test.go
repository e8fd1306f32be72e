package agent_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/pairing"
	"github.com/interlink-go/interlink/internal/route"
)

// The handshake survives a restart of the accepting side, both before the
// decision and between the decision and the confirmation leaving: the
// confirmation waits in the outbox, a file, and one older than a day is
// signed again when it finally goes out.
func TestPairingSurvivesRestartsOfTheAcceptingSide(t *testing.T) {
	url, sw := agenttest.StartSwitchableBus(t)
	alice, bob := agenttest.NewIdent(t), agenttest.NewIdent(t)
	a := agenttest.Start(t, alice, "a1", []string{url}, &agenttest.Options{Edit: func(c *agent.Config) { c.Name = "alice" }})
	bobRoot := t.TempDir()
	b := agenttest.Start(t, bob, "b1", []string{url}, &agenttest.Options{Root: bobRoot})
	agenttest.OnRoster(t, url, bob.Key(), "b1")

	first := a.OK("request_pair", map[string]any{"target": bob.Key()})
	b.WaitNotice("Pairing request")
	// Asking again keeps the request id.
	second := a.OK("request_pair", map[string]any{"target": bob.Key()})
	if requestID(first) == "" || requestID(first) != requestID(second) {
		t.Errorf("request ids %q and %q, want the same", requestID(first), requestID(second))
	}
	b.Stop()

	// Restarted bob finds the request by fingerprint and key, and accepts
	// it a day in the past while no relay takes anything.
	sw.Set("/send", true)
	past := func() time.Time { return time.Now().Add(-25 * time.Hour) }
	b2 := agenttest.Start(t, bob, "b1", []string{url}, &agenttest.Options{Root: bobRoot, Edit: func(c *agent.Config) { c.Timing.Now = past }})
	if got := b2.OK("list_pair_requests", nil); !strings.Contains(got, alice.Key()) {
		t.Fatalf("after restart: %q", got)
	}
	b2.OK("accept_pair", map[string]any{"fingerprint": alice.Key()})
	agenttest.Eventually(t, "send attempts", func() bool { return sw.Count("/send") > 2 })
	b2.Stop()

	// Back to the present, relays working: the saved confirmation is signed
	// again with the current time and completes the pairing.
	sw.Set("/send", false)
	b3 := agenttest.Start(t, bob, "b1", []string{url}, &agenttest.Options{Root: bobRoot})
	a.WaitNotice("Paired with '" + bob.Key() + "'")
	if got := a.OK("list_peers", nil); got != bob.Key()+" → "+bob.Key() {
		t.Errorf("alice's peers = %q", got)
	}
	// The typed target (here the full key) is the petname; chat works.
	a.OK("send_message", map[string]any{"to": bob.Key(), "text": "paired across restarts"})
	b3.WaitText("receive_messages", nil, "paired across restarts")
}

// A knock made while the relay takes nothing waits in the outbox, shows in
// list_pending and message_status of every process of the session, and
// goes out once the relay is back: once, from the one process that holds
// the session's sender lock, although two processes share the identity
// and session.
func TestAKnockMadeWhileTheRelayIsDownGoesOutOnceFromOneProcess(t *testing.T) {
	sw := agenttest.NewSwitchable()
	posts := &postCounter{}
	url := bustest.Start(t, &bustest.Options{Wrap: func(h http.Handler) http.Handler { return posts.wrap(sw.Wrap(h)) }})
	alice, bob := agenttest.NewIdent(t), agenttest.NewIdent(t)
	b := agenttest.Start(t, bob, "b1", []string{url}, &agenttest.Options{Edit: func(c *agent.Config) { c.Name = "bob" }})
	agenttest.OnRoster(t, url, bob.Key(), "b1")
	root := t.TempDir()
	name := func(c *agent.Config) { c.Name = "alice" }
	a1 := agenttest.Start(t, alice, "a1", []string{url}, &agenttest.Options{Root: root, Edit: name})
	a2 := agenttest.Start(t, alice, "a1", []string{url}, &agenttest.Options{Root: root, Edit: name})

	sw.Set("/send", true)
	id := requestID(a1.OK("request_pair", map[string]any{"target": "bob"}))
	if id == "" {
		t.Fatal("request_pair named no request id")
	}
	agenttest.Eventually(t, "attempts while the relay is down", func() bool { return sw.Count("/send") >= 3 })
	for i, n := range []*agenttest.Node{a1, a2} {
		if got := n.OK("list_pending", nil); !strings.Contains(got, "→ pairing request to bob (msg_id "+id+")") {
			t.Errorf("list_pending of process %d = %q, want the knock", i+1, got)
		}
		if got := n.OK("message_status", map[string]any{"msg_id": id}); !strings.Contains(got, "[pending]") {
			t.Errorf("message_status of process %d = %q, want the knock pending", i+1, got)
		}
	}

	sw.Set("/send", false)
	n := b.WaitNotice("Pairing request")
	if !strings.Contains(n.Content, alice.Fingerprint()) {
		t.Errorf("the knock that arrived is not alice's: %q", n.Content)
	}
	agenttest.Eventually(t, "the knock accepted by the relay", func() bool {
		return strings.Contains(a2.OK("message_status", map[string]any{"msg_id": id}), "[bus_accepted]")
	})
	if got := posts.accepted(id); got != 1 {
		t.Errorf("the relay accepted the knock %d times, want once", got)
	}
	var senders []int
	for i, n := range []*agenttest.Node{a1, a2} {
		if strings.Contains(n.Logs.String(), "msg_id="+id) {
			senders = append(senders, i+1)
		}
	}
	if len(senders) != 1 {
		t.Errorf("processes %v tried to send the knock, want exactly one", senders)
	}
	if got := a1.OK("list_pending", nil); strings.Contains(got, id) {
		t.Errorf("list_pending after delivery = %q", got)
	}
}

// postCounter counts, per msg_id, the posts to /send a bus accepted.
type postCounter struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (p *postCounter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/send" {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rec, r)
		if rec.code < 300 {
			p.mu.Lock()
			p.bodies = append(p.bodies, body)
			p.mu.Unlock()
		}
	})
}

// accepted returns how many accepted posts carried msgID.
func (p *postCounter) accepted(msgID string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, b := range p.bodies {
		if bytes.Contains(b, []byte(msgID)) {
			n++
		}
	}
	return n
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

// requestID returns the request id a request_pair answer names.
func requestID(answer string) string {
	_, r, _ := strings.Cut(answer, "(request id ")
	id, _, _ := strings.Cut(r, ")")
	return id
}

// The pairing messages an earlier version queued in the pairing file go
// out through the outbox when the session opens; one this side would never
// have signed is dropped, not signed again, and the one behind it still
// goes.
func TestAnEarlierVersionsQueuedKnockGoesOutThroughTheOutbox(t *testing.T) {
	url := agenttest.StartBus(t)
	alice, bob, eve := agenttest.NewIdent(t), agenttest.NewIdent(t), agenttest.NewIdent(t)
	b := agenttest.Start(t, bob, "b1", []string{url}, &agenttest.Options{Edit: func(c *agent.Config) { c.Name = "bob" }})
	agenttest.OnRoster(t, url, bob.Key(), "b1")
	tr := route.New(bob.Key(), "b1")
	bad, err := pairing.RequestMessage(eve.Signer, bob.Signer.Public(), tr, "eve", strings.Repeat("e", 32), route.New(eve.Key(), "e"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	mine, err := pairing.RequestMessage(alice.Signer, bob.Signer.Public(), tr, "alice", strings.Repeat("a", 32), route.New(alice.Key(), "a1"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	path := filepath.Join(root, "pairing", alice.Key(), "a1.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	agenttest.WriteFile(t, path, fmt.Sprintf(`{"inbound":[],"outbound":[],"queued":[%s,%s]}`, jobJSON(t, bad), jobJSON(t, mine)))
	a := agenttest.Start(t, alice, "a1", []string{url}, &agenttest.Options{Root: root, Edit: func(c *agent.Config) { c.Name = "alice" }})

	n := b.WaitNotice("Pairing request")
	if !strings.Contains(n.Content, alice.Fingerprint()) {
		t.Errorf("the knock that arrived is not alice's: %q", n.Content)
	}
	for _, r := range b.TextRecords() {
		if strings.Contains(r.Content, eve.Fingerprint()) {
			t.Error("the planted job was sent")
		}
	}
	if !strings.Contains(a.Logs.String(), "pairing: queued job dropped") {
		t.Errorf("dropping the planted job was not logged:\n%s", a.Logs.String())
	}
	if got := a.OK("message_status", map[string]any{"msg_id": mine.Msg.MsgID}); !strings.Contains(got, "pairing request to") {
		t.Errorf("message_status of the moved knock = %q", got)
	}
}

func jobJSON(t testing.TB, j pairing.Job) string {
	m, err := j.Msg.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`{"route":%q,"msg":%s}`, j.Route, m)
}
