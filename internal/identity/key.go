package identity

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"filippo.io/edwards25519"
)

// KeySize is the length of a public key, SignatureSize of a signature and
// SeedSize of a secret key seed, in bytes.
const (
	KeySize       = 32
	SignatureSize = 64
	SeedSize      = 32
)

// FingerprintLen is the number of base64 characters of a key that form its
// fingerprint (the first six key bytes).
const FingerprintLen = 8

// Errors returned when parsing keys, signatures and key files.
var (
	// ErrEncoding reports text that is not strict unpadded URL-safe base64.
	ErrEncoding = errors.New("identity: not strict unpadded url-safe base64")
	// ErrKeyLength reports a decoded key or seed of the wrong length.
	ErrKeyLength = errors.New("identity: wrong key length")
	// ErrKeyPoint reports 32 bytes that do not decode to a curve point.
	ErrKeyPoint = errors.New("identity: key is not a curve point")
	// ErrSignatureLength reports a decoded signature that is not 64 bytes.
	ErrSignatureLength = errors.New("identity: signature is not 64 bytes")
)

var b64 = base64.RawURLEncoding.Strict()

// EncodeBase64 returns the unpadded URL-safe base64 text of b.
func EncodeBase64(b []byte) string { return b64.EncodeToString(b) }

// DecodeBase64 decodes unpadded URL-safe base64 strictly. Unlike
// encoding/base64 on its own it also rejects CR and LF, which the standard
// decoder skips silently even in strict mode; any other stray byte, padding
// or non-zero trailing bits are rejected by the decoder itself.
func DecodeBase64(s string) ([]byte, error) {
	if strings.ContainsAny(s, "\r\n") {
		return nil, ErrEncoding
	}
	b, err := b64.DecodeString(s)
	if err != nil {
		return nil, ErrEncoding
	}
	return b, nil
}

// PublicKey is an Ed25519 public key as its 32-byte encoding. It is the
// identity of an interlink agent. The zero value is not a valid key.
type PublicKey [KeySize]byte

// ParsePublicKey parses the text form of a key: strict base64 (no trimming)
// of exactly 32 bytes that decode to a curve point. Decoding is the permissive
// one of RFC 8032 implementations such as ed25519-dalek: a y coordinate at or
// above the field prime is accepted, and points of small order parse (they
// fail later, at [VerifyStrict]).
func ParsePublicKey(s string) (PublicKey, error) {
	var k PublicKey
	b, err := DecodeBase64(s)
	if err != nil {
		return k, fmt.Errorf("%w in a key", err)
	}
	if len(b) != KeySize {
		return k, fmt.Errorf("%w: a key of %d bytes, want %d", ErrKeyLength, len(b), KeySize)
	}
	if _, err := new(edwards25519.Point).SetBytes(b); err != nil {
		return k, ErrKeyPoint
	}
	copy(k[:], b)
	return k, nil
}

// String returns the canonical text form of k: 43 base64 characters.
func (k PublicKey) String() string { return EncodeBase64(k[:]) }

// Fingerprint returns the first 8 characters of the text form of k. It is for
// display and lookups by a person, never for authentication.
func (k PublicKey) Fingerprint() string { return k.String()[:FingerprintLen] }

// SmallOrder reports whether k is a point of small order (or not a point at
// all). Such a key can never produce a signature that [VerifyStrict] accepts.
func (k PublicKey) SmallOrder() bool { return smallOrderOrInvalid(k[:]) }

// MarshalText implements encoding.TextMarshaler.
func (k PublicKey) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with [ParsePublicKey].
func (k *PublicKey) UnmarshalText(b []byte) error {
	p, err := ParsePublicKey(string(b))
	if err != nil {
		return err
	}
	*k = p
	return nil
}

// Fingerprint returns the first 8 characters of a key's text form, or the
// whole text when it is shorter. It works on unparsed text so that callers can
// show something for a value that did not parse.
func Fingerprint(key string) string {
	if len(key) <= FingerprintLen {
		return key
	}
	return key[:FingerprintLen]
}
