package seal

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/interlink-go/interlink/internal/identity"
)

// Public test seeds, the same as the message signing vectors: Alice's is
// 32 zero bytes, Bob's the first test seed of RFC 8032. Carol and Mallory
// are made from repeated bytes. Never use them for anything else.
const (
	aliceKeyFile = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	bobKeyFile   = "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"
	testTS       = 1700000000000
)

// party is one test identity with both halves of its keys.
type party struct {
	seed   []byte
	signer *identity.Signer
	rcpt   *Recipient
}

func (p party) pub() identity.PublicKey { return p.signer.Public() }

func newParty(tb testing.TB, seed []byte) party {
	tb.Helper()
	s, err := identity.NewSigner(seed)
	if err != nil {
		tb.Fatal(err)
	}
	r, err := NewRecipient(seed)
	if err != nil {
		tb.Fatal(err)
	}
	return party{seed: seed, signer: s, rcpt: r}
}

func keyFileParty(tb testing.TB, keyFile string) party {
	tb.Helper()
	seed, err := identity.DecodeBase64(keyFile)
	if err != nil {
		tb.Fatal(err)
	}
	return newParty(tb, seed)
}

func byteParty(tb testing.TB, b byte) party {
	tb.Helper()
	return newParty(tb, bytes.Repeat([]byte{b}, identity.SeedSize))
}

func alice(tb testing.TB) party   { return keyFileParty(tb, aliceKeyFile) }
func bob(tb testing.TB) party     { return keyFileParty(tb, bobKeyFile) }
func carol(tb testing.TB) party   { return byteParty(tb, 0xc0) }
func mallory(tb testing.TB) party { return byteParty(tb, 0x6d) }

// signed returns a message from p to the key to, signed by p after edit has
// changed its fields.
func signed(tb testing.TB, p party, to identity.PublicKey, edit func(*identity.Message)) identity.Message {
	tb.Helper()
	m := identity.Message{
		To: to.String(), Text: "hi", TS: testTS, MsgID: "m1",
		ReplyTo: p.pub().String() + "#s1",
	}
	if edit != nil {
		edit(&m)
	}
	if err := p.signer.SignMessage(&m); err != nil {
		tb.Fatal(err)
	}
	return m
}

// sealed seals m from p and returns the envelope.
func sealed(tb testing.TB, p party, m identity.Message) Envelope {
	tb.Helper()
	e, err := SealMessage(p.signer, &m, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// rawEnvelope builds an envelope signed by p, from p to to at ts, around a
// box of inner sealed to boxTo; it lets tests make envelopes that an
// honest sender would not, with a valid outer signature.
func rawEnvelope(tb testing.TB, p party, to, boxTo identity.PublicKey, ts uint64, inner []byte) Envelope {
	tb.Helper()
	e := Envelope{From: p.pub(), To: to, TS: ts}
	var err error
	if e.Sealed, err = seal(boxTo, inner, header(p.pub(), to, ts), nil); err != nil {
		tb.Fatal(err)
	}
	resign(p, &e)
	return e
}

// resign signs e again with p's key after a test changed it.
func resign(p party, e *Envelope) { copy(e.Sig[:], p.signer.Sign(e.SignedBytes())) }

func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := identity.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func mustHex(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(string(bytes.Join(bytes.Fields([]byte(s)), nil)))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// key returns 32 bytes as a public key without any parsing, so that tests
// can hand the package values ParsePublicKey would refuse.
func key(tb testing.TB, hexKey string) identity.PublicKey {
	tb.Helper()
	var k identity.PublicKey
	b := mustHex(tb, hexKey)
	if len(b) != len(k) {
		tb.Fatalf("key of %d bytes", len(b))
	}
	copy(k[:], b)
	return k
}
