package bus

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/keylimit"
	"github.com/interlink-go/interlink/internal/reqsign"
	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/wire"
)

// Auth says what a bus does with request signatures ([Options.Auth]).
type Auth int

// The modes of [Options.Auth]. In every mode but [AuthOff], a request that
// carries a signature is held to the same rules: its signature must
// verify (package reqsign: this bus, this method, target and body, fresh,
// not replayed), and it must be signed by the key it acts for. The modes
// differ only in what they do with a request that carries none.
const (
	// AuthOptional serves unsigned requests as the original broker does,
	// within the per-address limit, and verifies signed ones. It is the
	// default, so that the original's agents keep working.
	AuthOptional Auth = iota
	// AuthOff ignores signature headers and applies neither per-key nor
	// per-address limits: the bus as it was before requests were signed.
	AuthOff
	// AuthRequired refuses unsigned requests to /send, /recv, /ack,
	// /announce and /unregister with 401. GET /roster, /healthz, the
	// status page and /metrics stay open to all.
	AuthRequired
)

// ParseAuth reads a mode as the --auth flag spells it: off, optional or
// required.
func ParseAuth(s string) (Auth, error) {
	switch s {
	case "off":
		return AuthOff, nil
	case "optional":
		return AuthOptional, nil
	case "required":
		return AuthRequired, nil
	}
	return 0, fmt.Errorf("want off, optional or required")
}

// String returns the mode as [ParseAuth] reads it.
func (a Auth) String() string {
	switch a {
	case AuthOff:
		return "off"
	case AuthRequired:
		return "required"
	default:
		return "optional"
	}
}

// Limits are the rates of a bus's per-client limits ([Options.Limits]).
// A rate that allows nothing, the zero rate among them, means the preset
// of package keylimit of the same name.
type Limits struct {
	// Sends limits the /send requests of one verified key.
	Sends keylimit.Rate
	// RosterUpdates limits the /announce and /unregister requests of one
	// verified key.
	RosterUpdates keylimit.Rate
	// Unsigned limits the unsigned requests of one address (an IPv4
	// address or an IPv6 /64) to /send, /recv, /ack, /announce,
	// /unregister and /roster. Loopback addresses are not limited: they
	// are this machine's own users, or a reverse proxy on it, behind
	// which every client would share one address.
	Unsigned keylimit.Rate
}

// Reasons a request is refused for its signature, the values of the
// reason label of the refusal metrics.
const (
	reasonUnsigned     = iota // no signature where one is required
	reasonMalformed           // a signature header missing or malformed
	reasonStale               // signed too long ago, or too far ahead
	reasonBadSignature        // does not verify
	reasonReplay              // a nonce seen already
	reasonWrongKey            // signed by another key than the one it acts for
	reasonAnnouncement        // an announcement whose own signature does not verify
	numReasons
)

// AuthReasons are the labels of [Stats.Unauthorized], in its order.
var AuthReasons = [numReasons]string{"unsigned", "malformed", "stale", "bad_signature", "replay", "wrong_key", "announcement"}

// Limits a request may be refused by, the values of the limit label of
// the refusal metrics.
const (
	limitSends   = iota // a key's sends
	limitRoster         // a key's roster updates
	limitAddress        // an address's unsigned requests
	limitNonces         // a key's share of the nonce memory
	numLimits
)

// LimitNames are the labels of [Stats.Limited], in its order.
var LimitNames = [numLimits]string{"sends", "roster_updates", "address", "nonces"}

// nonceShareWait is the Retry-After of a key whose share of the nonce
// memory is full: its oldest nonces leave the memory within
// [reqsign.MaxPast], usually much sooner.
const nonceShareWait = time.Minute

// guard holds what a bus needs to check requests' signatures and limits.
// Everything is fixed at creation except the counters, which are atomic.
//
// A signature's time is checked against the system clock, the one the
// agents that sign read, not against [Options.Now]: that is the bus's
// clock for envelope stamps, roster ages and the limits' buckets, which
// tests move at will.
type guard struct {
	mode     Auth
	verifier *reqsign.Verifier // nil with AuthOff
	sends    *keylimit.Limiter[identity.PublicKey]
	roster   *keylimit.Limiter[identity.PublicKey]
	addrs    *keylimit.Limiter[netip.Prefix]
	// limitLoopback makes loopback addresses count for the per-address
	// limit too; tests set it.
	limitLoopback bool

	unauthorized [numReasons]atomic.Uint64
	limited      [numLimits]atomic.Uint64
}

