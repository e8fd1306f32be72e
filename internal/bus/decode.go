package bus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxDepth is how deeply arrays and objects may nest in a request body. The
// original's parser stops at 128 levels and clients parse replies that wrap
// a payload in two more, so a deeper payload could be stored but never read.
const maxDepth = 100

// readBody checks that r carries JSON and reads at most limit bytes of it.
//
// The buffer grows with what arrives and is never sized from the declared
// Content-Length: a client could declare 2 MiB and send nothing, and
// thousands of such clients would otherwise pin a large buffer each. What
// finally cuts off a client that sends slowly or not at all is the
// request's deadline, which the HTTP server sets for every request
// ([NewHTTPServer]); on timeout the connection is closed after the answer,
// since the rest of the body will never be read.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if !isJSONType(r.Header.Get("Content-Type")) {
		return nil, errMediaType
	}
	if r.ContentLength > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", errTooLarge, limit)
	}
	body, err := readGrowing(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, fmt.Errorf("%w: more than %d bytes", errTooLarge, limit)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			w.Header().Set("Connection", "close")
			return nil, fmt.Errorf("%w: not complete within %v", errBodyTimeout, s.requestTimeout)
		}
		return nil, fmt.Errorf("%w: %v", errRead, err)
	}
	return body, nil
}

// firstRead is the size of the buffer a body is first read into. It is
// small because a stalled client holds it for as long as the deadline
// allows; the buffer doubles whenever what arrived fills it.
const firstRead = 64

// readGrowing reads r to the end into a buffer that starts at firstRead
// bytes and doubles as it fills, so its size follows what has arrived.
func readGrowing(r io.Reader) ([]byte, error) {
	buf := make([]byte, 0, firstRead)
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, cap(buf))
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// isJSONType reports whether a Content-Type header names JSON:
// application/json or application/<anything>+json, with any parameters.
func isJSONType(header string) bool {
	if header == "application/json" {
		return true
	}
	mt, _, err := mime.ParseMediaType(header)
	if err != nil {
		return false
	}
	typ, sub, _ := strings.Cut(mt, "/")
	if typ != "application" {
		return false
	}
	return sub == "json" || (strings.HasSuffix(sub, "+json") && len(sub) > len("+json"))
}

// checkJSON returns an error wrapping errSyntax unless body is exactly one
// JSON value, with optional surrounding whitespace, in valid UTF-8, without
// unpaired surrogate escapes or numbers beyond float64, and nested at most
// maxDepth deep.
func checkJSON(body []byte) error {
	if validStrict(body) {
		return nil
	}
	return checkJSONSlow(body)
}

// checkJSONSlow is checkJSON in three passes, the first encoding/json's:
// it finds the error for a body validStrict refuses.
func checkJSONSlow(body []byte) error {
	if !json.Valid(body) {
		// Decode only to get an error that says what is wrong.
		var v json.RawMessage
		err := json.Unmarshal(body, &v)
		return fmt.Errorf("%w: %v", errSyntax, err)
	}
	if !utf8.Valid(body) {
		return fmt.Errorf("%w: not valid UTF-8", errSyntax)
	}
	return checkStrict(body)
}

// checkStrict does the checks encoding/json leaves out, on a body that is
// already known to be valid JSON.
func checkStrict(b []byte) error {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			depth++
			if depth > maxDepth {
				return fmt.Errorf("%w: nested more than %d deep", errSyntax, maxDepth)
			}
		case '}', ']':
			depth--
		case '"':
			end, err := checkString(b, i+1)
			if err != nil {
				return err
			}
			i = end
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			end := i + 1
			for end < len(b) && strings.IndexByte("0123456789+-.eE", b[end]) >= 0 {
				end++
			}
			if err := checkNumber(b[i:end]); err != nil {
				return err
			}
			i = end - 1
		}
	}
	return nil
}

// checkNumber refuses numbers too large for a float64, which clients'
// parsers reject: a message holding one could never be read.
func checkNumber(num []byte) error {
	if len(num) < 16 && !bytes.ContainsAny(num, "eE") {
		return nil // fits easily
	}
	if _, err := strconv.ParseFloat(string(num), 64); err != nil {
		return fmt.Errorf("%w: number out of range", errSyntax)
	}
	return nil
}

