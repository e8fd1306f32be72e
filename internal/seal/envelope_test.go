package seal

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/interlink-go/interlink/internal/identity"
)

// TestSealMessageRoundTrip: every kind of message, with task fields and
// the reply_to hint, comes out of the envelope exactly as it went in.
func TestSealMessageRoundTrip(t *testing.T) {
	a, b := alice(t), bob(t)
	for name, edit := range map[string]func(*identity.Message){
		"plain":        nil,
		"task":         func(m *identity.Message) { m.TaskID, m.Status, m.InReplyTo = "t1", identity.StatusUpdate, "q1" },
		"pair_request": func(m *identity.Message) { m.Kind, m.Text = identity.KindPairRequest, "alice" },
		"pair_accept":  func(m *identity.Message) { m.Kind, m.Text, m.InReplyTo = identity.KindPairAccept, "alice", "k1" },
		"unicode":      func(m *identity.Message) { m.Text = "<b>é\u2028\x00\"</b>" },
	} {
		t.Run(name, func(t *testing.T) {
			m := signed(t, a, b.pub(), edit)
			payload := mustJSON(t, sealed(t, a, m))
			got, err := OpenMessage(b.rcpt, payload)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(m, got); diff != "" {
				t.Fatalf("opened message (-sent +got):\n%s", diff)
			}
		})
	}
}

// TestSealMessageToSelf: a message to the own key (a sibling session)
// seals and opens like any other.
func TestSealMessageToSelf(t *testing.T) {
	a := alice(t)
	m := signed(t, a, a.pub(), nil)
	if _, err := OpenMessage(a.rcpt, mustJSON(t, sealed(t, a, m))); err != nil {
		t.Fatal(err)
	}
}

// TestSealMessageRefusesForeignOrBrokenSignature: the sealing key must be
// the key that signed the message, and the signature must verify.
func TestSealMessageRefusesForeignOrBrokenSignature(t *testing.T) {
	a, b, m := alice(t), bob(t), mallory(t)
	msg := signed(t, a, b.pub(), nil)
	if _, err := SealMessage(m.signer, &msg, nil); !errors.Is(err, ErrInnerSignature) {
		t.Errorf("sealed alice's message with mallory's key: err = %v", err)
	}
	msg.Text = "changed"
	if _, err := SealMessage(a.signer, &msg, nil); !errors.Is(err, ErrInnerSignature) {
		t.Errorf("sealed a message whose text changed after signing: err = %v", err)
	}
}

// TestSealMessageRefusesOversized: a message whose JSON exceeds
// MaxPlaintext is refused.
func TestSealMessageRefusesOversized(t *testing.T) {
	a, b := alice(t), bob(t)
	m := signed(t, a, b.pub(), func(m *identity.Message) { m.Text = strings.Repeat("x", MaxPlaintext) })
	if _, err := SealMessage(a.signer, &m, nil); !errors.Is(err, ErrOversized) {
		t.Fatalf("err = %v, want ErrOversized", err)
	}
}

