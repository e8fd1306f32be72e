package identity

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// addVectorSeeds seeds a fuzz target with every file of the golden vectors.
func addVectorSeeds(f *testing.F, name string) {
	for _, v := range loadVectors(f) {
		if d, ok := v.files[name]; ok {
			f.Add(d)
		}
	}
}

// FuzzDecodeMessage: decoding never panics, and a decoded message encodes
// and decodes again to an equal value that verifies exactly when the first
// one did.
func FuzzDecodeMessage(f *testing.F) {
	addVectorSeeds(f, "message.json")
	f.Add([]byte(`{"from":"a","to":"b","text":"","ts":0,"msg_id":"","sig":"","kind":"pair_request","status":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeMessage(data)
		if err != nil {
			return
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		back, err := DecodeMessage(out)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", out, err)
		}
		if !utf8.ValidString(m.Text) {
			// encoding/json replaced invalid UTF-8 on the way in;
			// what was decoded is valid by construction.
			t.Fatalf("decoded text is not valid UTF-8")
		}
		if diff := cmp.Diff(m, back); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
		_, err1 := m.Verify()
		_, err2 := back.Verify()
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("verify changed across the round trip: %v vs %v", err1, err2)
		}
	})
}

// FuzzCanonical: any bytes that parse as a canonical encoding re-encode to
// exactly the same bytes.
func FuzzCanonical(f *testing.F) {
	for _, v := range loadVectors(f) {
		if _, ok := v.files["message.json"]; ok {
			f.Add(v.canonical)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCanonical(data)
		if err != nil {
			return
		}
		if got := c.Bytes(); !bytes.Equal(got, data) {
			t.Fatalf("re-encoding differs\n in %x\nout %x", data, got)
		}
	})
}

// FuzzParsePublicKey: a key text that parses is the canonical text of its
// bytes, so no key has two accepted spellings.
func FuzzParsePublicKey(f *testing.F) {
	f.Add(alicePub)
	f.Add(bobPub)
	f.Add("O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2il")
	f.Add("7f____________________________________________8")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParsePublicKey(s)
		if err != nil {
			return
		}
		if k.String() != s {
			t.Fatalf("parsed %q, prints as %q", s, k.String())
		}
		if k2, err := ParsePublicKey(k.String()); err != nil || k2 != k {
			t.Fatalf("re-parse: %v", err)
		}
	})
}

// FuzzKeyFile: parsing never panics; an accepted file re-encodes to the
// trimmed text it was read from and yields the same key.
func FuzzKeyFile(f *testing.F) {
	addVectorSeeds(f, "seed")
	f.Add([]byte(aliceKeyFile + "\r\n"))
	f.Add([]byte(" \t" + bobKeyFile))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseKeyFile(data)
		if err != nil {
			return
		}
		enc := EncodeKeyFile(s.Seed())
		if string(bytes.TrimSpace(enc)) != string(bytes.TrimSpace(data)) {
			t.Fatalf("file %q re-encodes as %q", data, enc)
		}
		s2, err := ParseKeyFile(enc)
		if err != nil || s2.Public() != s.Public() {
			t.Fatalf("re-parse: %v", err)
		}
	})
}

// FuzzDecodeAnnouncement: decoding never panics and round-trips to an equal
// value.
func FuzzDecodeAnnouncement(f *testing.F) {
	addVectorSeeds(f, "announcement.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := DecodeAnnouncement(data)
		if err != nil {
			return
		}
		out, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeAnnouncement(out)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", out, err)
		}
		if diff := cmp.Diff(a, back); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
		a.Verify() // must not panic on any input
	})
}