// checkString scans the string whose contents start at b[i] and returns the
// index of its closing quote. It refuses \u escapes of unpaired surrogates,
// which decode to nothing a UTF-8 string can hold.
func checkString(b []byte, i int) (int, error) {
	for ; b[i] != '"'; i++ {
		if b[i] != '\\' {
			continue
		}
		i++
		if b[i] != 'u' {
			continue
		}
		r := hex4(b[i+1:])
		i += 4
		switch {
		case r < 0xd800 || r >= 0xe000:
		case r < 0xdc00 && i+6 < len(b) && b[i+1] == '\\' && b[i+2] == 'u' &&
			hex4(b[i+3:]) >= 0xdc00 && hex4(b[i+3:]) < 0xe000:
			i += 6 // a high surrogate followed by a low one
		default:
			return 0, fmt.Errorf("%w: unpaired surrogate escape", errSyntax)
		}
	}
	return i, nil
}

// hex4 decodes the four hex digits at the start of b, which valid JSON
// guarantees after \u.
func hex4(b []byte) rune {
	r, _ := validHex4(b, 0)
	return r
}

// object is a decoded JSON object whose values are checked one by one. Keys
// match exactly (encoding/json's struct decoding would also match "TO" to
// "to"), and unknown keys are ignored. A repeated key keeps its last value.
type object map[string]json.RawMessage

// decodeObject checks body and decodes it as an object; valid JSON that is
// not an object wraps notObject.
func decodeObject(body []byte, notObject error) (object, error) {
	if err := checkJSON(body); err != nil {
		return nil, err
	}
	var o object
	if err := json.Unmarshal(body, &o); err != nil || o == nil {
		return nil, fmt.Errorf("%w: not an object", notObject)
	}
	return o, nil
}

// str returns the string under key; a missing key or another type wraps
// wrong.
func (o object) str(key string, wrong error) (string, error) {
	raw, ok := o[key]
	if !ok {
		return "", fmt.Errorf("%w: missing %q", wrong, key)
	}
	if raw[0] != '"' {
		return "", fmt.Errorf("%w: %q is not a string", wrong, key)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%w: %q: %v", wrong, key, err)
	}
	return s, nil
}

// checkRoute refuses routes that are too long, not valid UTF-8, or that
// hold a control character. NUL matters most: keys are the route, a NUL and
// a sequence number, so a route with a NUL would overlap another route's
// keys. The empty route is allowed.
func checkRoute(route string) error {
	if len(route) > MaxRouteBytes {
		return fmt.Errorf("%w: longer than %d bytes", errRoute, MaxRouteBytes)
	}
	if !utf8.ValidString(route) {
		return fmt.Errorf("%w: not valid UTF-8", errRoute)
	}
	for i := 0; i < len(route); i++ {
		if c := route[i]; c < 0x20 || c == 0x7f {
			return fmt.Errorf("%w: control character", errRoute)
		}
	}
	return nil
}

// sendRequest is the body of POST /send.
type sendRequest struct {
	to      string
	payload json.RawMessage // verbatim; the literal null is allowed
}

func decodeSend(body []byte) (sendRequest, error) {
	if checkJSON(body) == nil {
		if req, ok := fastSend(body); ok {
			if err := checkRoute(req.to); err != nil {
				return sendRequest{}, err
			}
			return req, nil
		}
	}
	return decodeSendSlow(body)
}

// decodeSendSlow is the general decoder of decodeSend, which also makes
// every error.
func decodeSendSlow(body []byte) (sendRequest, error) {
	o, err := decodeObject(body, errShape)
	if err != nil {
		return sendRequest{}, err
	}
	to, err := o.str("to", errShape)
	if err != nil {
		return sendRequest{}, err
	}
	payload, ok := o["payload"]
	if !ok {
		return sendRequest{}, fmt.Errorf("%w: missing %q", errShape, "payload")
	}
	if err := checkRoute(to); err != nil {
		return sendRequest{}, err
	}
	return sendRequest{to: to, payload: payload}, nil
}

// ackRequest is the body of POST /ack.
type ackRequest struct {
	me  string
	key string // checked only against me; it holds a NUL by design
}

