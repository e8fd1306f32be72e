package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/bus/bustest"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/seal"
)

// opener returns what opens messages sealed to id.
func opener(tb testing.TB, id *agenttest.Ident) *seal.Recipient {
	tb.Helper()
	r, err := seal.NewRecipient(id.Signer.Seed())
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// tap records every byte a relay reads and writes over plain HTTP: request
// bodies and answers, of every endpoint. With strip set, it removes the
// capabilities extension from the roster it serves, as a hostile relay
// could.
type tap struct {
	strip atomic.Bool
	mu    sync.Mutex
	seen  bytes.Buffer
	sends [][]byte // accepted /send bodies
}

func (tp *tap) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := &captured{header: http.Header{}, code: http.StatusOK}
		h.ServeHTTP(rec, r)
		out := rec.body.Bytes()
		if r.URL.Path == "/roster" && tp.strip.Load() {
			out = stripCaps(out)
			rec.header.Del("Content-Length")
			rec.header.Del("Etag")
		}
		tp.mu.Lock()
		tp.seen.WriteString(r.URL.String())
		tp.seen.Write(body)
		tp.seen.Write(out)
		if r.URL.Path == "/send" && rec.code < 300 {
			tp.sends = append(tp.sends, body)
		}
		tp.mu.Unlock()
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.code)
		_, _ = w.Write(out)
	})
}

// captured is a ResponseWriter that keeps the answer.
type captured struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (c *captured) Header() http.Header         { return c.header }
func (c *captured) Write(b []byte) (int, error) { return c.body.Write(b) }
func (c *captured) WriteHeader(code int)        { c.code = code }
func (c *captured) Flush()                      {}

// stripCaps removes caps and caps_sig from every roster element.
func stripCaps(b []byte) []byte {
	var doc struct {
		Roster []map[string]json.RawMessage `json:"roster"`
	}
	if json.Unmarshal(b, &doc) != nil {
		return b
	}
	for _, e := range doc.Roster {
		delete(e, "caps")
		delete(e, "caps_sig")
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return b
	}
	return out
}

// contains reports whether the relay saw s anywhere.
func (tp *tap) contains(s string) bool {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return bytes.Contains(tp.seen.Bytes(), []byte(s))
}

// payloads returns the payloads of the accepted /send requests to routes
// of key.
func (tp *tap) payloads(tb testing.TB, key string) []json.RawMessage {
	tb.Helper()
	tp.mu.Lock()
	defer tp.mu.Unlock()
	var out []json.RawMessage
	for _, b := range tp.sends {
		var req struct {
			To      string          `json:"to"`
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal(b, &req); err != nil {
			tb.Fatal(err)
		}
		if strings.HasPrefix(req.To, key) {
			out = append(out, req.Payload)
		}
	}
	return out
}

func startTapped(tb testing.TB) (string, *tap) {
	tp := &tap{}
	return bustest.Start(tb, &bustest.Options{Wrap: tp.wrap}), tp
}

// Two agents that both announce sealing exchange messages that the relay
// sees only as envelopes: no text, msg_id, task field or reply route in
// any byte it reads or writes, while the messages arrive, are
// acknowledged and keep their status as before.
func TestMessagesBetweenSealingAgentsCrossAPlainHTTPRelaySealed(t *testing.T) {
	url, tp := startTapped(t)
	alice, bob := agenttest.Pair(t)
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)
	b := agenttest.Start(t, bob, "b1", []string{url}, nil)
	agenttest.OnRoster(t, url, bob.Key(), "b1")
	agenttest.OnRoster(t, url, alice.Key(), "a1")

	res := a.OK("send_message", map[string]any{"to": "bob", "text": "the launch code is swordfish",
		"task_id": "task-orchid", "status": "update"})
	id := agenttest.MsgID(t, res)
	b.WaitText("receive_messages", nil, "the launch code is swordfish")
	agenttest.Eventually(t, "alice's message accepted", func() bool {
		return strings.Contains(a.OK("message_status", map[string]any{"msg_id": id}), "[bus_accepted]")
	})
	reply := agenttest.MsgID(t, b.OK("send_message", map[string]any{"to": "alice", "text": "acknowledged, orchid",
		"in_reply_to": id, "task_id": "task-orchid", "status": "result"}))
	a.WaitText("receive_messages", nil, "acknowledged, orchid")
	b.OK("acknowledge_messages", map[string]any{"messages": []map[string]any{{"sender": alice.Key(), "msg_id": id}}})
	if got := b.OK("message_status", map[string]any{"msg_id": id}); !strings.Contains(got, "receiver_acknowledged") {
		t.Errorf("bob's status of the sealed message = %q, want it acknowledged", got)
	}

	// Routes are what a relay must see (the /send "to", the /recv query);
	// everything inside the messages must not be.
	for _, secret := range []string{"swordfish", "launch code", "orchid", id, reply, "task_id", "in_reply_to",
		"reply_to", "\"text\"", "\"kind\""} {
		if tp.contains(secret) {
			t.Errorf("the relay saw %q", secret)
		}
	}
	for who, key := range map[string]string{"bob": bob.Key(), "alice": alice.Key()} {
		ps := tp.payloads(t, key)
		if len(ps) == 0 {
			t.Fatalf("no message to %s crossed the relay", who)
		}
		for _, p := range ps {
			if _, err := seal.ParseEnvelope(p); err != nil {
				t.Errorf("a payload to %s is not a sealed envelope (%v): %.80s", who, err, p)
			}
		}
	}
}

