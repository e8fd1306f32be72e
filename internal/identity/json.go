package identity

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// ErrDecode reports a JSON payload that is not a well-formed message or
// announcement: not an object, a required field missing, a value of the wrong
// type, an unknown kind or status, or a timestamp that is not a non-negative
// integer. Receivers drop such payloads.
var ErrDecode = errors.New("identity: undecodable payload")

// fields is a decoded JSON object whose values are checked one by one, so
// that wrong types and nulls are errors rather than silent zero values.
// Unknown keys are ignored for forward compatibility. A repeated key keeps
// its last value; that cannot matter for messages, whose signature must
// still verify.
type fields map[string]json.RawMessage

func decodeObject(data []byte) (fields, error) {
	var f fields
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDecode, err)
	}
	if f == nil { // the literal null
		return nil, fmt.Errorf("%w: not an object", ErrDecode)
	}
	return f, nil
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(raw, []byte("null")) }

// str returns the string under key. A missing key or a null gives "" and
// false when optional, an error when required.
func (f fields) str(key string, required bool) (string, error) {
	raw, ok := f[key]
	if !ok || isNull(raw) {
		if required {
			return "", fmt.Errorf("%w: missing %s", ErrDecode, key)
		}
		return "", nil
	}
	if len(raw) == 0 || raw[0] != '"' {
		return "", fmt.Errorf("%w: %s is not a string", ErrDecode, key)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrDecode, key, err)
	}
	return s, nil
}

// u64 returns the unsigned integer under key. Strings, fractions, exponents,
// negative numbers and values past 2^64-1 are errors.
func (f fields) u64(key string, required bool) (uint64, bool, error) {
	raw, ok := f[key]
	if !ok || isNull(raw) {
		if required {
			return 0, false, fmt.Errorf("%w: missing %s", ErrDecode, key)
		}
		return 0, false, nil
	}
	n, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("%w: %s is not an unsigned integer", ErrDecode, key)
	}
	return n, true, nil
}

// Marshal encodes v as interlink writes JSON everywhere (messages,
// announcements, requests, state files): compact, without escaping <, > and
// &, and without a trailing newline, so text keeps its bytes as far as JSON
// allows.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// AppendString appends s to out as a JSON string, escaped as [Marshal]
// escapes it (encoding/json without HTML escaping): quotes, backslashes and control characters are
// escaped, invalid UTF-8 becomes U+FFFD, and U+2028 and U+2029 are escaped
// so the text is also valid JavaScript. It is for hot paths that write
// JSON by hand; the result decodes to s, or to s with invalid bytes
// replaced.
func AppendString(out []byte, s string) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			out = append(out, s[start:i]...)
			switch c {
			case '"', '\\':
				out = append(out, '\\', c)
			case '\n':
				out = append(out, '\\', 'n')
			case '\r':
				out = append(out, '\\', 'r')
			case '\t':
				out = append(out, '\\', 't')
			case '\b':
				out = append(out, '\\', 'b')
			case '\f':
				out = append(out, '\\', 'f')
			default:
				out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			out = append(out, s[start:i]...)
			out = append(out, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			out = append(out, s[start:i]...)
			out = append(out, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}

// wireMessage fixes the JSON key order and which keys are omitted when empty.
type wireMessage struct {
	From      string `json:"from"`
	To        string `json:"to"`
	Text      string `json:"text"`
	TS        uint64 `json:"ts"`
	MsgID     string `json:"msg_id"`
	Kind      Kind   `json:"kind"`
	TaskID    string `json:"task_id,omitempty"`
	Status    Status `json:"status,omitempty"`
	InReplyTo string `json:"in_reply_to,omitempty"`
	ReplyTo   string `json:"reply_to,omitempty"`
	Sig       string `json:"sig"`
}

// MarshalJSON writes m with kind always present and the empty optional
// fields left out.
func (m Message) MarshalJSON() ([]byte, error) {
	return Marshal(wireMessage{
		From: m.From, To: m.To, Text: m.Text, TS: m.TS, MsgID: m.MsgID,
		Kind: m.kind(), TaskID: m.TaskID, Status: m.Status,
		InReplyTo: m.InReplyTo, ReplyTo: m.ReplyTo, Sig: m.Sig,
	})
}

// UnmarshalJSON decodes a message strictly; every error wraps [ErrDecode].
// from, to, text, ts, msg_id and sig are required; an absent kind means
// message, a null kind is an error; the optional fields may be absent, null
// or empty, all meaning none.
func (m *Message) UnmarshalJSON(data []byte) error {
	f, err := decodeObject(data)
	if err != nil {
		return err
	}
	var out Message
	for _, s := range []struct {
		key string
		dst *string
		req bool
	}{
		{"from", &out.From, true}, {"to", &out.To, true}, {"text", &out.Text, true},
		{"msg_id", &out.MsgID, true}, {"sig", &out.Sig, true},
		{"task_id", &out.TaskID, false}, {"in_reply_to", &out.InReplyTo, false},
		{"reply_to", &out.ReplyTo, false},
	} {
		if *s.dst, err = f.str(s.key, s.req); err != nil {
			return err
		}
	}
	if out.TS, _, err = f.u64("ts", true); err != nil {
		return err
	}
	out.Kind = KindMessage
	if raw, ok := f["kind"]; ok {
		if isNull(raw) {
			return fmt.Errorf("%w: kind is null", ErrDecode)
		}
		k, err := f.str("kind", true)
		if err != nil {
			return err
		}
		out.Kind = Kind(k)
		if !out.Kind.Valid() {
			return fmt.Errorf("%w: %w %q", ErrDecode, ErrKind, k)
		}
	}
	st, err := f.str("status", false)
	if err != nil {
		return err
	}
	out.Status = Status(st)
	if !out.Status.Valid() {
		return fmt.Errorf("%w: %w %q", ErrDecode, ErrStatus, st)
	}
	*m = out
	return nil
}

// DecodeMessage decodes one message payload, as [Message.UnmarshalJSON].
func DecodeMessage(data []byte) (Message, error) {
	var m Message
	err := m.UnmarshalJSON(data)
	return m, err
}
