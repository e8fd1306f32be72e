package seal

import (
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/interlink-go/interlink/internal/identity"
)

// BoxDomain is the HKDF info prefix of the sealed box; the recipient's
// Ed25519 key follows it.
const BoxDomain = "interlink-seal-v1\x00"

// Sizes of the sealed box.
const (
	// MaxPlaintext is the largest plaintext [Seal] takes. It is the
	// largest /send body the agent builds today, which bounds the JSON
	// of any message it signs.
	MaxPlaintext = 1 << 20
	// MinPadded is the smallest padded plaintext: every message whose
	// length and 4-byte length prefix fit in it looks the same size.
	MinPadded = 1024
	// ephSize is the ephemeral public key that starts a sealed box.
	ephSize = X25519Size
	// tagSize is the Poly1305 tag at its end.
	tagSize = chacha20poly1305.Overhead
	// lenSize is the length prefix inside the padded plaintext.
	lenSize = 4
	// MinSealed and MaxSealed bound the size of a sealed box.
	MinSealed = ephSize + MinPadded + tagSize
	MaxSealed = ephSize + (MaxPlaintext+lenSize+1<<15-1)&^(1<<15-1) + tagSize
)

// PaddedLen returns the size to which a plaintext of n bytes is padded,
// length prefix included: at least [MinPadded], and above that the Padmé
// rule, which rounds 4+n up so that only the top ⌊log2 ⌊log2 L⌋⌋+1 bits of
// the length L stay significant. A relay then learns about log2 log2 of
// the length instead of the length, for at most 1/16 more bytes above
// MinPadded (the bound is checked by a test).
func PaddedLen(n int) int {
	l := n + lenSize
	if l <= MinPadded {
		return MinPadded
	}
	e := bits.Len(uint(l)) - 1 // ⌊log2 l⌋
	s := bits.Len(uint(e))     // ⌊log2 e⌋ + 1
	mask := 1<<(e-s) - 1
	return (l + mask) &^ mask
}

// SealedLen returns the size of the sealed box of a plaintext of n bytes.
func SealedLen(n int) int { return ephSize + PaddedLen(n) + tagSize }

// Seal encrypts plaintext so that only the holder of the secret key of the
// Ed25519 identity recipient can read it, and no one can tell who sealed
// it (the box carries no sender; [SealMessage] adds a signed envelope).
// rand supplies the 32 bytes of the ephemeral key; nil means crypto/rand.
//
// The box is eph ‖ ChaCha20-Poly1305(key, nonce 0, pad(plaintext)), where
// eph is a fresh X25519 public key and key is HKDF-SHA256 of the X25519
// shared secret with salt eph ‖ recipient's X25519 key and info
// [BoxDomain] ‖ recipient's Ed25519 key. The key is used for one box only,
// so the fixed nonce is never reused under it.
func Seal(recipient identity.PublicKey, plaintext []byte, rand io.Reader) ([]byte, error) {
	return seal(recipient, plaintext, nil, rand)
}

// Open decrypts a box made by [Seal] for the identity whose seed is seed.
// Every failure wraps [ErrUndecryptable], or [ErrOversized] for a box
// larger than [MaxSealed].
func Open(seed, sealed []byte) ([]byte, error) {
	r, err := NewRecipient(seed)
	if err != nil {
		return nil, err
	}
	return r.Open(sealed)
}

// Recipient holds the keys that open sealed boxes for one identity. It is
// safe for concurrent use.
type Recipient struct {
	pub  identity.PublicKey
	xpub []byte
	priv *ecdh.PrivateKey
}

// NewRecipient returns the recipient for a 32-byte Ed25519 seed.
func NewRecipient(seed []byte) (*Recipient, error) {
	scalar, err := PrivateKeyX25519(seed)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	priv, err := ecdh.X25519().NewPrivateKey(scalar)
	clear(scalar)
	if err != nil { // unreachable: any 32 bytes are an X25519 scalar
		return nil, fmt.Errorf("seal: %w", err)
	}
	return &Recipient{pub: edPublic(seed), xpub: priv.PublicKey().Bytes(), priv: priv}, nil
}

// Public returns the recipient's Ed25519 identity.
func (r *Recipient) Public() identity.PublicKey { return r.pub }

// Open decrypts a box made by [Seal] for r; see the package function [Open].
func (r *Recipient) Open(sealed []byte) ([]byte, error) { return r.open(sealed, nil) }

var zeroNonce [chacha20poly1305.NonceSize]byte

