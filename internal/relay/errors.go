package relay

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Errors returned by this package. Transport failures wrap the error of
// net/http, so a cancelled or expired context is seen by errors.Is as
// [context.Canceled] or [context.DeadlineExceeded].
var (
	// ErrNoURL means the relay list given to [ParseURLs] holds no URL.
	ErrNoURL = errors.New("relay: no relay URL given")
	// ErrBadURL means a relay URL is not an http:// or https:// URL with
	// a host.
	ErrBadURL = errors.New("relay: bad relay URL")

	// ErrTooLarge means a relay sent a response body over the limit for
	// its endpoint; the rest of the body is not read.
	ErrTooLarge = errors.New("relay: response body too large")
	// ErrMalformed means a relay answered 2xx with a body that is not JSON
	// or does not have the shape of the endpoint's reply.
	ErrMalformed = errors.New("relay: malformed reply")
)

// StatusError is returned when a relay answers with a status other than 2xx.
type StatusError struct {
	URL  string // request URL
	Op   string // endpoint name: send, recv, ack, announce, unregister, roster
	Code int    // HTTP status code
	// Body is the start of the response body (at most 256 bytes) with
	// control and invisible characters removed. It comes from the relay
	// and is untrusted.
	Body string
	// RetryAfter is how long the relay asked the client to wait before
	// it tries again (its Retry-After header, at most
	// wire.MaxRetryAfter), or 0 when it did not say. A relay sends it
	// with 429, when a key or an address is over its limit, and with
	// 507, when its queues are full.
	RetryAfter time.Duration
}

// Error returns a one-line description holding the numeric status.
func (e *StatusError) Error() string {
	s := fmt.Sprintf("relay: %s %s: HTTP %d", e.Op, e.URL, e.Code)
	if t := http.StatusText(e.Code); t != "" {
		s += " " + t
	}
	if e.Body != "" {
		s += ": " + e.Body
	}
	return s
}

// TLSError reports a request that failed for a reason of TLS a person can
// act on: a certificate this machine does not trust, one for another
// name or out of date, or TLS spoken to a relay that speaks plain HTTP
// and the other way round. Sentence says it in plain words
// (package tlsfiles).
type TLSError struct {
	Op       string // endpoint name, as in [StatusError]
	URL      string // the relay's base URL
	Sentence string
	Err      error
}

// Error returns one line: the request and the plain sentence.
func (e *TLSError) Error() string {
	return fmt.Sprintf("relay: %s %s: %s", e.Op, e.URL, e.Sentence)
}

// Unwrap returns the error of net/http.
func (e *TLSError) Unwrap() error { return e.Err }

// Permanent reports whether retrying the same request is pointless: the
// relay refused it with a 4xx status, such as 413 for an oversized body or
// 400 for a malformed route. 408 and 429 say "not now" rather than "never"
// and do not count, nor do 3xx and 5xx.
func (e *StatusError) Permanent() bool {
	switch e.Code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests:
		return false
	}
	return e.Code >= 400 && e.Code < 500
}
