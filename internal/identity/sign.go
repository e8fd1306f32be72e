package identity

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"

	"filippo.io/edwards25519"
)

// Signer holds a secret key and signs messages and announcements with it.
// A Signer is safe for concurrent use.
type Signer struct {
	priv ed25519.PrivateKey
	pub  PublicKey
}

// NewSigner returns the signer for a 32-byte RFC 8032 seed.
func NewSigner(seed []byte) (*Signer, error) {
	if len(seed) != SeedSize {
		return nil, fmt.Errorf("%w: a seed of %d bytes, want %d", ErrKeyLength, len(seed), SeedSize)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	s := &Signer{priv: priv}
	copy(s.pub[:], priv.Public().(ed25519.PublicKey))
	return s, nil
}

// GenerateSeed reads a fresh 32-byte seed from r, or from the operating
// system's generator when r is nil. A short read is an error: a weak key is
// never returned.
func GenerateSeed(r io.Reader) ([]byte, error) {
	if r == nil {
		r = rand.Reader
	}
	seed := make([]byte, SeedSize)
	if _, err := io.ReadFull(r, seed); err != nil {
		return nil, fmt.Errorf("identity: generate seed: %w", err)
	}
	return seed, nil
}

// Public returns the signer's public key.
func (s *Signer) Public() PublicKey { return s.pub }

// Seed returns a copy of the 32-byte seed, which is what a key file stores.
func (s *Signer) Seed() []byte { return append([]byte(nil), s.priv.Seed()...) }

// Sign returns the Ed25519 signature of msg (pure Ed25519, no prehash).
func (s *Signer) Sign(msg []byte) []byte { return ed25519.Sign(s.priv, msg) }

// VerifyStrict reports whether sig is a valid signature of msg by the key
// encoded as pub, with the rules of ed25519-dalek's verify_strict: S must be
// canonical, neither the public key nor R may be of small order, and the
// cofactorless equation must reproduce R byte for byte.
//
// crypto/ed25519.Verify alone accepts small-order keys, so that the identity
// key would verify every message with an identity R and a zero S; the extra
// checks close that hole. Wrong lengths return false instead of panicking.
func VerifyStrict(pub, msg, sig []byte) bool {
	if len(pub) != KeySize || len(sig) != SignatureSize {
		return false
	}
	if smallOrderOrInvalid(pub) || smallOrderOrInvalid(sig[:32]) {
		return false
	}
	return ed25519.Verify(ed25519.PublicKey(pub), msg, sig)
}

var identityPoint = edwards25519.NewIdentityPoint()

// smallOrderOrInvalid reports whether enc fails to decode or decodes to a
// point whose order divides 8.
func smallOrderOrInvalid(enc []byte) bool {
	p, err := new(edwards25519.Point).SetBytes(enc)
	if err != nil {
		return true
	}
	return new(edwards25519.Point).MultByCofactor(p).Equal(identityPoint) == 1
}
