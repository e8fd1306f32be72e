package agent_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

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
