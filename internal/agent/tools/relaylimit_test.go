package tools_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/wire"
)

// smallValue is what a relay's store takes in these tests, as a NATS
// server with max_payload 64 KiB would; smallBody is the /send body that
// relay takes.
const smallValue = 64 << 10

var smallBody = bus.BodyLimit(smallValue)

// A relay that takes less than 1 MiB says so, and send_message knows it
// at the tool call: a text too large for every relay is refused there,
// naming each relay's limit, and nothing is queued; one that fits is
// sent.
func TestSendMessageRefusesWhatNoRelayTakes(t *testing.T) {
	small := bustest.Start(t, &bustest.Options{MaxValue: smallValue})
	alice, bob := agenttest.Pair(t)
	a := agenttest.Start(t, alice, "a1", []string{small}, nil)
	agenttest.Start(t, bob, "b1", []string{small}, nil)
	agenttest.OnRoster(t, small, bob.Key(), "b1")

	msg := a.RPCErr("send_message", map[string]any{"to": "bob", "text": strings.Repeat("x", smallValue)})
	if !strings.Contains(msg, "message too large for the relays") ||
		!strings.Contains(msg, small+" takes at most "+strconv.FormatInt(smallBody, 10)+" bytes") {
		t.Fatalf("send_message of a text over the relay's limit: %q", msg)
	}
	if got := a.OK("list_pending", nil); strings.Contains(got, "msg_id") {
		t.Fatalf("a refused text was queued: %q", got)
	}
	res := a.OK("send_message", map[string]any{"to": "bob", "text": strings.Repeat("y", 1<<10)})
	a.WaitText("message_status", map[string]any{"msg_id": agenttest.MsgID(t, res)}, "[bus_accepted]")
}

// With a relay that takes less and one that takes more, a text between
// the two is sent through the larger, and the answer says which relay
// will refuse it.
func TestSendMessageNamesTheRelaysThatWillRefuse(t *testing.T) {
	small := bustest.Start(t, &bustest.Options{MaxValue: smallValue})
	large := bustest.Start(t, nil)
	alice, bob := agenttest.Pair(t)
	a := agenttest.Start(t, alice, "a1", []string{small, large}, nil)
	b := agenttest.Start(t, bob, "b1", []string{small, large}, nil)
	agenttest.OnRoster(t, large, bob.Key(), "b1")

	text := strings.Repeat("z", smallValue)
	res := a.OK("send_message", map[string]any{"to": "bob", "text": text})
	if !strings.Contains(res, "the message is too large for some relays, which will refuse it ("+small+" takes at most "+
		strconv.FormatInt(smallBody, 10)+" bytes); the others carry it") {
		t.Fatalf("send_message result: %q", res)
	}
	// Only the larger relay can have taken it.
	a.WaitText("message_status", map[string]any{"msg_id": agenttest.MsgID(t, res)}, "[bus_accepted]")
	b.WaitText("receive_messages", nil, text[:64])
}

// A relay whose limit the agent did not learn (it strips the header, as a
// relay of the original never sends it) refuses a larger message with
// 413; the message is then rejected for good, and message_status gives
// the relay's reason with its limit.
func TestRelayRefusalForSizeIsVisibleInMessageStatus(t *testing.T) {
	strip := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(headerless{w}, r)
		})
	}
	small := bustest.Start(t, &bustest.Options{MaxValue: smallValue, Wrap: strip})
	alice, bob := agenttest.Pair(t)
	a := agenttest.Start(t, alice, "a1", []string{small}, nil)
	agenttest.Start(t, bob, "b1", []string{small}, nil)
	agenttest.OnRoster(t, small, bob.Key(), "b1")

	res := a.OK("send_message", map[string]any{"to": "bob", "text": strings.Repeat("x", smallValue)})
	st := a.WaitText("message_status", map[string]any{"msg_id": agenttest.MsgID(t, res)}, "[rejected]")
	if !strings.Contains(st, "HTTP 413") || !strings.Contains(st, "more than "+strconv.FormatInt(smallBody, 10)+" bytes") {
		t.Errorf("message_status = %q, want the relay's 413 and its limit", st)
	}
}

// headerless is a response writer that drops the bus's limit header.
type headerless struct{ http.ResponseWriter }

func (h headerless) WriteHeader(code int) {
	h.Header().Del(wire.MaxBodyHeader)
	h.ResponseWriter.WriteHeader(code)
}

func (h headerless) Write(b []byte) (int, error) {
	h.Header().Del(wire.MaxBodyHeader)
	return h.ResponseWriter.Write(b)
}
