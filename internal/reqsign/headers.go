package reqsign

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/interlink-go/interlink/internal/identity"
)

// Unsigned reports whether hdr carries none of the four signature headers:
// a request that does not try to sign at all, which a bus that does not
// require signatures serves as anonymous. A request with some of them is
// not unsigned; [ParseHeaders] refuses it.
func Unsigned(hdr http.Header) bool {
	for _, h := range headers {
		if len(hdr.Values(h)) > 0 {
			return false
		}
	}
	return true
}

// ParseHeaders decodes the signature headers of hdr. Each must appear
// exactly once: the key as a strict base64 public key, the time as decimal
// Unix milliseconds without sign or leading zeros, the nonce and the
// signature as strict base64 of 16 and 64 bytes. It returns a
// [*HeaderError] for the first header, in the order key, time, nonce,
// signature, that is missing or malformed.
func ParseHeaders(hdr http.Header) (Headers, error) {
	var h Headers
	var vals [len(headers)]string
	for i, name := range headers {
		vs := hdr.Values(name)
		switch len(vs) {
		case 0:
			return h, &HeaderError{Header: name, Err: ErrMissing}
		case 1:
			vals[i] = vs[0]
		default:
			return h, &HeaderError{Header: name, Err: ErrMalformed, Detail: fmt.Sprintf("it appears %d times", len(vs))}
		}
	}
	var err error
	if h.Key, err = identity.ParsePublicKey(vals[0]); err != nil {
		return h, &HeaderError{Header: HeaderKey, Err: ErrMalformed, Detail: "not a public key"}
	}
	if h.TimeMS, err = parseTime(vals[1]); err != nil {
		return h, &HeaderError{Header: HeaderTime, Err: ErrMalformed, Detail: err.Error()}
	}
	if err := decodeFixed(h.Nonce[:], vals[2]); err != nil {
		return h, &HeaderError{Header: HeaderNonce, Err: ErrMalformed, Detail: err.Error()}
	}
	if err := decodeFixed(h.Signature[:], vals[3]); err != nil {
		return h, &HeaderError{Header: HeaderSignature, Err: ErrMalformed, Detail: err.Error()}
	}
	return h, nil
}

// parseTime reads decimal milliseconds in their one canonical spelling.
func parseTime(s string) (uint64, error) {
	if s == "" || len(s) > 20 {
		return 0, fmt.Errorf("want 1 to 20 decimal digits")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("want decimal digits only")
		}
	}
	if len(s) > 1 && s[0] == '0' {
		return 0, fmt.Errorf("leading zero")
	}
	ms, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("out of range")
	}
	return ms, nil
}

// decodeFixed decodes strict base64 of exactly len(dst) bytes into dst.
func decodeFixed(dst []byte, s string) error {
	// Refuse long values before decoding them: a header may be 8 KiB.
	if len(s) > identity.SignatureSize*2 {
		return fmt.Errorf("want base64 of %d bytes", len(dst))
	}
	b, err := identity.DecodeBase64(s)
	if err != nil {
		return fmt.Errorf("not strict unpadded url-safe base64")
	}
	if len(b) != len(dst) {
		return fmt.Errorf("%d bytes, want %d", len(b), len(dst))
	}
	copy(dst, b)
	return nil
}
