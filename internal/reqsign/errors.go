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
	// verifier's clock; the error is a [*TimeError].
	ErrStale = errors.New("reqsign: " + staleText)
	// ErrFuture reports a request signed more than [MaxFuture] after the
	// verifier's clock; the error is a [*TimeError].
	ErrFuture = errors.New("reqsign: " + futureText)

	// ErrBadSignature reports a signature that does not verify for the
	// request as the verifier received it.
	ErrBadSignature = errors.New("reqsign: signature does not verify")

	// ErrReplay reports a nonce this key already used within the window.
	ErrReplay = errors.New("reqsign: request replayed")
	// ErrShareFull reports a key that holds its whole share of the nonce
	// memory; its requests are refused until its own entries expire.
	ErrShareFull = errors.New("reqsign: too many signed requests from this key")
)

// What [ErrStale] and [ErrFuture] say, without the package's prefix.
const (
	staleText  = "request signed too long ago"
	futureText = "request signed in the future"
)

// Each error type below has a Reason method: its message without the
// package's "reqsign: " prefix, for a program that names the source of
// the problem in its own words, such as a relay's answer or a command's
// error line.

// HeaderError reports a signature header that is missing or malformed.
type HeaderError struct {
	Header string // one of [HeaderKey], [HeaderTime], [HeaderNonce], [HeaderSignature]
	Err    error  // [ErrMissing] or [ErrMalformed]
	Detail string // what is wrong with a malformed value; empty when missing
}

func (e *HeaderError) Error() string { return "reqsign: " + e.Reason() }

// Reason returns the error's message without the package's prefix.
func (e *HeaderError) Reason() string {
	if e.Err == ErrMissing {
		return "header " + e.Header + " is missing"
	}
	s := "header " + e.Header + " is malformed"
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns [ErrMissing] or [ErrMalformed].
func (e *HeaderError) Unwrap() error { return e.Err }

// TimeError reports a request signed outside the window the verifier
// accepts.
type TimeError struct {
	Err    error  // [ErrStale] or [ErrFuture]
	Detail string // how far outside the window, against which clock
}

func (e *TimeError) Error() string { return "reqsign: " + e.Reason() }

// Reason returns the error's message without the package's prefix.
func (e *TimeError) Reason() string {
	s := staleText
	if e.Err == ErrFuture {
		s = futureText
	}
	return s + ": " + e.Detail
}

// Unwrap returns [ErrStale] or [ErrFuture].
func (e *TimeError) Unwrap() error { return e.Err }

// OptionsError reports [Options] that [New] cannot use.
type OptionsError struct {
	Detail string // which setting, and what is wrong with it
}

func (e *OptionsError) Error() string { return "reqsign: " + e.Reason() }

// Reason returns the error's message without the package's prefix.
func (e *OptionsError) Reason() string { return e.Detail }