func seal(recipient identity.PublicKey, plaintext, ad []byte, rnd io.Reader) ([]byte, error) {
	if len(plaintext) > MaxPlaintext {
		return nil, fmt.Errorf("%w: a plaintext of %d bytes, at most %d", ErrOversized, len(plaintext), MaxPlaintext)
	}
	rx, err := PublicKeyX25519(recipient)
	if err != nil {
		return nil, err
	}
	if rnd == nil {
		rnd = rand.Reader
	}
	var e [X25519Size]byte
	if _, err := io.ReadFull(rnd, e[:]); err != nil {
		return nil, fmt.Errorf("seal: ephemeral key: %w", err)
	}
	eph, err := ecdh.X25519().NewPrivateKey(e[:])
	clear(e[:])
	if err != nil {
		return nil, fmt.Errorf("seal: ephemeral key: %w", err)
	}
	peer, err := ecdh.X25519().NewPublicKey(rx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRecipientKey, err)
	}
	shared, err := eph.ECDH(peer)
	if err != nil { // an all-zero secret; PublicKeyX25519 refused such keys
		return nil, fmt.Errorf("%w: %w", ErrRecipientKey, err)
	}
	ephPub := eph.PublicKey().Bytes()
	aead, err := boxAEAD(shared, ephPub, rx, recipient)
	if err != nil {
		return nil, err
	}
	padded := pad(plaintext)
	out := make([]byte, ephSize, ephSize+len(padded)+tagSize)
	copy(out, ephPub)
	out = aead.Seal(out, zeroNonce[:], padded, ad)
	clear(padded)
	return out, nil
}

func (r *Recipient) open(sealed, ad []byte) ([]byte, error) {
	if len(sealed) > MaxSealed {
		return nil, fmt.Errorf("%w: a sealed box of %d bytes, at most %d", ErrOversized, len(sealed), MaxSealed)
	}
	if len(sealed) < MinSealed {
		return nil, fmt.Errorf("%w: truncated: %d bytes, at least %d", ErrUndecryptable, len(sealed), MinSealed)
	}
	ephPub := sealed[:ephSize]
	eph, err := ecdh.X25519().NewPublicKey(ephPub)
	if err != nil { // unreachable: any 32 bytes are an X25519 public key
		return nil, fmt.Errorf("%w: %w", ErrUndecryptable, err)
	}
	// ECDH refuses an all-zero shared secret, which is what every
	// low-order ephemeral key gives: such a box would be readable by
	// anyone, so it is not opened.
	shared, err := r.priv.ECDH(eph)
	if err != nil {
		return nil, fmt.Errorf("%w: low-order ephemeral key", ErrUndecryptable)
	}
	aead, err := boxAEAD(shared, ephPub, r.xpub, r.pub)
	if err != nil {
		return nil, err
	}
	padded, err := aead.Open(nil, zeroNonce[:], sealed[ephSize:], ad)
	if err != nil {
		return nil, fmt.Errorf("%w: authentication failed", ErrUndecryptable)
	}
	return unpad(padded)
}

// boxAEAD derives the one-time ChaCha20-Poly1305 key of a box.
func boxAEAD(shared, ephPub, recipientX []byte, recipient identity.PublicKey) (cipher.AEAD, error) {
	// An all-zero secret means a low-order point took part; ECDH
	// already refuses it, and so does this check, independently.
	var zero [X25519Size]byte
	if subtle.ConstantTimeCompare(shared, zero[:]) == 1 {
		return nil, fmt.Errorf("%w: all-zero shared secret", ErrUndecryptable)
	}
	salt := make([]byte, 0, 2*X25519Size)
	salt = append(append(salt, ephPub...), recipientX...)
	key, err := hkdf.Key(sha256.New, shared, salt, BoxDomain+string(recipient[:]), chacha20poly1305.KeySize)
	clear(shared)
	if err != nil {
		return nil, fmt.Errorf("seal: hkdf: %w", err)
	}
	aead, err := chacha20poly1305.New(key)
	clear(key)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return aead, nil
}

// pad returns u32le(len(p)) ‖ p ‖ zeros, PaddedLen(len(p)) bytes in all.
func pad(p []byte) []byte {
	out := make([]byte, PaddedLen(len(p)))
	binary.LittleEndian.PutUint32(out, uint32(len(p)))
	copy(out[lenSize:], p)
	return out
}

// unpad undoes pad. It accepts exactly the outputs of pad: the length must
// fit, the padded size must be the one pad chooses for it, and every
// padding byte must be zero, so a plaintext has one sealed form per
// ephemeral key.
func unpad(b []byte) ([]byte, error) {
	n := binary.LittleEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-lenSize) || n > MaxPlaintext || PaddedLen(int(n)) != len(b) {
		return nil, fmt.Errorf("%w: bad padding", ErrUndecryptable)
	}
	var nonzero byte
	for _, c := range b[lenSize+n:] {
		nonzero |= c
	}
	if nonzero != 0 {
		return nil, fmt.Errorf("%w: bad padding", ErrUndecryptable)
	}
	return b[lenSize : lenSize+n], nil
}
