package wire

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// The fast reading of a /recv answer gives what the general decoder
// gives, on every input.
func FuzzRecvAnswerMatches(f *testing.F) {
	for _, s := range []string{
		TimeoutAnswer,
		`{"ack":"K#s\u000000000000000000000001","envelope":{"payload":{"text":"hi"},"ts":1700000000000},"status":"message"}`,
		`{"ack":"K\u0000","envelope":{"payload":null,"ts":1},"status":"message"}`,
		`{"ack":"K\u0000","envelope":{"payload":{"a":1},"ts":5,"payload":7,"ts":9},"status":"message"}`,
		`{"ack":"K\u0000","envelope":{"payload": 1 ,"ts":1},"status":"message"}`,
		`{"ack":"K\u0000","envelope":{"payload":1,"ts":-1},"status":"message"}`,
		`{"ACK":"K","Status":"message"}`,
		`{"status":"message"}`,
		`{"status":"error","error":"storage error"}`,
		`{"ack":"K\u0000","envelope":{"payload":"x\",\"ts\":1},\"status\":\"message\"}","ts":1},"status":"message"}`,
		`[]`, `null`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := DecodeRecvAnswer(body)
		want, werr := decodeRecvAnswerSlow(body)
		if a, b := outcome(got, err), outcome(want, werr); a != b {
			t.Fatalf("%q:\nfast    %s\ngeneral %s", body, a, b)
		}
	})
}

// A message the bus hands out is read back as it was handed out.
func FuzzRecvMessageDecodesBack(f *testing.F) {
	f.Add("K#s\x0000000000000000000001", []byte(`{"text":"hi"}`), int64(1700000000000))
	f.Add("<é>\x00\u2028\"\\", []byte(`null`), int64(0))
	f.Fuzz(func(t *testing.T, key string, payload []byte, ms int64) {
		if !Valid(payload) || ms < 0 || !utf8.ValidString(key) {
			return
		}
		body, err := RecvMessage(key, Envelope(payload, ms))
		if err != nil {
			t.Fatal(err)
		}
		if !Valid(body) {
			t.Fatalf("answer %q is not valid JSON", body)
		}
		a, err := DecodeRecvAnswer(body)
		if err != nil || a.Status != "message" || !a.HasAck {
			t.Fatalf("answer %q read as %+v, %v", body, a, err)
		}
		if a.Ack != key {
			t.Fatalf("key %q came back as %q", key, a.Ack)
		}
		if string(bytes.TrimSpace(payload)) == "null" {
			// A null payload, however spaced, reads as none.
			if a.Payload != nil {
				t.Fatalf("a null payload came back as %q", a.Payload)
			}
			return
		}
		if !jsonEqual(t, a.Payload, payload) {
			t.Fatalf("payload %q came back as %q", payload, a.Payload)
		}
	})
}

func TestErrorAnswer(t *testing.T) {
	for _, c := range []struct {
		msg  string
		poll bool
		want string
	}{
		{"not found", false, `{"error":"not found"}`},
		{"storage error", true, `{"status":"error","error":"storage error"}`},
		// Error bodies escape as encoding/json does by default.
		{`malformed JSON: invalid character '<' looking for "x" & y`, false,
			`{"error":"malformed JSON: invalid character '\u003c' looking for \"x\" \u0026 y"}`},
	} {
		if got := string(ErrorAnswer(c.msg, c.poll)); got != c.want {
			t.Errorf("ErrorAnswer(%q, %v) = %s, want %s", c.msg, c.poll, got, c.want)
		}
		var back struct{ Error string }
		if err := json.Unmarshal(ErrorAnswer(c.msg, c.poll), &back); err != nil || back.Error != c.msg {
			t.Errorf("%q does not decode back: %q, %v", c.msg, back.Error, err)
		}
	}
}

// The envelope keeps the payload's bytes as the sender wrote them.
func TestEnvelope(t *testing.T) {
	got := string(Envelope([]byte(`{"b":1, "a":[ 2 ]}`), 1700000000123))
	if want := `{"payload":{"b":1, "a":[ 2 ]},"ts":1700000000123}`; got != want {
		t.Errorf("Envelope = %s, want %s", got, want)
	}
}