// newGuard returns the guard opts ask for.
func newGuard(opts *Options, now func() time.Time) *guard {
	g := &guard{mode: opts.Auth, verifier: opts.Verifier}
	if g.mode == AuthOff {
		return g
	}
	if g.verifier == nil {
		g.verifier, _ = reqsign.New(nil) // the defaults cannot fail
	}
	var l Limits
	if opts.Limits != nil {
		l = *opts.Limits
	}
	kopts := &keylimit.Options{Now: now}
	g.sends = newLimiter[identity.PublicKey](l.Sends, keylimit.Sends, kopts)
	g.roster = newLimiter[identity.PublicKey](l.RosterUpdates, keylimit.RosterUpdates, kopts)
	g.addrs = newLimiter[netip.Prefix](l.Unsigned, keylimit.Unsigned, kopts)
	return g
}

// newLimiter returns a limiter of rate r, or of def when r allows nothing
// (the zero rate among others).
func newLimiter[K comparable](r, def keylimit.Rate, opts *keylimit.Options) *keylimit.Limiter[K] {
	if l, err := keylimit.New[K](r, opts); err == nil {
		return l
	}
	l, _ := keylimit.New[K](def, opts) // the presets cannot fail
	return l
}

// authError refuses a request for its signature: 401 with the reason in
// the error body.
type authError struct {
	reason int
	msg    string
}

func (e *authError) Error() string { return e.msg }

// limitError refuses a request for a rate limit: 429 with Retry-After.
type limitError struct {
	limit int
	wait  time.Duration
}

func (e *limitError) Error() string {
	switch e.limit {
	case limitSends:
		return "too many sends from this key; retry after the time in Retry-After"
	case limitRoster:
		return "too many roster updates from this key; retry after the time in Retry-After"
	case limitNonces:
		return "too many signed requests from this key within five minutes; retry after the time in Retry-After"
	default:
		return "too many unsigned requests from this address; sign requests, or retry after the time in Retry-After"
	}
}

func (g *guard) refuse(reason int, msg string) error {
	g.unauthorized[reason].Add(1)
	return &authError{reason: reason, msg: msg}
}

func (g *guard) limit(which int, wait time.Duration) error {
	g.limited[which].Add(1)
	return &limitError{limit: which, wait: wait}
}

// admit decides on a request to one of the bus's operations before its
// body is read, and reports whether it is signed. With [AuthOff] every
// request counts as unsigned and passes. An unsigned request is refused
// when the bus requires signatures, and otherwise takes a token of its
// address's bucket. A signed one is checked once its body is there
// ([guard.verify]).
func (g *guard) admit(r *http.Request) (signed bool, err error) {
	return g.admitOn(r, false)
}

// admitOpen is [guard.admit] for a route that serves unsigned requests in
// every mode (GET /roster).
func (g *guard) admitOpen(r *http.Request) (signed bool, err error) {
	return g.admitOn(r, true)
}

func (g *guard) admitOn(r *http.Request, open bool) (signed bool, err error) {
	if g.mode == AuthOff {
		return false, nil
	}
	if !reqsign.Unsigned(r.Header) {
		return true, nil
	}
	if g.mode == AuthRequired && !open {
		return false, g.refuse(reasonUnsigned, "this relay requires signed requests, and this one carries no "+
			reqsign.HeaderKey+" header; use an interlink agent that signs its requests")
	}
	client := keylimit.RemoteClient(r.RemoteAddr)
	if client.Addr().IsLoopback() && !g.limitLoopback {
		return false, nil
	}
	if ok, wait := g.addrs.Allow(client); !ok {
		return false, g.limit(limitAddress, wait)
	}
	return false, nil
}

