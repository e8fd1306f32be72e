package wire

import (
	"net/url"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// The fast paths below decode the common shapes of the hot requests without
// building a map or going through reflection. Each either produces exactly
// what the general decoder would, or reports that it cannot, and the caller
// then uses the general decoder, which also produces every error. Fuzz
// tests compare the two.

// scanObject finds, in body, the raw values of keys (the last one wins when
// a key repeats, as in the general decoder) and stores them in vals; a key
// that is absent leaves its value nil. body must have passed CheckJSON. It
// reports false when body is not an object, or when a key holds an escape,
// which the general decoder would unescape before comparing.
func scanObject(body []byte, keys []string, vals [][]byte) bool {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return false
	}
	i = skipSpace(body, i+1)
	if body[i] == '}' {
		return true
	}
	for {
		if body[i] != '"' {
			return false
		}
		start := i + 1
		end := start
		for body[end] != '"' {
			if body[end] == '\\' {
				return false
			}
			end++
		}
		key := body[start:end]
		i = skipSpace(body, end+1) // at the colon
		i = skipSpace(body, i+1)
		vstart := i
		i = skipValue(body, i)
		for k, want := range keys {
			if string(key) == want {
				vals[k] = body[vstart:i]
			}
		}
		i = skipSpace(body, i)
		if body[i] != ',' {
			return true // the closing brace
		}
		i = skipSpace(body, i+1)
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just after the valid JSON value that starts
// at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			case '"':
				i = skipString(b, i) - 1
			}
		}
	default: // a number, true, false or null
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// skipString returns the index just after the string whose opening quote
// is at b[i].
func skipString(b []byte, i int) int {
	for i++; b[i] != '"'; i++ {
		if b[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// fastString decodes raw, the text of a JSON value from a body that passed
// CheckJSON, as a string. It reports false when raw is not a string.
func fastString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	in := raw[1 : len(raw)-1]
	esc := false
	for _, c := range in {
		if c == '\\' {
			esc = true
			break
		}
	}
	if !esc {
		return string(in), true
	}
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		switch in[i] {
		case '"', '\\', '/':
			out = append(out, in[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(in[i+1:])
			i += 4
			if utf16.IsSurrogate(r) {
				// CheckJSON let only a high surrogate followed by a
				// low one through.
				r = utf16.DecodeRune(r, hex4(in[i+3:]))
				i += 6
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", false
		}
	}
	return string(out), true
}

// sendKeys and ackKeys are the keys the fast paths look for.
var (
	sendKeys = []string{"to", "payload"}
	ackKeys  = []string{"me", "ack"}
)

// fastSend decodes a /send body that passed CheckJSON. It reports false
// when the general decoder must decide.
func fastSend(body []byte) (Send, bool) {
	var vals [2][]byte
	if !scanObject(body, sendKeys, vals[:]) || vals[0] == nil || vals[1] == nil {
		return Send{}, false
	}
	to, ok := fastString(vals[0])
	if !ok {
		return Send{}, false
	}
	return Send{To: to, Payload: vals[1]}, true
}

// fastAck decodes an /ack body that passed CheckJSON. It reports false
// when the general decoder must decide.
func fastAck(body []byte) (Ack, bool) {
	var vals [2][]byte
	if !scanObject(body, ackKeys, vals[:]) || vals[0] == nil || vals[1] == nil {
		return Ack{}, false
	}
	me, ok := fastString(vals[0])
	if !ok {
		return Ack{}, false
	}
	key, ok := fastString(vals[1])
	if !ok {
		return Ack{}, false
	}
	return Ack{Me: me, Key: key}, true
}

// fastRecvQuery parses the usual /recv query: me and timeout_ms, each at
// most once, and nothing else. It reports false for anything else, which
// the general parser then decides on. The route is not checked here.
func fastRecvQuery(raw string, limit time.Duration) (me string, wait time.Duration, ok bool) {
	var haveMe, haveWait bool
	wait = DefaultRecvWait
	for raw != "" {
		var pair string
		pair, raw, _ = cut(raw, '&')
		key, value, eq := cut(pair, '=')
		if !eq {
			return "", 0, false
		}
		switch key {
		case "me":
			if haveMe {
				return "", 0, false
			}
			v, err := url.QueryUnescape(value)
			if err != nil {
				return "", 0, false
			}
			me, haveMe = v, true
		case "timeout_ms":
			if haveWait {
				return "", 0, false
			}
			ms, err := strconv.ParseUint(value, 10, 64)
			if err != nil {
				return "", 0, false
			}
			if ms > uint64(limit/time.Millisecond) {
				wait = limit
			} else {
				wait = time.Duration(ms) * time.Millisecond
			}
			haveWait = true
		default:
			return "", 0, false
		}
	}
	if !haveMe {
		return "", 0, false
	}
	return me, min(wait, limit), true
}

// cut is strings.Cut for a single byte, without the query's semicolon
// rule: a semicolon anywhere makes fastRecvQuery's key or value differ
// from what it accepts, so it never gets that far.
func cut(s string, sep byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ';' {
			return "", "", false
		}
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// appendKeyJSON appends key as the JSON string that [identity.Marshal]
// would make, for the keys the bus hands out: printable ASCII and the NUL.
// It reports false for anything else, which identity.Marshal then encodes.
func appendKeyJSON(dst []byte, key string) ([]byte, bool) {
	dst = append(dst, '"')
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case c == 0:
			dst = append(dst, `\u0000`...)
		case c < 0x20 || c >= 0x80 || c == '"' || c == '\\':
			return dst, false
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"'), true
}