// mutate decodes payload as a JSON object, lets edit change it and
// encodes it again.
func mutate(t *testing.T, payload []byte, edit func(map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	return mustJSON(t, m)
}

// TestOpenMessageRefusals: each way a sealed message can be forged,
// altered, misdirected or malformed is refused with its own reason, and
// the reasons come in the documented order (an envelope that fails two
// checks reports the earlier one).
func TestOpenMessageRefusals(t *testing.T) {
	a, b, c, m := alice(t), bob(t), carol(t), mallory(t)
	msg := signed(t, a, b.pub(), nil)
	env := sealed(t, a, msg)
	good := mustJSON(t, env)
	if _, err := OpenMessage(b.rcpt, good); err != nil {
		t.Fatalf("control: %v", err)
	}
	innerJSON := mustJSON(t, msg)

	alter := func(edit func(*Envelope)) []byte {
		e := env
		e.Sealed = bytes.Clone(env.Sealed)
		edit(&e)
		return mustJSON(t, e)
	}
	// resigned returns an envelope changed by edit and signed again by p:
	// what a sender can make, as opposed to a relay.
	resigned := func(p party, edit func(*Envelope)) []byte {
		e := env
		e.Sealed = bytes.Clone(env.Sealed)
		edit(&e)
		resign(p, &e)
		return mustJSON(t, e)
	}
	smallOrderID := key(t, smallOrder[0])

	cases := []struct {
		name    string
		payload []byte
		want    error
	}{
		// A relay or anyone on the path changes the envelope.
		{"flipped sealed byte", alter(func(e *Envelope) { e.Sealed[100] ^= 1 }), ErrBadOuterSignature},
		{"flipped last sealed byte", alter(func(e *Envelope) { e.Sealed[len(e.Sealed)-1] ^= 0x80 }), ErrBadOuterSignature},
		{"flipped sig byte", alter(func(e *Envelope) { e.Sig[10] ^= 1 }), ErrBadOuterSignature},
		{"changed ts", alter(func(e *Envelope) { e.TS++ }), ErrBadOuterSignature},
		{"swapped outer from", alter(func(e *Envelope) { e.From = m.pub() }), ErrBadOuterSignature},
		{"redirected to", alter(func(e *Envelope) { e.To = c.pub() }), ErrBadOuterSignature},
		{"truncated sealed", alter(func(e *Envelope) { e.Sealed = e.Sealed[:len(e.Sealed)-1] }), ErrBadOuterSignature},
		{"small-order from, trivial sig", alter(func(e *Envelope) {
			e.From = smallOrderID
			e.Sig = [64]byte{0: 1}
		}), ErrBadOuterSignature},
		{"from not a key", mutate(t, good, func(o map[string]any) { o["from"] = "AAAA" }), ErrBadOuterSignature},
		{"to not a key", mutate(t, good, func(o map[string]any) { o["to"] = strings.Repeat("_", 43) }), ErrBadOuterSignature},
		{"sig of 63 bytes", mutate(t, good, func(o map[string]any) { o["sig"] = identity.EncodeBase64(env.Sig[:63]) }), ErrBadOuterSignature},
		{"tampered and for another", resigned(a, func(e *Envelope) { e.To = c.pub(); e.Sealed[0] ^= 1 }), ErrNotForMe},

		// Senders that sign what they send, and still are refused.
		{"for someone else", mustJSON(t, sealed(t, a, signed(t, a, c.pub(), nil))), ErrNotForMe},
		{"box lifted into mallory's envelope", resigned(m, func(e *Envelope) { e.From = m.pub() }), ErrUndecryptable},
		{"box restamped by its sender", resigned(a, func(e *Envelope) { e.TS++ }), ErrUndecryptable},
		{"box sealed to carol, envelope to bob", mustJSON(t, rawEnvelope(t, a, b.pub(), c.pub(), testTS, innerJSON)), ErrUndecryptable},
		{"truncated box, signed", resigned(a, func(e *Envelope) { e.Sealed = e.Sealed[:len(e.Sealed)-1] }), ErrUndecryptable},
		{"short box, signed", resigned(a, func(e *Envelope) { e.Sealed = e.Sealed[:MinSealed-1] }), ErrUndecryptable},
		{"flipped byte, signed", resigned(a, func(e *Envelope) { e.Sealed[200] ^= 4 }), ErrUndecryptable},
		{"not a message inside", mustJSON(t, rawEnvelope(t, a, b.pub(), b.pub(), testTS, []byte(`{"hello":1}`))), ErrInnerMalformed},
		{"not JSON inside", mustJSON(t, rawEnvelope(t, a, b.pub(), b.pub(), testTS, []byte("hi"))), ErrInnerMalformed},
		{"inner text changed", mustJSON(t, rawEnvelope(t, a, b.pub(), b.pub(), testTS,
			bytes.Replace(innerJSON, []byte(`"hi"`), []byte(`"ho"`), 1))), ErrInnerSignature},
		{"inner from is not the sender", mustJSON(t, rawEnvelope(t, m, b.pub(), b.pub(), testTS, innerJSON)), ErrMismatch},
		{"inner to is another", mustJSON(t, rawEnvelope(t, a, b.pub(), b.pub(), testTS,
			mustJSON(t, signed(t, a, c.pub(), nil)))), ErrMismatch},
		{"inner ts differs", mustJSON(t, rawEnvelope(t, a, b.pub(), b.pub(), testTS+1, innerJSON)), ErrMismatch},

		// Payloads that are not envelopes.
		{"truncated JSON", good[:len(good)/2], ErrMalformed},
		{"null", []byte("null"), ErrMalformed},
		{"array", []byte("[]"), ErrMalformed},
		{"plaintext message", innerJSON, ErrMalformed},
		{"ts missing", mutate(t, good, func(o map[string]any) { delete(o, "ts") }), ErrMalformed},
		{"ts negative", mutate(t, good, func(o map[string]any) { o["ts"] = json.Number("-1") }), ErrMalformed},
		{"ts fraction", mutate(t, good, func(o map[string]any) { o["ts"] = json.Number("1.5") }), ErrMalformed},
		{"ts string", mutate(t, good, func(o map[string]any) { o["ts"] = "1700000000000" }), ErrMalformed},
		{"sealed null", mutate(t, good, func(o map[string]any) { o["sealed"] = nil }), ErrMalformed},
		{"sealed padded base64", mutate(t, good, func(o map[string]any) { o["sealed"] = o["sealed"].(string) + "==" }), ErrMalformed},
		{"sealed with a newline", mutate(t, good, func(o map[string]any) {
			s := o["sealed"].(string)
			o["sealed"] = s[:40] + "\n" + s[40:]
		}), ErrMalformed},
		{"sig a number", mutate(t, good, func(o map[string]any) { o["sig"] = 1 }), ErrMalformed},

		// Size.
		{"sealed over MaxSealed", mutate(t, good, func(o map[string]any) {
			o["sealed"] = strings.Repeat("A", (MaxSealed+1)*4/3+1)
		}), ErrOversized},
		{"envelope over MaxEnvelope", append(bytes.Clone(good), bytes.Repeat([]byte(" "), MaxEnvelope)...), ErrOversized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := OpenMessage(b.rcpt, tc.payload)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if got != (identity.Message{}) {
				t.Fatalf("a refused envelope returned a message: %+v", got)
			}
			if r := Reason(err); r == "error" {
				t.Fatalf("no stable reason for %v", err)
			}
		})
	}
}

