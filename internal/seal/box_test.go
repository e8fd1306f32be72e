package seal

import (
	"bytes"
	"crypto/ecdh"
	"encoding/binary"
	"errors"
	"io"
	"math/big"
	"slices"
	"testing"

	"github.com/interlink-go/interlink/internal/identity"
)

// TestSealOpenRoundTrip: Open returns exactly what Seal took, for lengths
// around the padding boundaries and up to the limit, and the box has the
// size SealedLen promises.
func TestSealOpenRoundTrip(t *testing.T) {
	b := bob(t)
	for _, n := range []int{0, 1, MinPadded - 5, MinPadded - 4, MinPadded - 3, 5000, 64 << 10, MaxPlaintext} {
		p := bytes.Repeat([]byte{'a' + byte(n%26)}, n)
		box, err := Seal(b.pub(), p, nil)
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if len(box) != SealedLen(n) {
			t.Errorf("%d bytes: box of %d, SealedLen says %d", n, len(box), SealedLen(n))
		}
		got, err := Open(b.seed, box)
		if err != nil {
			t.Fatalf("%d bytes: open: %v", n, err)
		}
		if !bytes.Equal(got, p) {
			t.Fatalf("%d bytes: opened %d different bytes", n, len(got))
		}
	}
}

// TestSealIsRandomized: two boxes of one plaintext share no ephemeral key
// and no ciphertext, and both open.
func TestSealIsRandomized(t *testing.T) {
	b := bob(t)
	x, _ := Seal(b.pub(), []byte("same"), nil)
	y, _ := Seal(b.pub(), []byte("same"), nil)
	if bytes.Equal(x[:ephSize], y[:ephSize]) || bytes.Equal(x[ephSize:], y[ephSize:]) {
		t.Fatal("two seals share bytes")
	}
	for _, box := range [][]byte{x, y} {
		if _, err := b.rcpt.Open(box); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOpenRefusesWrongRecipient: a box sealed to Bob opens for no one
// else, including the holder of a key whose negation is Bob's: the two
// share an X25519 key, and only the Ed25519 key in the key derivation
// keeps them apart.
func TestOpenRefusesWrongRecipient(t *testing.T) {
	b, a := bob(t), alice(t)
	box, err := Seal(b.pub(), []byte("for bob"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.rcpt.Open(box); !errors.Is(err, ErrUndecryptable) {
		t.Errorf("alice opened bob's box: err = %v", err)
	}
	neg := b.pub()
	neg[31] ^= 0x80
	box, err = Seal(neg, []byte("for bob's negation"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.rcpt.Open(box); !errors.Is(err, ErrUndecryptable) {
		t.Errorf("bob opened a box sealed to his negated key: err = %v", err)
	}
}

// TestOpenRefusesEveryFlippedByte: changing any one bit of a box, in the
// ephemeral key, the ciphertext or the tag, makes it undecryptable.
func TestOpenRefusesEveryFlippedByte(t *testing.T) {
	b := bob(t)
	box, err := Seal(b.pub(), []byte("attack at dawn"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range box {
		bad := bytes.Clone(box)
		bad[i] ^= 1 << (i % 8)
		if _, err := b.rcpt.Open(bad); !errors.Is(err, ErrUndecryptable) {
			t.Fatalf("byte %d flipped: err = %v, want ErrUndecryptable", i, err)
		}
	}
}

// TestOpenRefusesTruncatedAndExtended: a box cut short anywhere, or with a
// byte added, is undecryptable; one past MaxSealed is oversized.
func TestOpenRefusesTruncatedAndExtended(t *testing.T) {
	b := bob(t)
	box, err := Seal(b.pub(), []byte("x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, ephSize, ephSize + tagSize, MinSealed - 1, len(box) - 1} {
		if _, err := b.rcpt.Open(box[:n]); !errors.Is(err, ErrUndecryptable) {
			t.Errorf("cut to %d bytes: err = %v, want ErrUndecryptable", n, err)
		}
	}
	if _, err := b.rcpt.Open(append(bytes.Clone(box), 0)); !errors.Is(err, ErrUndecryptable) {
		t.Errorf("one byte added: err = %v, want ErrUndecryptable", err)
	}
	if _, err := b.rcpt.Open(make([]byte, MaxSealed+1)); !errors.Is(err, ErrOversized) {
		t.Errorf("MaxSealed+1 bytes: err = %v, want ErrOversized", err)
	}
}

// lowOrderU lists the X25519 public keys whose shared secret with every
// private key is zero: the u of the points of order 1, 2, 4 and 8 and of
// -1, their aliases u+p below 2^255, and each with the top bit set, which
// X25519 ignores.
func lowOrderU(t *testing.T) [][]byte {
	t.Helper()
	p := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(19))
	var out [][]byte
	for _, s := range []string{
		"0", "1",
		"325606250916557431795983626356110631294008115727848805560023387167927233504",
		"39382357235489614581723060781553021112529911719440698176882885853963445705823",
	} {
		v, ok := new(big.Int).SetString(s, 10)
		if !ok {
			t.Fatal(s)
		}
		for _, w := range []*big.Int{v, new(big.Int).Add(v, p)} {
			if w.BitLen() > 255 {
				continue
			}
			le := w.FillBytes(make([]byte, 32))
			slices.Reverse(le)
			top := bytes.Clone(le)
			top[31] |= 0x80
			out = append(out, le, top)
		}
	}
	minus1 := new(big.Int).Sub(p, big.NewInt(1)).FillBytes(make([]byte, 32))
	slices.Reverse(minus1)
	return append(out, minus1)
}

// TestOpenRefusesLowOrderEphemeral: a box whose ephemeral key is a
// low-order point would be readable by anyone (the shared secret is zero);
// it is refused before any decryption is tried.
func TestOpenRefusesLowOrderEphemeral(t *testing.T) {
	b := bob(t)
	box, err := Seal(b.pub(), []byte("x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range lowOrderU(t) {
		pub, err := ecdh.X25519().NewPublicKey(u)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.rcpt.priv.ECDH(pub); err == nil {
			t.Fatalf("%x gives a non-zero shared secret; not a low-order key", u)
		}
		bad := bytes.Clone(box)
		copy(bad, u)
		_, err = b.rcpt.Open(bad)
		if !errors.Is(err, ErrUndecryptable) {
			t.Errorf("ephemeral %x: err = %v, want ErrUndecryptable", u, err)
		}
	}
	// The zero point itself, with a box that a careless implementation
	// would open: the key derived from an all-zero secret.
	var zeroEph [32]byte
	aead, err := boxAEAD(make([]byte, 32), zeroEph[:], b.rcpt.xpub, b.pub())
	if err == nil {
		forged := aead.Seal(bytes.Clone(zeroEph[:]), zeroNonce[:], pad([]byte("forged")), nil)
		if _, err := b.rcpt.Open(forged); !errors.Is(err, ErrUndecryptable) {
			t.Errorf("box under the all-zero secret: err = %v", err)
		}
	} else if !errors.Is(err, ErrUndecryptable) {
		t.Errorf("boxAEAD with a zero secret: err = %v", err)
	}
}

// sealPadded seals the given padded bytes to b with a valid key, so tests
// can reach the padding checks behind authentication.
func sealPadded(t *testing.T, b party, padded []byte) []byte {
	t.Helper()
	eph, err := ecdh.X25519().NewPrivateKey(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	peer, _ := ecdh.X25519().NewPublicKey(b.rcpt.xpub)
	shared, err := eph.ECDH(peer)
	if err != nil {
		t.Fatal(err)
	}
	aead, err := boxAEAD(shared, eph.PublicKey().Bytes(), b.rcpt.xpub, b.pub())
	if err != nil {
		t.Fatal(err)
	}
	return aead.Seal(eph.PublicKey().Bytes(), zeroNonce[:], padded, nil)
}

// TestOpenRefusesBadPadding: authenticated boxes whose padding is not
// what pad writes (a length past the end, a non-zero padding byte, a
// padded size that is not the one the length calls for) are refused, so
// every plaintext has one padded form.
func TestOpenRefusesBadPadding(t *testing.T) {
	b := bob(t)
	good := pad([]byte("hello"))
	if _, err := b.rcpt.Open(sealPadded(t, b, good)); err != nil {
		t.Fatalf("the well-formed control box: %v", err)
	}
	long := bytes.Clone(good)
	binary.LittleEndian.PutUint32(long, uint32(len(good)))
	nonzero := bytes.Clone(good)
	nonzero[len(nonzero)-1] = 1
	oversize := make([]byte, 2*MinPadded)
	binary.LittleEndian.PutUint32(oversize, 5)
	huge := bytes.Clone(good)
	binary.LittleEndian.PutUint32(huge, 0xffffffff)
	for name, padded := range map[string][]byte{
		"length past the end": long, "non-zero padding": nonzero,
		"padded too far": oversize, "length 2^32-1": huge,
	} {
		if _, err := b.rcpt.Open(sealPadded(t, b, padded)); !errors.Is(err, ErrUndecryptable) {
			t.Errorf("%s: err = %v, want ErrUndecryptable", name, err)
		}
	}
}

// TestSealRefusesOversizedPlaintext: one byte over MaxPlaintext is refused
// before any key is made.
func TestSealRefusesOversizedPlaintext(t *testing.T) {
	if _, err := Seal(bob(t).pub(), make([]byte, MaxPlaintext+1), failReader{t}); !errors.Is(err, ErrOversized) {
		t.Fatalf("err = %v, want ErrOversized", err)
	}
}

type failReader struct{ t *testing.T }

func (r failReader) Read([]byte) (int, error) {
	r.t.Error("randomness read for a refused plaintext")
	return 0, io.ErrUnexpectedEOF
}

// TestSealShortRandomness: a generator that runs dry is an error, never a
// weak ephemeral key.
func TestSealShortRandomness(t *testing.T) {
	_, err := Seal(bob(t).pub(), []byte("x"), bytes.NewReader(make([]byte, 31)))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want a short read", err)
	}
}

// TestPaddedLen: the padded size covers the plaintext and its prefix, never
// shrinks as the plaintext grows, is MinPadded for short plaintexts, and
// above that costs at most 1/16 of the length; the limits agree with it.
func TestPaddedLen(t *testing.T) {
	prev := 0
	sizes := map[int]bool{}
	for n := 0; n <= MaxPlaintext; n++ {
		p := PaddedLen(n)
		l := n + lenSize
		switch {
		case p < l:
			t.Fatalf("PaddedLen(%d) = %d, below %d", n, p, l)
		case p < prev:
			t.Fatalf("PaddedLen(%d) = %d, below the previous %d", n, p, prev)
		case l <= MinPadded && p != MinPadded:
			t.Fatalf("PaddedLen(%d) = %d, want %d", n, p, MinPadded)
		case l > MinPadded && p-l > l/16:
			t.Fatalf("PaddedLen(%d) = %d: %d bytes of padding, over 1/16", n, p, p-l)
		}
		prev = p
		sizes[p] = true
	}
	if MaxSealed != SealedLen(MaxPlaintext) {
		t.Errorf("MaxSealed = %d, SealedLen(MaxPlaintext) = %d", MaxSealed, SealedLen(MaxPlaintext))
	}
	if MinSealed != SealedLen(0) {
		t.Errorf("MinSealed = %d, SealedLen(0) = %d", MinSealed, SealedLen(0))
	}
	// The package doc states this count: what a relay can tell lengths by.
	if len(sizes) != 226 {
		t.Errorf("%d distinct padded sizes up to %d bytes, the doc says 226", len(sizes), MaxPlaintext)
	}
}

// TestOpenWithSeedMatchesRecipient: the package Open and Recipient.Open
// agree, and Open refuses a bad seed.
func TestOpenWithSeedMatchesRecipient(t *testing.T) {
	b := bob(t)
	box, _ := Seal(b.pub(), []byte("x"), nil)
	if got, err := Open(b.seed, box); err != nil || string(got) != "x" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := Open(b.seed[:31], box); !errors.Is(err, identity.ErrKeyLength) {
		t.Fatalf("short seed: err = %v", err)
	}
}
