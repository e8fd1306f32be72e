package identity

import (
	"encoding/hex"
	"testing"
)

// Public test keys of the reference vectors; never use them for anything else.
const (
	aliceKeyFile = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	bobKeyFile   = "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"
	alicePub     = "O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik"
	bobPub       = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
	testTS       = 1700000000000
)

func mustSigner(tb testing.TB, keyFile string) *Signer {
	tb.Helper()
	s, err := ParseKeyFile([]byte(keyFile))
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func seededSigner(tb testing.TB, b byte) *Signer {
	tb.Helper()
	seed := make([]byte, SeedSize)
	for i := range seed {
		seed[i] = b
	}
	s, err := NewSigner(seed)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// signed returns a message from s to the key text to, signed, after edit
// has changed its fields.
func signed(tb testing.TB, s *Signer, to string, edit func(*Message)) Message {
	tb.Helper()
	m := Message{To: to, Text: "hi", TS: testTS, MsgID: "m1", ReplyTo: s.Public().String() + "#s1"}
	if edit != nil {
		edit(&m)
	}
	if err := s.SignMessage(&m); err != nil {
		tb.Fatal(err)
	}
	return m
}

func mustHex(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