// TestEnvelopeHidesContent: the envelope carries none of the inner
// message's text, kind, ids, task fields or reply route, and messages of
// different kinds and short texts are the same size.
func TestEnvelopeHidesContent(t *testing.T) {
	a, b := alice(t), bob(t)
	secret := "the launch code is 0000"
	m := signed(t, a, b.pub(), func(m *identity.Message) {
		m.Text, m.MsgID, m.TaskID, m.Status, m.InReplyTo = secret, "msgid-visible?", "task-visible?", identity.StatusNeedsInput, "reply-visible?"
		m.ReplyTo = a.pub().String() + "#session-visible?"
	})
	payload := mustJSON(t, sealed(t, a, m))
	for _, s := range []string{secret, "msgid-visible?", "task-visible?", "needs_input", "reply-visible?", "session-visible?", "message", "kind"} {
		if bytes.Contains(payload, []byte(s)) {
			t.Errorf("envelope shows %q: %s", s, payload)
		}
	}
	short := mustJSON(t, sealed(t, a, signed(t, a, b.pub(), func(m *identity.Message) { m.Text = "" })))
	knock := mustJSON(t, sealed(t, a, signed(t, a, b.pub(), func(m *identity.Message) { m.Kind, m.Text = identity.KindPairRequest, "alice" })))
	longer := mustJSON(t, sealed(t, a, signed(t, a, b.pub(), func(m *identity.Message) { m.Text = strings.Repeat("y", 500) })))
	// The package doc states this size for every message whose JSON fits
	// in MinPadded-4 bytes.
	if len(payload) != 1661 {
		t.Errorf("a short message travels as %d bytes, the doc says 1661", len(payload))
	}
	if len(short) != len(payload) || len(knock) != len(payload) || len(longer) != len(payload) {
		t.Errorf("sizes differ: empty %d, knock %d, 500 bytes %d, task %d", len(short), len(knock), len(longer), len(payload))
	}
}

