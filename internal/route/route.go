// Package route handles the addresses that name a queue on the bus: a bare
// agent key, or a key followed by "#" and a session id.
//
// The bus treats an address as an opaque queue name, and messages are signed
// for the bare key only, so nothing in an address is trusted: a route says
// where to deliver, never who sent something. [Route] does not check the
// syntax of either part. Session ids that will reach a file path or a route
// built from local input are checked with [ValidateSession], and [Select]
// picks the session of a key to send to from the verified roster.
//
// # Round trip
//
// [Parse] is total and [Route.String] inverts it exactly: for every string s,
// Parse(s).String() == s. The other direction, Parse(r.String()) == r, holds
// for every route whose key contains no "#"; real keys are base64url and
// never do.
package route

import (
	"errors"
	"strings"
)

// Errors returned by this package, grouped by the step that reports them.
var (
	// ErrInvalidSession reports a session id that fails the session-id rule
	// of [ValidateSession]. The wrapping error gives the reason.
	ErrInvalidSession = errors.New("route: invalid session id")

	// ErrOwnSession reports a session hint naming the caller's own session
	// when the target key is the caller's own identity: a message to it
	// would loop back to the sender.
	ErrOwnSession = errors.New("route: session hint names the own session")
	// ErrAmbiguous reports that several sessions fit and none was chosen.
	// It is the error wrapped by every [AmbiguousError].
	ErrAmbiguous = errors.New("route: ambiguous session")
	// ErrNoSession reports that the key has no session on the roster and no
	// remembered session to fall back on.
	ErrNoSession = errors.New("route: no session for key")
)

// A Route is a bus address: a key, optionally narrowed to one session of
// that key. The zero value is the empty bare route.
type Route struct {
	// Key is the recipient's public key in base64url, as the bus sees it.
	Key string
	// Session is the session id, or empty for the bare key.
	Session string
}

// Parse splits s into a [Route]. It never fails.
//
// The split is at the first "#". When a non-empty part follows it, the key is
// what comes before and the session is everything after, which may itself
// contain "#". Otherwise the whole input is the key of a bare route, so "K#"
// parses as the bare key "K#" (which matches no real key) rather than as "K".
// Keeping the input whole is what makes [Route.String] an exact inverse.
func Parse(s string) Route {
	key, session, found := strings.Cut(s, "#")
	if !found || session == "" {
		return Route{Key: s}
	}
	return Route{Key: key, Session: session}
}

// New returns the route for key and session. An empty session gives the bare
// route for key.
func New(key, session string) Route {
	return Route{Key: key, Session: session}
}

// String formats r as "key#session", or as the bare key when r has no
// session.
func (r Route) String() string {
	if r.Session == "" {
		return r.Key
	}
	return r.Key + "#" + r.Session
}

// Bare reports whether r names a key without a session.
func (r Route) Bare() bool {
	return r.Session == ""
}