// A peer that does not announce sealing (a client of the original format)
// gets plaintext, byte for byte the payload a plain message is.
func TestAPeerWithoutSealingGetsPlaintextByteForByte(t *testing.T) {
	url, tp := startTapped(t)
	alice, bob := agenttest.Pair(t)
	a := agenttest.Start(t, alice, "a1", []string{url}, nil)
	agenttest.Announce(t, url, bob, "b1") // the original's announcement: no caps
	id := agenttest.MsgID(t, a.OK("send_message", map[string]any{"to": "bob", "text": "plain <&> text", "task_id": "t1"}))
	agenttest.Eventually(t, "the message accepted", func() bool {
		return strings.Contains(a.OK("message_status", map[string]any{"msg_id": id}), "[bus_accepted]")
	})
	ps := tp.payloads(t, bob.Key())
	if len(ps) != 1 {
		t.Fatalf("%d payloads to bob, want 1", len(ps))
	}
	m, err := identity.DecodeMessage(ps[0])
	if err != nil {
		t.Fatalf("the payload is not a plain message: %v", err)
	}
	if _, err := m.Verify(); err != nil || m.MsgID != id || m.Text != "plain <&> text" {
		t.Fatalf("payload = %+v (verify: %v)", m, err)
	}
	want, err := m.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ps[0], want) {
		t.Errorf("payload bytes\n%s\nwant the plain encoding\n%s", ps[0], want)
	}
}

// Once alice learned that bob seals, she keeps sealing to him: after her
// own restart, with bob away, and on a relay that strips the capabilities
// from the roster. A peer never seen announcing sealing is not sealed to
// by a relay adding anything (the list is signed).
func TestTheSealingCapabilitySurvivesARestartAnAbsenceAndAStrippingRelay(t *testing.T) {
	url, tp := startTapped(t)
	alice, bob := agenttest.Pair(t)
	root := t.TempDir()
	a := agenttest.Start(t, alice, "a1", []string{url}, &agenttest.Options{Root: root})
	b := agenttest.Start(t, bob, "b1", []string{url}, nil)
	agenttest.OnRoster(t, url, bob.Key(), "b1")
	a.OK("send_message", map[string]any{"to": "bob", "text": "first, learned from the roster"})
	b.WaitText("receive_messages", nil, "first, learned from the roster")

	a.Stop()
	tp.strip.Store(true)
	a2 := agenttest.Start(t, alice, "a1", []string{url}, &agenttest.Options{Root: root})
	a2.OK("send_message", map[string]any{"to": "bob", "session": "b1", "text": "second, through a stripping relay"})
	b.WaitText("receive_messages", nil, "second, through a stripping relay")
	b.Stop() // away now; its roster entry stays
	id := agenttest.MsgID(t, a2.OK("send_message", map[string]any{"to": "bob", "session": "b1", "text": "third, while bob is away"}))
	agenttest.Eventually(t, "the third message accepted", func() bool {
		return strings.Contains(a2.OK("message_status", map[string]any{"msg_id": id}), "[bus_accepted]")
	})
	for _, s := range []string{"learned from the roster", "stripping relay", "while bob is away", id} {
		if tp.contains(s) {
			t.Errorf("the relay saw %q", s)
		}
	}
	ps := tp.payloads(t, bob.Key())
	if len(ps) != 3 {
		t.Fatalf("%d payloads to bob, want 3", len(ps))
	}
	r := opener(t, bob)
	for i, p := range ps {
		if _, err := seal.OpenMessage(r, p); err != nil {
			t.Errorf("payload %d to bob does not open: %v", i+1, err)
		}
	}
}

