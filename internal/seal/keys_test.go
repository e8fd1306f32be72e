package seal

import (
	"bytes"
	"crypto/ecdh"
	"errors"
	"math/rand/v2"
	"testing"

	"filippo.io/edwards25519"

	"github.com/interlink-go/interlink/internal/identity"
)

// TestConvertedKeysAgree: for random seeds, the X25519 public key of the
// converted private scalar is the converted Ed25519 public key, so a box
// sealed to an identity's public key opens with its seed.
func TestConvertedKeysAgree(t *testing.T) {
	rng := rand.New(rand.NewChaCha8([32]byte{1}))
	for range 256 {
		seed := make([]byte, identity.SeedSize)
		for i := range seed {
			seed[i] = byte(rng.Uint32())
		}
		scalar, err := PrivateKeyX25519(seed)
		if err != nil {
			t.Fatal(err)
		}
		priv, err := ecdh.X25519().NewPrivateKey(scalar)
		if err != nil {
			t.Fatal(err)
		}
		pub, err := PublicKeyX25519(edPublic(seed))
		if err != nil {
			t.Fatalf("seed %x: %v", seed, err)
		}
		if !bytes.Equal(priv.PublicKey().Bytes(), pub) {
			t.Fatalf("seed %x: X25519(priv, 9) = %x, converted public key %x", seed, priv.PublicKey().Bytes(), pub)
		}
	}
}

// smallOrder lists every 32-byte string that decodes to an Edwards point of
// small order: eight canonical encodings and six non-canonical ones.
var smallOrder = []string{
	"0100000000000000000000000000000000000000000000000000000000000000",
	"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
	"0000000000000000000000000000000000000000000000000000000000000000",
	"0000000000000000000000000000000000000000000000000000000000000080",
	"26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
	"26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
	"c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
	"c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
	"0100000000000000000000000000000000000000000000000000000000000080",
	"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
	"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
	"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
	"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
	"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
}

// TestPublicKeyX25519RefusesSmallOrder: no small-order key, canonical or
// not, becomes a recipient, and nothing can be sealed to one.
func TestPublicKeyX25519RefusesSmallOrder(t *testing.T) {
	for _, h := range smallOrder {
		k := key(t, h)
		if _, err := PublicKeyX25519(k); !errors.Is(err, ErrRecipientKey) {
			t.Errorf("%s: err = %v, want ErrRecipientKey", h, err)
		}
		if _, err := Seal(k, []byte("x"), nil); !errors.Is(err, ErrRecipientKey) {
			t.Errorf("Seal to %s: err = %v, want ErrRecipientKey", h, err)
		}
	}
}

// nonCanonical returns the encodings y+p (for the small y that have one
// below 2^255) that decode to points not of small order, each with the
// canonical encoding of the same point.
func nonCanonical(t *testing.T) (alias, canon [][]byte) {
	t.Helper()
	// p = 2^255 - 19, little-endian: ed ff .. ff 7f. y+p for y < 19 is
	// p's bytes with y added to the first byte.
	for y := byte(0); y < 19; y++ {
		enc := bytes.Repeat([]byte{0xff}, 32)
		enc[0] = 0xed + y
		enc[31] = 0x7f
		p, err := new(edwards25519.Point).SetBytes(enc)
		if err != nil {
			continue // y is not the coordinate of a point
		}
		if new(edwards25519.Point).MultByCofactor(p).Equal(edwards25519.NewIdentityPoint()) == 1 {
			continue
		}
		alias = append(alias, enc)
		canon = append(canon, p.Bytes())
	}
	if len(alias) == 0 {
		t.Fatal("found no non-canonical encoding of a point of large order")
	}
	return alias, canon
}

// TestPublicKeyX25519RefusesNonCanonical: an encoding with y at or above
// the field prime names the same point, hence the same X25519 key, as its
// canonical form; it is refused so that two byte-distinct identities never
// share a decryption key, while the canonical form is accepted.
func TestPublicKeyX25519RefusesNonCanonical(t *testing.T) {
	alias, canon := nonCanonical(t)
	for i := range alias {
		var a, c identity.PublicKey
		copy(a[:], alias[i])
		copy(c[:], canon[i])
		if _, err := PublicKeyX25519(a); !errors.Is(err, ErrRecipientKey) {
			t.Errorf("%x: err = %v, want ErrRecipientKey", alias[i], err)
		}
		if _, err := PublicKeyX25519(c); err != nil {
			t.Errorf("canonical %x: %v", canon[i], err)
		}
	}
}

// TestPublicKeyX25519RefusesNonPoint: 32 bytes whose y has no x on the
// curve are refused.
func TestPublicKeyX25519RefusesNonPoint(t *testing.T) {
	found := 0
	for y := byte(2); y < 40 && found < 3; y++ {
		var k identity.PublicKey
		k[0] = y
		if _, err := new(edwards25519.Point).SetBytes(k[:]); err == nil {
			continue
		}
		found++
		if _, err := PublicKeyX25519(k); !errors.Is(err, ErrRecipientKey) {
			t.Errorf("y=%d: err = %v, want ErrRecipientKey", y, err)
		}
	}
	if found == 0 {
		t.Fatal("found no y off the curve")
	}
}

// TestPrivateKeyX25519SeedLength: only 32-byte seeds convert.
func TestPrivateKeyX25519SeedLength(t *testing.T) {
	for _, n := range []int{0, 31, 33, 64} {
		if _, err := PrivateKeyX25519(make([]byte, n)); !errors.Is(err, identity.ErrKeyLength) {
			t.Errorf("%d bytes: err = %v, want ErrKeyLength", n, err)
		}
		if _, err := NewRecipient(make([]byte, n)); !errors.Is(err, identity.ErrKeyLength) {
			t.Errorf("NewRecipient, %d bytes: err = %v, want ErrKeyLength", n, err)
		}
	}
}

// TestNegatedKeySharesX25519Key documents why the box binds the Ed25519
// key: a key and its negation (the sign bit flipped) map to one X25519 key.
func TestNegatedKeySharesX25519Key(t *testing.T) {
	b := bob(t).pub()
	neg := b
	neg[31] ^= 0x80
	xb, err := PublicKeyX25519(b)
	if err != nil {
		t.Fatal(err)
	}
	xn, err := PublicKeyX25519(neg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(xb, xn) {
		t.Fatalf("negated key maps to %x, key to %x; the map should identify them", xn, xb)
	}
}