func decodeAck(body []byte) (ackRequest, error) {
	if checkJSON(body) == nil {
		if req, ok := fastAck(body); ok {
			if err := checkRoute(req.me); err != nil {
				return ackRequest{}, err
			}
			return req, nil
		}
	}
	return decodeAckSlow(body)
}

// decodeAckSlow is the general decoder of decodeAck, which also makes
// every error.
func decodeAckSlow(body []byte) (ackRequest, error) {
	o, err := decodeObject(body, errShape)
	if err != nil {
		return ackRequest{}, err
	}
	me, err := o.str("me", errShape)
	if err != nil {
		return ackRequest{}, err
	}
	key, err := o.str("ack", errShape)
	if err != nil {
		return ackRequest{}, err
	}
	if err := checkRoute(me); err != nil {
		return ackRequest{}, err
	}
	return ackRequest{me: me, key: key}, nil
}

// announcement is what the bus takes from a /announce or /unregister body.
type announcement struct {
	key string // pubkey, or pubkey#session_id
	// fields is the body without age_ms, encoded compactly with sorted
	// keys and without the outer braces, ready to be spliced into /roster.
	fields []byte
}

// decodeAnnouncement derives the roster key of an announcement. Any body
// that is not an object with a string pubkey wraps errAnnounce (400, not
// 422, as in the original). Nothing else is checked: the bus never looks at
// signatures, and clients verify every roster entry themselves.
func decodeAnnouncement(body []byte) (announcement, error) {
	o, err := decodeObject(body, errAnnounce)
	if err != nil {
		return announcement{}, err
	}
	key, err := o.str("pubkey", errAnnounce)
	if err != nil {
		return announcement{}, err
	}
	if raw, ok := o["session"]; ok && raw[0] == '{' {
		var session object
		if json.Unmarshal(raw, &session) == nil {
			if id, err := session.str("session_id", errAnnounce); err == nil && id != "" {
				key += "#" + id
			}
		}
	}
	delete(o, "age_ms")
	enc, err := marshal(o)
	if err != nil {
		return announcement{}, fmt.Errorf("%w: %v", errAnnounce, err)
	}
	return announcement{key: key, fields: enc[1 : len(enc)-1]}, nil
}

// recvQuery is the query of GET /recv.
type recvQuery struct {
	me   string
	wait time.Duration
}

// decodeRecvQuery parses a /recv query with form rules ("+" is a space).
// The wait defaults to [DefaultRecvTimeout] and is clamped to limit; huge
// timeout_ms values clamp without overflowing.
func decodeRecvQuery(raw string, limit time.Duration) (recvQuery, error) {
	if me, wait, ok := fastRecvQuery(raw, limit); ok {
		if err := checkRoute(me); err != nil {
			return recvQuery{}, err
		}
		return recvQuery{me: me, wait: wait}, nil
	}
	return decodeRecvQuerySlow(raw, limit)
}

// decodeRecvQuerySlow is the general parser of decodeRecvQuery, which also
// makes every error.
func decodeRecvQuerySlow(raw string, limit time.Duration) (recvQuery, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return recvQuery{}, fmt.Errorf("%w: %v", errQuery, err)
	}
	mes, ok := q["me"]
	if !ok {
		return recvQuery{}, fmt.Errorf("%w: missing me", errQuery)
	}
	if len(mes) > 1 {
		return recvQuery{}, fmt.Errorf("%w: me given twice", errQuery)
	}
	wait := DefaultRecvTimeout
	if ts, ok := q["timeout_ms"]; ok {
		if len(ts) > 1 {
			return recvQuery{}, fmt.Errorf("%w: timeout_ms given twice", errQuery)
		}
		ms, err := strconv.ParseUint(ts[0], 10, 64)
		if err != nil {
			return recvQuery{}, fmt.Errorf("%w: timeout_ms is not an unsigned integer", errQuery)
		}
		if ms > uint64(limit/time.Millisecond) {
			wait = limit
		} else {
			wait = time.Duration(ms) * time.Millisecond
		}
	}
	wait = min(wait, limit)
	if err := checkRoute(mes[0]); err != nil {
		return recvQuery{}, err
	}
	return recvQuery{me: mes[0], wait: wait}, nil
}

// marshal encodes v compactly without escaping <, > and &, which keeps
// payloads and announcements as close to their original bytes as JSON
// allows.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