// sealedTo seals m, signed by from, as an envelope JSON.
func sealedTo(tb testing.TB, from *agenttest.Ident, m *identity.Message) []byte {
	tb.Helper()
	e, err := seal.SealMessage(from.Signer, m, nil)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := e.MarshalJSON()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// signedMsg returns a message from -> to, signed now.
func signedMsg(tb testing.TB, from, to *agenttest.Ident, text string) identity.Message {
	tb.Helper()
	id, err := identity.NewMsgID(nil)
	if err != nil {
		tb.Fatal(err)
	}
	m := identity.Message{From: from.Key(), To: to.Key(), Text: text, TS: identity.Millis(time.Now()),
		MsgID: id, Kind: identity.KindMessage}
	if err := from.Signer.SignMessage(&m); err != nil {
		tb.Fatal(err)
	}
	return m
}

// A sealed message that was tampered with, sealed to another key, signed
// by someone else or whose inner message does not match its envelope is
// dropped with the reason of the check it failed, and acknowledged; a
// genuine one is delivered, and the same inner message in a second
// envelope is a replay, judged by the inner sender and msg_id.
func TestTamperedAndUndecryptableSealedMessagesAreDroppedWithTheirReason(t *testing.T) {
	url := agenttest.StartBus(t)
	alice, bob := agenttest.Pair(t)
	carol := agenttest.NewIdent(t)
	b := agenttest.Start(t, bob, "b1", []string{url}, nil)
	rt := b.A.Route().String()
	post := func(payload []byte) {
		t.Helper()
		c := relay.New(url, nil)
		if err := c.Send(context.Background(), rt, payload); err != nil {
			t.Fatal(err)
		}
	}

	// A byte of the box flipped: the envelope signature fails first.
	m := signedMsg(t, alice, bob, "tampered")
	env, err := seal.SealMessage(alice.Signer, &m, nil)
	if err != nil {
		t.Fatal(err)
	}
	env.Sealed[40] ^= 1
	tampered, _ := env.MarshalJSON()
	post(tampered)
	b.WaitDropped("sealed_bad_outer_signature", "")

	// Sealed to carol, in an envelope alice signed for bob.
	m = signedMsg(t, alice, bob, "for carol's eyes")
	toCarol, err := seal.Seal(carol.Signer.Public(), mustJSON(t, m), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := seal.Envelope{From: alice.Signer.Public(), To: bob.Signer.Public(), TS: m.TS, Sealed: toCarol}
	copy(e.Sig[:], alice.Signer.Sign(e.SignedBytes()))
	post(mustJSON(t, e))
	b.WaitDropped("sealed_undecryptable", "")

	// Addressed to carol altogether.
	m = signedMsg(t, alice, carol, "wrong door")
	post(sealedTo(t, alice, &m))
	b.WaitDropped("sealed_not_for_me", "")

	// Garbage with a "sealed" member.
	post([]byte(`{"from":"x","sealed":"!!"}`))
	b.WaitDropped("sealed_malformed", "")

	// A genuine one arrives; the same inner message sealed again is a
	// replay.
	m = signedMsg(t, alice, bob, "genuine and sealed")
	post(sealedTo(t, alice, &m))
	b.WaitText("receive_messages", nil, "genuine and sealed")
	post(sealedTo(t, alice, &m))
	b.WaitDropped("replay", m.MsgID)
	if n := strings.Count(b.OK("receive_messages", nil), "genuine and sealed"); n != 1 {
		t.Errorf("the sealed message is in the mailbox %d times, want once", n)
	}
}

func mustJSON(tb testing.TB, v json.Marshaler) []byte {
	tb.Helper()
	b, err := v.MarshalJSON()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
