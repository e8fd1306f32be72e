package reqsign

import "errors"

// Reasons a request is refused, grouped by the step that finds them. A
// handler maps them with [errors.Is]; every error [Verifier.Verify] and
// [ParseHeaders] return wraps exactly one of them.
var (
	// ErrMissing reports a signature header that is absent; the error is a
	// [*HeaderError] naming it.
	ErrMissing = errors.New("reqsign: missing signature header")
	// ErrMalformed reports a signature header that appears more than once
	// or whose value does not parse; the error is a [*HeaderError].
	ErrMalformed = errors.New("reqsign: malformed signature header")

	// ErrStale reports a request signed more than [MaxPast] before the
	// verifier's clock.
	ErrStale = errors.New("reqsign: request signed too long ago")
	// ErrFuture reports a request signed more than [MaxFuture] after the
	// verifier's clock.
	ErrFuture = errors.New("reqsign: request signed in the future")

	// ErrBadSignature reports a signature that does not verify for the
	// request as the verifier received it.
	ErrBadSignature = errors.New("reqsign: signature does not verify")

	// ErrReplay reports a nonce this key already used within the window.
	ErrReplay = errors.New("reqsign: request replayed")
	// ErrShareFull reports a key that holds its whole share of the nonce
	// memory; its requests are refused until its own entries expire.
	ErrShareFull = errors.New("reqsign: too many signed requests from this key")
)

// HeaderError reports a signature header that is missing or malformed.
type HeaderError struct {
	Header string // one of [HeaderKey], [HeaderTime], [HeaderNonce], [HeaderSignature]
	Err    error  // [ErrMissing] or [ErrMalformed]
	Detail string // what is wrong with a malformed value; empty when missing
}

func (e *HeaderError) Error() string {
	if e.Err == ErrMissing {
		return "reqsign: header " + e.Header + " is missing"
	}
	s := "reqsign: header " + e.Header + " is malformed"
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns [ErrMissing] or [ErrMalformed].
func (e *HeaderError) Unwrap() error { return e.Err }
