package agent_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/reqsign"
)

// Agents sign every request, so on a bus that requires signatures they
// announce, discover, send, receive and acknowledge as on any other; the
// bus refused none of their requests.
func TestAgentsWorkOnABusThatRequiresSignatures(t *testing.T) {
	var unsigned, refused atomic.Int64
	url := bustest.Start(t, &bustest.Options{
		Auth: bus.AuthRequired,
		Wrap: func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				// The test's own roster checks below are unsigned.
				if reqsign.Unsigned(r.Header) && r.URL.Path != "/healthz" && r.URL.Path != "/roster" {
					unsigned.Add(1)
				}
				h.ServeHTTP(&statusSpy{ResponseWriter: w, refused: &refused}, r)
			})
		},
	})
	alice, bob := agenttest.Pair(t)
	b := agenttest.Start(t, bob, "b1", []string{url}, nil)
	agenttest.OnRoster(t, url, bob.Key(), "b1")
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)
	agenttest.OnRoster(t, url, alice.Key(), "a1")

	if got := a.OK("discover", nil); !strings.Contains(got, "b1") {
		t.Errorf("discover does not list bob's session: %s", got)
	}
	id := agenttest.MsgID(t, a.OK("send_message", map[string]any{"to": "bob", "text": "signed all the way"}))
	a.WaitText("message_status", map[string]any{"msg_id": id}, "[bus_accepted]")
	b.WaitText("receive_messages", nil, "signed all the way")
	b.OK("send_message", map[string]any{"to": "alice", "session": "a1", "text": "and back"})
	a.WaitText("receive_messages", nil, "and back")
	// Acknowledged on the bus: the queue is empty for its owner alone.
	agenttest.Eventually(t, "bob's queue to be acknowledged", func() bool {
		d, err := relay.New(url, &relay.Options{Signer: bob.Signer}).Recv(t.Context(), bob.Key()+"#b1", 0)
		return err == nil && !d.HasMessage
	})
	if unsigned.Load() != 0 || refused.Load() != 0 {
		t.Errorf("%d unsigned requests and %d refusals from the agents", unsigned.Load(), refused.Load())
	}
}

// statusSpy counts 401 and 429 answers.
type statusSpy struct {
	http.ResponseWriter
	refused *atomic.Int64
}

func (w *statusSpy) WriteHeader(code int) {
	if code == http.StatusUnauthorized || code == http.StatusTooManyRequests {
		w.refused.Add(1)
	}
	w.ResponseWriter.WriteHeader(code)
}

// On a bus that requires signatures, two peers still see each other's
// folders and summaries and exchange messages, while a stranger's agent,
// an unsigned roster and one signed by the stranger's key show the
// discoverable peer's name and key alone and the hidden one not at all
// (the stranger's own session is the stranger's to see).
func TestPeersOnARequiredBusSeeEachOthersDetailsAndStrangersDoNot(t *testing.T) {
	url := bustest.Start(t, &bustest.Options{Auth: bus.AuthRequired})
	alice, bob := agenttest.Pair(t)
	carol := agenttest.NewIdent(t)
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)
	b := agenttest.Start(t, bob, "b1", []string{url}, &agenttest.Options{Edit: func(c *agent.Config) { c.Hidden = true }})
	c := agenttest.Start(t, carol, "c1", []string{url}, nil)
	a.OK("set_summary", map[string]any{"summary": "alice-plans-the-merger"})
	b.OK("set_summary", map[string]any{"summary": "bob-plans-the-audit"})

	a.WaitText("discover", nil, "bob-plans-the-audit")
	if got := a.OK("discover", nil); !strings.Contains(got, "/work/b1") {
		t.Errorf("alice does not see her peer's folder: %s", got)
	}
	b.WaitText("discover", nil, "alice-plans-the-merger")
	if got := b.OK("discover", nil); !strings.Contains(got, "/work/a1") {
		t.Errorf("bob does not see his peer's folder: %s", got)
	}
	id := agenttest.MsgID(t, a.OK("send_message", map[string]any{"to": "bob", "text": "to a hidden peer"}))
	a.WaitText("message_status", map[string]any{"msg_id": id}, "[bus_accepted]")
	b.WaitText("receive_messages", nil, "to a hidden peer")
	b.OK("send_message", map[string]any{"to": "alice", "session": "a1", "text": "from a hidden peer"})
	a.WaitText("receive_messages", nil, "from a hidden peer")

	secrets := []string{"/work/a1", "/work/b1", "alice-plans-the-merger", "bob-plans-the-audit"}
	view := c.WaitText("discover", nil, alice.Fingerprint())
	for _, s := range append(secrets, bob.Fingerprint(), "b1") {
		if strings.Contains(view, s) {
			t.Errorf("the stranger's discover shows %q: %s", s, view)
		}
	}
	if !strings.Contains(view, "a1") {
		t.Errorf("the stranger's discover lacks alice's session, which is discoverable: %s", view)
	}
	for name, signer := range map[string]reqsign.Signer{"unsigned": nil, "signed by the stranger": carol.Signer} {
		ros := relay.FetchRoster(t.Context(), []*relay.Client{relay.New(url, &relay.Options{Signer: signer})})
		if ros.Available != 1 {
			t.Fatalf("%s roster: %v", name, ros.Failures)
		}
		seen := map[string]bool{}
		for _, e := range ros.Entries {
			seen[e.Key.String()+"#"+e.Session.SessionID] = true
			if own := signer != nil && e.Key.String() == carol.Key(); !own && (e.Session.Cwd != "" || e.Session.GitRoot != "" || e.Session.Summary != "") {
				t.Errorf("%s roster shows the details of %s#%s: %+v", name, e.Key.Fingerprint(), e.Session.SessionID, e.Session)
			}
		}
		if !seen[alice.Key()+"#a1"] || seen[bob.Key()+"#b1"] {
			t.Errorf("%s roster lists %v; want alice's a1 and not bob's b1", name, seen)
		}
	}
}
