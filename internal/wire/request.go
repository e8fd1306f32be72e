package wire

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strconv"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
)

// The request bodies clients send. Each is what [identity.Marshal] makes
// of the request's fields in the order given: compact, with no HTML
// escaping.

// AppendSend appends the /send body that posts payload to the queue of
// route: {"to":ROUTE,"payload":PAYLOAD}. payload must be one JSON value
// written compactly, as every encoder here writes it; [SendBody] checks
// that.
func AppendSend(dst []byte, route string, payload []byte) []byte {
	dst = append(dst, `{"to":`...)
	dst = identity.AppendString(dst, route)
	dst = append(dst, `,"payload":`...)
	dst = append(dst, payload...)
	return append(dst, '}')
}

// SendBody returns the /send body that posts payload to route. payload
// must be JSON; like encoding/json with a [json.RawMessage], SendBody
// writes it compactly, and refuses it when it is not valid.
func SendBody(route string, payload []byte) ([]byte, error) {
	if payload == nil {
		payload = []byte("null") // as encoding/json writes a nil json.RawMessage
	}
	var compact bytes.Buffer
	compact.Grow(len(payload))
	if err := json.Compact(&compact, payload); err != nil {
		return nil, err
	}
	return AppendSend(make([]byte, 0, SendBodyLen(route, compact.Len())), route, compact.Bytes()), nil
}

// SendBodyLen returns the length of the /send body that posts a compact
// payload of payloadLen bytes to route, without building it.
func SendBodyLen(route string, payloadLen int) int {
	return len(`{"to":,"payload":}`) + stringLen(route) + payloadLen
}

// stringLen returns the length of s as [identity.AppendString] writes it.
func stringLen(s string) int {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 0x20 && c < 0x80 && c != '"' && c != '\\'
	}
	if plain {
		return len(s) + 2
	}
	return len(identity.AppendString(nil, s))
}

// AppendAck appends the /ack body that removes the message with ack key
// key from the queue of route: {"me":ROUTE,"ack":KEY}. JSON writes the
// key's NUL as \u0000, which the bus reads back as the same byte.
func AppendAck(dst []byte, route, key string) []byte {
	dst = append(dst, `{"me":`...)
	dst = identity.AppendString(dst, route)
	dst = append(dst, `,"ack":`...)
	dst = identity.AppendString(dst, key)
	return append(dst, '}')
}

// RecvTarget returns the path and query of the /recv request that
// long-polls route for up to wait, in whole milliseconds:
// /recv?me=ROUTE&timeout_ms=N.
func RecvTarget(route string, wait time.Duration) string {
	return "/recv?me=" + url.QueryEscape(route) + "&timeout_ms=" + strconv.FormatInt(wait.Milliseconds(), 10)
}

// AnnounceBody returns the /announce body of a, a signed announcement,
// without its age: the relay stamps its own.
func AnnounceBody(a identity.Announcement) ([]byte, error) {
	a.AgeMS = nil
	return identity.Marshal(a)
}

// UnregisterBody returns the /unregister body that removes the roster entry
// of pubkey's session s. It is unsigned: the bus checks no signature.
func UnregisterBody(pubkey string, s identity.SessionInfo) ([]byte, error) {
	return identity.Marshal(struct {
		PubKey  string               `json:"pubkey"`
		Session identity.SessionInfo `json:"session"`
	}{pubkey, s})
}