// verify checks the signature of r over body and returns its signer. Its errors say what is wrong without saying anything about the
// queues or the roster.
func (g *guard) verify(r *http.Request, body []byte) (identity.PublicKey, error) {
	key, err := g.verifier.Verify(r, body, time.Now())
	if err == nil {
		return key, nil
	}
	he, malformed := errors.AsType[*reqsign.HeaderError](err)
	te, outside := errors.AsType[*reqsign.TimeError](err)
	switch {
	case malformed:
		return key, g.refuse(reasonMalformed, he.Reason())
	case outside:
		return key, g.refuse(reasonStale, te.Reason()+"; check the clock of the machine that signed it")
	case errors.Is(err, reqsign.ErrBadSignature):
		return key, g.refuse(reasonBadSignature, "the request's signature does not verify for this relay's address, "+
			"this method, path and body; a reverse proxy that changes the Host or the path must be named to the relay "+
			"(--authority, --path-prefix)")
	case errors.Is(err, reqsign.ErrReplay):
		return key, g.refuse(reasonReplay, "this signed request was seen already; sign every request anew")
	case errors.Is(err, reqsign.ErrShareFull):
		return key, g.limit(limitNonces, nonceShareWait)
	}
	return key, g.refuse(reasonBadSignature, "the request's signature does not verify")
}

// owner checks that signer is the key of rt, the route a request acts on.
func (g *guard) owner(signer identity.PublicKey, rt string) error {
	if route.Parse(rt).Key == signer.String() {
		return nil
	}
	return g.refuse(reasonWrongKey, "the request is signed by "+signer.Fingerprint()+
		", which is not the key of the route it names; only a route's own key may use it")
}

// sender checks that signer is the sender named in a /send payload.
func (g *guard) sender(signer identity.PublicKey, payload []byte) error {
	from, err := wire.PayloadFrom(payload)
	if err != nil {
		return g.refuse(reasonWrongKey, "the message names no sender (from) to hold the request's signer to")
	}
	if from != signer.String() {
		return g.refuse(reasonWrongKey, "the request is signed by "+signer.Fingerprint()+
			", which is not the sender (from) of the message it carries")
	}
	return nil
}

// announcer checks a signed /announce or /unregister: the body names
// signer as its pubkey, and an announcement (body is not nil) carries a
// signature of its own that verifies, and a privacy extension, if it has
// any member of one, that is complete and verifies
// ([identity.DecodePrivate]).
func (g *guard) announcer(signer identity.PublicKey, a wire.Announce, body []byte) error {
	if a.PubKey != signer.String() {
		return g.refuse(reasonWrongKey, "the request is signed by "+signer.Fingerprint()+
			", which is not the pubkey it announces or unregisters")
	}
	if body == nil {
		return nil
	}
	ann, _, _, err := identity.DecodePrivate(body)
	pe, isPrivate := errors.AsType[*identity.PrivateError](err)
	switch {
	case isPrivate:
		return g.refuse(reasonAnnouncement, "the announcement's privacy extension (readers, discoverable, "+
			"public_sig, private_sig) is incomplete or does not verify: "+pe.Reason())
	case errors.Is(err, identity.ErrDecode):
		return g.refuse(reasonAnnouncement, "the announcement does not decode: "+err.Error())
	case err != nil || ann.PubKey != signer.String():
		return g.refuse(reasonAnnouncement, "the announcement's own signature does not verify")
	}
	return nil
}

// signedSend checks a signed /send whose body and payload are read: its
// signature, that its signer is the message's sender, and the signer's
// send bucket. It is a function of its own, not part of the handler, so
// that the handler's frame, which is on the stack while a body arrives,
// stays small (see [readBody]).
func (g *guard) signedSend(r *http.Request, body, payload []byte) error {
	signer, err := g.verify(r, body)
	if err != nil {
		return err
	}
	if err := g.sender(signer, payload); err != nil {
		return err
	}
	return g.allowSend(signer)
}

// signedBy checks a signed request on route rt whose body is read: its
// signature, and that its signer is the route's key. Like
// [guard.signedSend] it keeps the signer out of the handler's frame.
func (g *guard) signedBy(r *http.Request, body []byte, rt string) error {
	signer, err := g.verify(r, body)
	if err != nil {
		return err
	}
	return g.owner(signer, rt)
}

// allowSend takes a token of signer's send bucket.
func (g *guard) allowSend(signer identity.PublicKey) error {
	if ok, wait := g.sends.Allow(signer); !ok {
		return g.limit(limitSends, wait)
	}
	return nil
}

// allowRoster takes a token of signer's roster bucket.
func (g *guard) allowRoster(signer identity.PublicKey) error {
	if ok, wait := g.roster.Allow(signer); !ok {
		return g.limit(limitRoster, wait)
	}
	return nil
}
