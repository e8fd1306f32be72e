package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/interlink-go/interlink/internal/identity"
)

// IsJSONType reports whether a Content-Type header names JSON:
// application/json or application/<anything>+json, with any parameters.
// The bus answers 415 to a request body of another type.
func IsJSONType(header string) bool {
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

// CheckJSON returns an error wrapping [ErrSyntax] unless body is exactly
// one JSON value, with optional surrounding whitespace, in valid UTF-8,
// without unpaired surrogate escapes or numbers beyond float64, and nested
// at most [MaxDepth] deep. [Valid] gives the same verdict without saying
// why.
func CheckJSON(body []byte) error {
	if Valid(body) {
		return nil
	}
	return checkJSONSlow(body)
}

// checkJSONSlow is CheckJSON in three passes, the first encoding/json's:
// it finds the error for a body Valid refuses.
func checkJSONSlow(body []byte) error {
	if !json.Valid(body) {
		// Decode only to get an error that says what is wrong.
		var v json.RawMessage
		err := json.Unmarshal(body, &v)
		return fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	if !utf8.Valid(body) {
		return fmt.Errorf("%w: not valid UTF-8", ErrSyntax)
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
			if depth > MaxDepth {
				return fmt.Errorf("%w: nested more than %d deep", ErrSyntax, MaxDepth)
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
		return fmt.Errorf("%w: number out of range", ErrSyntax)
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
			return 0, fmt.Errorf("%w: unpaired surrogate escape", ErrSyntax)
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
	if err := CheckJSON(body); err != nil {
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

// CheckRoute refuses routes that are too long ([MaxRouteBytes]), not valid
// UTF-8, or that hold a control character. NUL matters most: the bus's
// message keys are the route, a NUL and a sequence number, so a route with
// a NUL would overlap another route's keys. The empty route is allowed.
func CheckRoute(route string) error {
	if len(route) > MaxRouteBytes {
		return fmt.Errorf("%w: longer than %d bytes", ErrRoute, MaxRouteBytes)
	}
	if !utf8.ValidString(route) {
		return fmt.Errorf("%w: not valid UTF-8", ErrRoute)
	}
	for i := 0; i < len(route); i++ {
		if c := route[i]; c < 0x20 || c == 0x7f {
			return fmt.Errorf("%w: control character", ErrRoute)
		}
	}
	return nil
}

// Send is the body of POST /send.
type Send struct {
	To      string
	Payload []byte // verbatim, a JSON value; the literal null is allowed
}

// DecodeSend decodes and checks a /send body. Its errors wrap [ErrSyntax],
// [ErrShape] or [ErrRoute]. Payload is a slice of body.
func DecodeSend(body []byte) (Send, error) {
	if Valid(body) {
		if req, ok := fastSend(body); ok {
			if err := CheckRoute(req.To); err != nil {
				return Send{}, err
			}
			return req, nil
		}
	}
	return decodeSendSlow(body)
}

// decodeSendSlow is the general decoder of DecodeSend, which also makes
// every error.
func decodeSendSlow(body []byte) (Send, error) {
	o, err := decodeObject(body, ErrShape)
	if err != nil {
		return Send{}, err
	}
	to, err := o.str("to", ErrShape)
	if err != nil {
		return Send{}, err
	}
	payload, ok := o["payload"]
	if !ok {
		return Send{}, fmt.Errorf("%w: missing %q", ErrShape, "payload")
	}
	if err := CheckRoute(to); err != nil {
		return Send{}, err
	}
	return Send{To: to, Payload: payload}, nil
}

// Ack is the body of POST /ack.
type Ack struct {
	Me  string
	Key string // checked only by the bus, against Me; it holds a NUL by design
}

// DecodeAck decodes and checks an /ack body. Its errors wrap [ErrSyntax],
// [ErrShape] or [ErrRoute].
func DecodeAck(body []byte) (Ack, error) {
	if Valid(body) {
		if req, ok := fastAck(body); ok {
			if err := CheckRoute(req.Me); err != nil {
				return Ack{}, err
			}
			return req, nil
		}
	}
	return decodeAckSlow(body)
}

// decodeAckSlow is the general decoder of DecodeAck, which also makes
// every error.
func decodeAckSlow(body []byte) (Ack, error) {
	o, err := decodeObject(body, ErrShape)
	if err != nil {
		return Ack{}, err
	}
	me, err := o.str("me", ErrShape)
	if err != nil {
		return Ack{}, err
	}
	key, err := o.str("ack", ErrShape)
	if err != nil {
		return Ack{}, err
	}
	if err := CheckRoute(me); err != nil {
		return Ack{}, err
	}
	return Ack{Me: me, Key: key}, nil
}

// Announce is what the bus takes from a /announce or /unregister body.
type Announce struct {
	Key    string // pubkey, or pubkey#session_id
	PubKey string // the pubkey member alone
	// Fields is the body without age_ms, encoded compactly with sorted
	// keys and without the outer braces, ready to be spliced into a
	// /roster answer ([AppendRosterEntry]).
	Fields []byte
}

// DecodeAnnounce derives the roster key of an announcement. Any body that
// is not an object with a string pubkey wraps [ErrAnnounce] (400, not 422,
// as in the original). Nothing else is checked: the bus never looks at
// signatures, and clients verify every roster entry themselves.
func DecodeAnnounce(body []byte) (Announce, error) {
	o, err := decodeObject(body, ErrAnnounce)
	if err != nil {
		return Announce{}, err
	}
	pubkey, err := o.str("pubkey", ErrAnnounce)
	if err != nil {
		return Announce{}, err
	}
	key := pubkey
	if raw, ok := o["session"]; ok && raw[0] == '{' {
		var session object
		if json.Unmarshal(raw, &session) == nil {
			if id, err := session.str("session_id", ErrAnnounce); err == nil && id != "" {
				key += "#" + id
			}
		}
	}
	delete(o, "age_ms")
	enc, err := identity.Marshal(o)
	if err != nil {
		return Announce{}, fmt.Errorf("%w: %v", ErrAnnounce, err)
	}
	return Announce{Key: key, PubKey: pubkey, Fields: enc[1 : len(enc)-1]}, nil
}

// RecvQuery is the query of GET /recv.
type RecvQuery struct {
	Me   string
	Wait time.Duration
}

// DecodeRecvQuery parses a /recv query with form rules ("+" is a space).
// The wait defaults to [DefaultRecvWait] and is clamped to limit; huge
// timeout_ms values clamp without overflowing. Its errors wrap [ErrQuery]
// or [ErrRoute].
func DecodeRecvQuery(raw string, limit time.Duration) (RecvQuery, error) {
	if me, wait, ok := fastRecvQuery(raw, limit); ok {
		if err := CheckRoute(me); err != nil {
			return RecvQuery{}, err
		}
		return RecvQuery{Me: me, Wait: wait}, nil
	}
	return decodeRecvQuerySlow(raw, limit)
}

// decodeRecvQuerySlow is the general parser of DecodeRecvQuery, which also
// makes every error.
func decodeRecvQuerySlow(raw string, limit time.Duration) (RecvQuery, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return RecvQuery{}, fmt.Errorf("%w: %v", ErrQuery, err)
	}
	mes, ok := q["me"]
	if !ok {
		return RecvQuery{}, fmt.Errorf("%w: missing me", ErrQuery)
	}
	if len(mes) > 1 {
		return RecvQuery{}, fmt.Errorf("%w: me given twice", ErrQuery)
	}
	wait := DefaultRecvWait
	if ts, ok := q["timeout_ms"]; ok {
		if len(ts) > 1 {
			return RecvQuery{}, fmt.Errorf("%w: timeout_ms given twice", ErrQuery)
		}
		ms, err := strconv.ParseUint(ts[0], 10, 64)
		if err != nil {
			return RecvQuery{}, fmt.Errorf("%w: timeout_ms is not an unsigned integer", ErrQuery)
		}
		if ms > uint64(limit/time.Millisecond) {
			wait = limit
		} else {
			wait = time.Duration(ms) * time.Millisecond
		}
	}
	wait = min(wait, limit)
	if err := CheckRoute(mes[0]); err != nil {
		return RecvQuery{}, err
	}
	return RecvQuery{Me: mes[0], Wait: wait}, nil
}

// AnnounceView is what a stored announcement says about the session that
// sent it, raw and unverified.
type AnnounceView struct {
	PubKey, Name, SessionID, Summary string
}

// ViewAnnounce reads the fields of a stored announcement ([Announce.Fields])
// for display. Fields that are missing or of another type read as empty.
func ViewAnnounce(fields []byte) AnnounceView {
	var ann struct {
		PubKey  any `json:"pubkey"`
		Name    any `json:"name"`
		Session struct {
			SessionID any `json:"session_id"`
			Summary   any `json:"summary"`
		} `json:"session"`
	}
	obj := make([]byte, 0, len(fields)+2)
	obj = append(append(append(obj, '{'), fields...), '}')
	_ = json.Unmarshal(obj, &ann) // the bus stored a JSON object; a field of the wrong type stays empty
	str := func(v any) string {
		s, _ := v.(string)
		return s
	}
	return AnnounceView{
		PubKey:    str(ann.PubKey),
		Name:      str(ann.Name),
		SessionID: str(ann.Session.SessionID),
		Summary:   str(ann.Session.Summary),
	}
}
