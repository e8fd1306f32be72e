package wire

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Headers and values of the answers that refuse a request for its
// signature (401) or for a rate limit (429). The signature headers of a
// request are package reqsign's.
const (
	// AuthenticateHeader names the scheme a 401 answer asks for, as
	// HTTP requires of every 401.
	AuthenticateHeader = "WWW-Authenticate"
	// AuthScheme is the value of [AuthenticateHeader]: requests signed
	// with the session's key as package reqsign signs them.
	AuthScheme = "Interlink-Request-v1"
	// RetryAfterHeader carries, on a 429 or 507 answer, how many whole
	// seconds the client should wait before it tries again.
	RetryAfterHeader = "Retry-After"
	// MaxRetryAfter bounds the wait [ParseRetryAfter] accepts from a
	// relay, so that a relay cannot park a client's messages for days.
	MaxRetryAfter = 10 * time.Minute
)

// RetryAfter returns the value of a Retry-After header for a wait of d:
// whole seconds, rounded up, at least 1.
func RetryAfter(d time.Duration) string {
	return strconv.FormatInt(max(1, int64((d+time.Second-1)/time.Second)), 10)
}

// ParseRetryAfter reads the Retry-After header of an answer in its
// delay-seconds form, the only one a bus sends; a larger value is cut to
// [MaxRetryAfter]. ok is false when h carries none, or one that is not a
// decimal number of seconds (an HTTP date, which a bus never sends, is
// not read).
func ParseRetryAfter(h http.Header) (d time.Duration, ok bool) {
	v := strings.TrimSpace(h.Get(RetryAfterHeader))
	if v == "" || len(v) > 12 || strings.Trim(v, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false
	}
	return min(time.Duration(n)*time.Second, MaxRetryAfter), true
}

// fromKeys is the key [PayloadFrom] looks for.
var fromKeys = []string{"from"}

// PayloadFrom returns the sender a /send payload names in its "from"
// member, the key a bus that verifies requests holds the request's signer
// to. Payloads are otherwise opaque to a bus; this is the one member it
// reads. payload must have passed [CheckJSON], as the payload of a body
// [DecodeSend] took has. It fails, wrapping [ErrShape], for a payload that
// is not an object with a string "from".
func PayloadFrom(payload []byte) (string, error) {
	var vals [1][]byte
	if scanObject(payload, fromKeys, vals[:]) && vals[0] != nil {
		if from, ok := fastString(vals[0]); ok {
			return from, nil
		}
	}
	o, err := decodeObject(payload, ErrShape)
	if err != nil {
		return "", err
	}
	from, err := o.str("from", ErrShape)
	if err != nil {
		return "", fmt.Errorf("%w: the payload names no sender (from)", ErrShape)
	}
	return from, nil
}
