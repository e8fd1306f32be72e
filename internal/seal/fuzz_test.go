package seal

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"
)

// addVectorEnvelope seeds f with the envelope of the fixed vectors.
func addVectorEnvelope(f *testing.F) {
	ar, err := txtar.ParseFile(vectorsFile)
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range ar.Files {
		if file.Name == "envelope.json" {
			f.Add(file.Data)
		}
	}
	f.Add([]byte(`{"from":"a","to":"b","ts":0,"sealed":"","sig":""}`))
	f.Add([]byte(`{"ts":1e3}`))
}

// FuzzOpenMessage: opening any payload never panics, every refusal wraps
// one of the package's sentinels, and whatever opens is a message
// whose own signature verifies.
func FuzzOpenMessage(f *testing.F) {
	addVectorEnvelope(f)
	b := bob(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := OpenMessage(b.rcpt, data)
		if err != nil {
			if Reason(err) == "error" {
				t.Fatalf("refusal without a reason: %v", err)
			}
			return
		}
		if _, err := m.Verify(); err != nil {
			t.Fatalf("opened a message that does not verify: %v", err)
		}
	})
}

// FuzzParseEnvelope: parsing never panics, and a parsed envelope encodes
// and parses again to an equal value with the same signature verdict.
func FuzzParseEnvelope(f *testing.F) {
	addVectorEnvelope(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := ParseEnvelope(data)
		if err != nil {
			if Reason(err) == "error" {
				t.Fatalf("refusal without a reason: %v", err)
			}
			return
		}
		out, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseEnvelope(out)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", out, err)
		}
		if diff := cmp.Diff(e, back); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
		_, err1 := e.Verify()
		_, err2 := back.Verify()
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("verify changed across the round trip: %v vs %v", err1, err2)
		}
	})
}

// FuzzOpen: opening any bytes as a box never panics and fails only with
// ErrUndecryptable or ErrOversized.
func FuzzOpen(f *testing.F) {
	b := bob(f)
	box, err := Seal(b.pub(), []byte("seed"), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(box)
	f.Add(make([]byte, MinSealed))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := b.rcpt.Open(data)
		if err != nil && !errors.Is(err, ErrUndecryptable) && !errors.Is(err, ErrOversized) {
			t.Fatalf("unexpected error: %v", err)
		}
	})
}
