package seal

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha512"
	"fmt"

	"filippo.io/edwards25519"

	"github.com/interlink-go/interlink/internal/identity"
)

// X25519Size is the size of an X25519 public key and of a private scalar.
const X25519Size = 32

// PublicKeyX25519 returns the X25519 public key (the Montgomery u
// coordinate) of the point that the Ed25519 public key pub encodes, by the
// birational map u = (1 + y) / (1 - y) of RFC 7748 §4.1.
//
// It refuses, with [ErrRecipientKey], keys that are not points, points of
// small order (whose shared secret with anything is fixed, so sealing to
// them hides nothing), and non-canonical encodings. The last rule keeps the
// map one-to-one on the keys it accepts: a y at or above the field prime
// names the same point as its reduced form, and two byte-distinct
// identities must not share one decryption key. (A point and its negation
// still share u; the sealed box binds the Ed25519 key itself into its key
// derivation for that reason, see [Seal].)
func PublicKeyX25519(pub identity.PublicKey) ([]byte, error) {
	p, err := new(edwards25519.Point).SetBytes(pub[:])
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not a curve point", ErrRecipientKey, pub.Fingerprint())
	}
	if !bytes.Equal(p.Bytes(), pub[:]) {
		return nil, fmt.Errorf("%w: %s is not a canonical encoding", ErrRecipientKey, pub.Fingerprint())
	}
	if pub.SmallOrder() {
		return nil, fmt.Errorf("%w: %s is a point of small order", ErrRecipientKey, pub.Fingerprint())
	}
	return p.BytesMontgomery(), nil
}

// PrivateKeyX25519 returns the X25519 private scalar of an Ed25519 seed:
// the first 32 bytes of SHA-512(seed), the same secret scalar Ed25519
// signs with (RFC 8032 §5.1.5), so its X25519 public key is exactly
// [PublicKeyX25519] of the seed's Ed25519 key. The bytes are returned
// unclamped; X25519 clamps them itself (RFC 7748 §5), as age's ssh-ed25519
// recipients also rely on.
func PrivateKeyX25519(seed []byte) ([]byte, error) {
	if len(seed) != identity.SeedSize {
		return nil, fmt.Errorf("%w: a seed of %d bytes, want %d", identity.ErrKeyLength, len(seed), identity.SeedSize)
	}
	h := sha512.Sum512(seed)
	out := append([]byte(nil), h[:X25519Size]...)
	clear(h[:])
	return out, nil
}

// edPublic returns the Ed25519 public key of seed, which is SeedSize bytes.
func edPublic(seed []byte) identity.PublicKey {
	var k identity.PublicKey
	copy(k[:], ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey))
	return k
}
