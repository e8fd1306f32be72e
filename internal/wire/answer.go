package wire

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/interlink-go/interlink/internal/identity"
)

// Fixed answers.
const (
	// TimeoutAnswer is the /recv answer when no message arrived in time.
	TimeoutAnswer = `{"status":"timeout"}`
	// HealthyAnswer is the /healthz answer of a bus that serves.
	HealthyAnswer = `{"status":"ok"}`
)

// EnvelopeOverhead is the most an envelope ([Envelope]) adds to the /send
// body it comes from: the envelope's keys and a timestamp of up to 20
// digits, against a body that has at least its own keys around the
// payload.
const EnvelopeOverhead = 64

// Envelope returns the stored form of a message, which /recv hands out
// as it is: the payload bytes as the sender wrote them and the bus's
// receipt time in Unix milliseconds, with keys in sorted order like the
// original's.
func Envelope(payload []byte, ms int64) []byte {
	b := make([]byte, 0, len(`{"payload":,"ts":}`)+len(payload)+20)
	b = append(b, `{"payload":`...)
	b = append(b, payload...)
	b = append(b, `,"ts":`...)
	b = strconv.AppendInt(b, ms, 10)
	return append(b, '}')
}

// RecvMessage returns the /recv answer that hands out envelope, a stored
// message, under its ack key.
func RecvMessage(key string, envelope []byte) ([]byte, error) {
	body := make([]byte, 0, len(`{"ack":"","envelope":,"status":"message"}`)+len(key)+len(`\u0000`)+len(envelope))
	body = append(body, `{"ack":`...)
	mark := len(body)
	body, ok := appendKeyJSON(body, key)
	if !ok {
		ack, err := identity.Marshal(key)
		if err != nil {
			return nil, err
		}
		body = append(body[:mark], ack...)
	}
	body = append(body, `,"envelope":`...)
	body = append(body, envelope...)
	return append(body, `,"status":"message"}`...), nil
}

// errorBody is the one JSON shape of every error answer.
type errorBody struct {
	Status string `json:"status,omitempty"`
	Error  string `json:"error"`
}

// ErrorAnswer returns the body of an error answer, {"error":msg}. With
// poll set it is that of a failed long-poll, {"status":"error","error":msg},
// which the original's clients look at. Unlike request bodies it escapes
// <, > and & as encoding/json does by default, as the bus always has.
func ErrorAnswer(msg string, poll bool) []byte {
	body := errorBody{Error: msg}
	if poll {
		body.Status = "error"
	}
	out, err := json.Marshal(body)
	if err != nil {
		panic("wire: encoding an error body: " + err.Error())
	}
	return out
}

// RecvAnswer is a /recv answer as a client reads it.
type RecvAnswer struct {
	// Status is "message" when the answer hands out a message, and
	// "timeout" (or anything a relay made up) otherwise.
	Status string
	// Ack is the message's ack key, to be sent back unchanged; it holds a
	// NUL. HasAck is false when the answer has none.
	Ack    string
	HasAck bool
	// Payload is the message as its sender posted it, unverified; nil
	// when the envelope has no payload or a null one.
	Payload json.RawMessage
}

// DecodeRecvAnswer reads a /recv answer as encoding/json reads it into
// the answer's shape (member names matched regardless of case, the last of
// a repeated member winning); only an answer that is not JSON of that
// shape is an error. The answer interlink-bus writes is read without
// reflection, which costs a load generator sharing the machine with a bus
// little of its CPU.
func DecodeRecvAnswer(body []byte) (RecvAnswer, error) {
	if Valid(body) {
		if a, ok := fastRecvAnswer(body); ok {
			return a, nil
		}
	}
	return decodeRecvAnswerSlow(body)
}

// decodeRecvAnswerSlow is the general decoder of DecodeRecvAnswer.
func decodeRecvAnswerSlow(body []byte) (RecvAnswer, error) {
	var reply struct {
		Status   string  `json:"status"`
		Ack      *string `json:"ack"`
		Envelope *struct {
			Payload json.RawMessage `json:"payload"`
		} `json:"envelope"`
	}
	if err := json.Unmarshal(body, &reply); err != nil {
		return RecvAnswer{}, err
	}
	a := RecvAnswer{Status: reply.Status}
	if reply.Ack != nil {
		a.Ack, a.HasAck = *reply.Ack, true
	}
	if reply.Envelope != nil && string(reply.Envelope.Payload) != "null" {
		a.Payload = reply.Envelope.Payload
	}
	return a, nil
}

// fastRecvAnswer reads an answer that passed [Valid] in the exact form
// interlink-bus writes,
//
//	{"ack":"KEY","envelope":{"payload":PAYLOAD,"ts":N},"status":"message"}
//
// or {"status":"timeout"}, where the key holds only printable ASCII and
// \u0000 escapes. It reports false for any other form, which the general
// decoder then reads.
func fastRecvAnswer(b []byte) (RecvAnswer, bool) {
	if string(b) == TimeoutAnswer {
		return RecvAnswer{Status: "timeout"}, true
	}
	const (
		head = `{"ack":"`
		mid  = `","envelope":{"payload":`
		tail = `,"status":"message"}`
	)
	if !bytes.HasPrefix(b, []byte(head)) || !bytes.HasSuffix(b, []byte(tail)) {
		return RecvAnswer{}, false
	}
	rest := b[len(head) : len(b)-len(tail)]
	end := bytes.Index(rest, []byte(mid))
	if end < 0 {
		return RecvAnswer{}, false
	}
	key := make([]byte, 0, end)
	for i := 0; i < end; i++ {
		switch c := rest[i]; {
		case c == '\\' && bytes.HasPrefix(rest[i:end], []byte(`\u0000`)):
			key = append(key, 0)
			i += len(`\u0000`) - 1
		case c == '\\' || c == '"' || c < 0x20 || c >= 0x80:
			return RecvAnswer{}, false
		default:
			key = append(key, c)
		}
	}
	env := rest[end+len(mid):] // PAYLOAD,"ts":N}
	ts := bytes.LastIndex(env, []byte(`,"ts":`))
	if ts <= 0 || env[len(env)-1] != '}' {
		return RecvAnswer{}, false
	}
	for _, c := range env[ts+len(`,"ts":`) : len(env)-1] {
		if c < '0' || c > '9' {
			return RecvAnswer{}, false
		}
	}
	// The envelope must hold one payload: a repeated member (valid JSON)
	// would make what precedes the last ts more than one value.
	if skipValue(env, 0) != ts {
		return RecvAnswer{}, false
	}
	a := RecvAnswer{Status: "message", Ack: string(key), HasAck: true}
	if string(env[:ts]) != "null" {
		a.Payload = env[:ts]
	}
	return a, true
}