// TestLargestMessageFitsBusBody: the envelope of the largest plaintext,
// inside a /send body with a long route, stays under the 2 MiB bound of a
// bus body (bus.MaxBodyBytes) and under MaxEnvelope.
func TestLargestMessageFitsBusBody(t *testing.T) {
	const busMaxBody = 2 << 20
	a, b := alice(t), bob(t)
	e := rawEnvelope(t, a, b.pub(), b.pub(), testTS, make([]byte, MaxPlaintext))
	env := mustJSON(t, e)
	body := mustJSON(t, map[string]any{
		"to":      b.pub().String() + "#" + strings.Repeat("s", 256),
		"payload": json.RawMessage(env),
	})
	if len(env) > MaxEnvelope {
		t.Errorf("envelope of %d bytes, MaxEnvelope %d", len(env), MaxEnvelope)
	}
	if len(body) > busMaxBody {
		t.Errorf("/send body of %d bytes, over %d", len(body), busMaxBody)
	}
	if _, err := ParseEnvelope(env); err != nil {
		t.Errorf("the largest envelope does not parse: %v", err)
	}
	t.Logf("plaintext %d -> box %d -> envelope %d -> /send body %d (bound %d)",
		MaxPlaintext, len(e.Sealed), len(env), len(body), busMaxBody)
}

// TestEnvelopeJSONRoundTrip: an envelope encodes with the documented keys
// and decodes to an equal value; unknown keys are ignored.
func TestEnvelopeJSONRoundTrip(t *testing.T) {
	a, b := alice(t), bob(t)
	e := sealed(t, a, signed(t, a, b.pub(), nil))
	data := mustJSON(t, e)
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		t.Fatal(err)
	}
	var names []string
	for k := range keys {
		names = append(names, k)
	}
	if len(names) != 5 || keys["from"] == nil || keys["to"] == nil || keys["ts"] == nil || keys["sealed"] == nil || keys["sig"] == nil {
		t.Fatalf("keys %v, want from, to, ts, sealed, sig", names)
	}
	var back Envelope
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(e, back); diff != "" {
		t.Fatalf("round trip (-sent +got):\n%s", diff)
	}
	extra := mutate(t, data, func(o map[string]any) { o["future"] = []int{1} })
	if _, err := OpenMessage(b.rcpt, extra); err != nil {
		t.Fatalf("an unknown key broke the envelope: %v", err)
	}
}

// TestReasonNamesEverySentinel: each sentinel has its own reason.
func TestReasonNamesEverySentinel(t *testing.T) {
	seen := map[string]bool{}
	for _, err := range []error{ErrRecipientKey, ErrOversized, ErrMalformed, ErrBadOuterSignature,
		ErrNotForMe, ErrUndecryptable, ErrInnerMalformed, ErrInnerSignature, ErrMismatch} {
		r := Reason(err)
		if r == "error" || seen[r] {
			t.Errorf("%v: reason %q", err, r)
		}
		seen[r] = true
	}
	if Reason(errors.New("other")) != "error" {
		t.Error("a foreign error has a reason")
	}
}

func TestEnvelopeLenIsTheLengthOfTheEnvelopeSealMessageMakes(t *testing.T) {
	a, b := alice(t), bob(t)
	for _, n := range []int{0, 1, 900, 1020, 1021, 5000, 70000, 300000} {
		for _, ts := range []uint64{0, 7, testTS} {
			m := signed(t, a, b.pub(), func(m *identity.Message) { m.Text = strings.Repeat("y", n); m.TS = ts })
			if err := a.signer.SignMessage(&m); err != nil {
				t.Fatal(err)
			}
			inner, err := identity.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			e, err := SealMessage(a.signer, &m, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := len(mustJSON(t, e))
			if want := EnvelopeLen(len(inner), ts); got != want {
				t.Errorf("text %d bytes, ts %d: envelope of %d bytes, EnvelopeLen says %d", n, ts, got, want)
			}
		}
	}
}
