package seal

import (
	"crypto/rand"
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/identity"
)

// benchSizes are the text sizes of the benchmarked messages.
var benchSizes = []struct {
	name string
	n    int
}{{"1KiB", 1 << 10}, {"64KiB", 64 << 10}}

func benchMessage(b *testing.B, n int) (party, party, identity.Message) {
	a, r := alice(b), bob(b)
	m := signed(b, a, r.pub(), func(m *identity.Message) { m.Text = strings.Repeat("x", n) })
	return a, r, m
}

// BenchmarkSealMessage: sealing one signed message (ephemeral key,
// X25519, HKDF, padding, ChaCha20-Poly1305, envelope signature, JSON).
// The signing of the inner message itself is not included; compare with
// BenchmarkEd25519Sign.
func BenchmarkSealMessage(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			a, _, m := benchMessage(b, s.n)
			b.SetBytes(int64(s.n))
			for b.Loop() {
				e, err := SealMessage(a.signer, &m, rand.Reader)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := e.MarshalJSON(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOpenMessage: opening one envelope, both signatures verified.
func BenchmarkOpenMessage(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			a, r, m := benchMessage(b, s.n)
			e, err := SealMessage(a.signer, &m, nil)
			if err != nil {
				b.Fatal(err)
			}
			payload, _ := e.MarshalJSON()
			b.SetBytes(int64(s.n))
			for b.Loop() {
				if _, err := OpenMessage(r.rcpt, payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEd25519Sign is the floor of BenchmarkSealMessage: signing the
// canonical bytes of the same message.
func BenchmarkEd25519Sign(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			a, _, m := benchMessage(b, s.n)
			c, err := m.Canonical()
			if err != nil {
				b.Fatal(err)
			}
			msg := c.Bytes()
			b.SetBytes(int64(s.n))
			for b.Loop() {
				a.signer.Sign(msg)
			}
		})
	}
}

// BenchmarkEd25519Verify is the floor of BenchmarkOpenMessage: verifying
// the same plaintext message as the trust gate does (JSON decode and
// strict verification).
func BenchmarkEd25519Verify(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			_, _, m := benchMessage(b, s.n)
			payload, _ := m.MarshalJSON()
			b.SetBytes(int64(s.n))
			for b.Loop() {
				got, err := identity.DecodeMessage(payload)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := got.Verify(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
