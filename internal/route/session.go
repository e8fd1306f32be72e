package route

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"unicode"
	"unicode/utf8"

	"github.com/interlink-go/interlink/internal/lookalike"
)

// MaxSessionLen is the longest session id, in bytes, that [ValidateSession]
// accepts.
const MaxSessionLen = 128

// ValidateSession checks id against the session-id rule and returns nil when
// it passes. Otherwise it returns an error wrapping [ErrInvalidSession] that
// says why.
//
// Session ids end up in file names (per-session state) and in bus addresses,
// so the rule refuses anything that could escape a directory, name a drive or
// stream, or smuggle a line break into a log or a rendered notice: id must be
// non-empty valid UTF-8 of at most [MaxSessionLen] bytes, must not be "." or
// "..", and must not contain "/", "\", ":", NUL, any control character (C0,
// DEL and the C1 range, that is Unicode category Cc), any format character
// (Unicode category Cf: bidirectional overrides and isolates, zero-width
// characters, the byte order mark), any other character drawn as nothing
// ([lookalike.Ignorable]: a Hangul filler, a variation selector), or the
// line and paragraph separators U+2028 and U+2029. Session ids are shown to models and operators in
// discover listings and send results; a format character could make one
// read differently from its bytes, and a separator could start a line.
//
// Other characters, "#" and spaces included, are allowed: a "#" in a session
// id survives [Parse], and the ids other hosts announce are not ours to
// narrow further.
func ValidateSession(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty", ErrInvalidSession)
	case len(id) > MaxSessionLen:
		return fmt.Errorf("%w: %d bytes, limit %d", ErrInvalidSession, len(id), MaxSessionLen)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidSession)
	case id == "." || id == "..":
		return fmt.Errorf("%w: %q is a path element", ErrInvalidSession, id)
	}
	for i, r := range id {
		switch {
		case r == 0:
			return fmt.Errorf("%w: NUL at byte %d", ErrInvalidSession, i)
		case r == '/' || r == '\\' || r == ':':
			return fmt.Errorf("%w: %q at byte %d", ErrInvalidSession, r, i)
		case r < 0x20 || r == 0x7f || unicode.Is(unicode.Cc, r):
			return fmt.Errorf("%w: control character %U at byte %d", ErrInvalidSession, r, i)
		case unicode.Is(unicode.Cf, r):
			return fmt.Errorf("%w: format character %U at byte %d", ErrInvalidSession, r, i)
		case lookalike.Ignorable(r):
			return fmt.Errorf("%w: invisible character %U at byte %d", ErrInvalidSession, r, i)
		case r == '\u2028' || r == '\u2029':
			return fmt.Errorf("%w: line or paragraph separator %U at byte %d", ErrInvalidSession, r, i)
		}
	}
	return nil
}

// sessionIDBytes is the number of random bytes in a generated session id.
const sessionIDBytes = 4

// NewSessionID returns a fresh fallback session id: 4 bytes from
// crypto/rand as 8 lowercase hex characters. Such an id always passes
// [ValidateSession].
//
// If the system's randomness source fails, NewSessionID returns an error
// instead of an id, since a predictable id would let two sessions collide.
func NewSessionID() (string, error) {
	return newSessionIDFrom(rand.Reader)
}

// newSessionIDFrom is [NewSessionID] reading from r, so tests can make the
// source fail. A short read counts as a failure.
func newSessionIDFrom(r io.Reader) (string, error) {
	var b [sessionIDBytes]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("route: new session id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
