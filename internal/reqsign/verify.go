package reqsign

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/protocol"
)

// Freshness bounds of a request's time against the verifier's clock; both
// accept the exact limit. See the package documentation for why.
const (
	MaxPast   = 5 * time.Minute
	MaxFuture = protocol.MaxFuture
)

// Default bounds of the nonce memory; see [Options].
const (
	DefaultPerKey = 4096
	DefaultTotal  = 65536
)

// MaxAlternatives bounds how many (authority, target) combinations a
// verifier tries, so that a bad signature costs a bounded number of
// verifications.
const MaxAlternatives = 16

// Options configure a [Verifier]. The zero value means the defaults.
type Options struct {
	// Authorities are names, besides the request's own Host, that a client
	// may have signed: those of a reverse proxy in front of the bus that
	// rewrites Host. Compared case-insensitively.
	Authorities []string
	// PathPrefixes are path prefixes a reverse proxy strips before it
	// forwards a request (each starts with "/" and does not end with it).
	PathPrefixes []string
	// PerKey bounds the nonces one key holds; 0 means [DefaultPerKey].
	PerKey int
	// Total bounds the nonces of all keys; 0 means [DefaultTotal]. A key
	// holds at most half of what the others leave free of it.
	Total int
}

// Verifier checks signed requests and remembers their nonces. It is safe
// for concurrent use.
type Verifier struct {
	authorities []string // fixed at creation, lower case
	prefixes    []string // fixed at creation
	nonces      *nonceSet
}

// New returns a verifier with the given options; nil means the defaults.
// Options it cannot use give an [*OptionsError].
func New(opts *Options) (*Verifier, error) {
	if opts == nil {
		opts = &Options{}
	}
	v := &Verifier{}
	for _, a := range opts.Authorities {
		if a == "" {
			return nil, &OptionsError{Detail: "empty authority"}
		}
		v.authorities = append(v.authorities, Authority(a))
	}
	for _, p := range opts.PathPrefixes {
		if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
			return nil, &OptionsError{Detail: fmt.Sprintf("path prefix %q must start with / and not end with it", p)}
		}
		v.prefixes = append(v.prefixes, p)
	}
	if n := (1 + len(v.authorities)) * (1 + len(v.prefixes)); n > MaxAlternatives {
		return nil, &OptionsError{Detail: fmt.Sprintf("%d authority and prefix combinations, at most %d", n, MaxAlternatives)}
	}
	perKey, total := opts.PerKey, opts.Total
	if perKey <= 0 {
		perKey = DefaultPerKey
	}
	if total <= 0 {
		total = DefaultTotal
	}
	if perKey < 1 || total < 2 {
		return nil, fmt.Errorf("reqsign: nonce bounds too small")
	}
	v.nonces = newNonceSet(perKey, total)
	return v, nil
}

// Verify checks the signature of r, whose body the caller read as body, at
// now, and returns the key that signed it. See [Verifier.VerifyHash].
func (v *Verifier) Verify(r *http.Request, body []byte, now time.Time) (identity.PublicKey, error) {
	return v.VerifyHash(r, sha256.Sum256(body), now)
}

// VerifyHash checks the signature of r, whose body has the SHA-256 sum, at
// now, and returns the key that signed it. In order it refuses: missing or
// malformed headers ([ErrMissing], [ErrMalformed], as a [*HeaderError]); a
// time outside the window ([ErrStale], [ErrFuture], as a [*TimeError]); a signature that
// verifies for none of the accepted authorities and targets
// ([ErrBadSignature]); a nonce already seen ([ErrReplay]) or a key whose
// share of the nonce memory is full ([ErrShareFull]). Only a request whose
// signature verifies uses nonce memory, so nobody can spend another key's
// share.
func (v *Verifier) VerifyHash(r *http.Request, sum [32]byte, now time.Time) (identity.PublicKey, error) {
	var none identity.PublicKey
	h, err := ParseHeaders(r.Header)
	if err != nil {
		return none, err
	}
	nowMS := unixMS(now)
	// The past bound is checked against the latest clock the verifier
	// has seen, since entries are forgotten by it: a clock that steps
	// back must not revive a request whose nonce is gone.
	latest := v.nonces.advance(nowMS)
	if h.TimeMS > nowMS && h.TimeMS-nowMS > uint64(MaxFuture.Milliseconds()) {
		return none, &TimeError{Err: ErrFuture, Detail: fmt.Sprintf("%d ms ahead of the relay's clock, at most %d", h.TimeMS-nowMS, MaxFuture.Milliseconds())}
	}
	if h.TimeMS < latest && latest-h.TimeMS > uint64(MaxPast.Milliseconds()) {
		return none, &TimeError{Err: ErrStale, Detail: fmt.Sprintf("%d ms behind the relay's clock, at most %d", latest-h.TimeMS, MaxPast.Milliseconds())}
	}
	if !v.verifies(r, &h, sum) {
		return none, ErrBadSignature
	}
	if err := v.nonces.insert(h.Key, h.Nonce, h.TimeMS+uint64(MaxPast.Milliseconds())); err != nil {
		return none, err
	}
	return h.Key, nil
}

// verifies reports whether the signature in h verifies for r with any of
// the accepted authorities and targets.
func (v *Verifier) verifies(r *http.Request, h *Headers, sum [32]byte) bool {
	c := Canonical{Key: h.Key, TimeMS: h.TimeMS, Nonce: h.Nonce, BodyHash: sum, Method: r.Method}
	target := Target(r)
	auths := append([]string{Authority(r.Host)}, v.authorities...)
	targets := []string{target}
	for _, p := range v.prefixes {
		targets = append(targets, p+target)
	}
	for _, a := range auths {
		for _, t := range targets {
			c.Authority, c.Target = a, t
			if identity.VerifyStrict(h.Key[:], c.Bytes(), h.Signature[:]) {
				return true
			}
		}
	}
	return false
}

// Nonces returns how many nonces the verifier holds, of all keys.
func (v *Verifier) Nonces() int { return v.nonces.len() }
