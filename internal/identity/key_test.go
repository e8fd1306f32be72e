package identity

import (
	"errors"
	"strings"
	"testing"
)

func TestParsePublicKey(t *testing.T) {
	k, err := ParsePublicKey(alicePub)
	if err != nil {
		t.Fatal(err)
	}
	if k.String() != alicePub {
		t.Errorf("String() = %s, want %s", k, alicePub)
	}
	if got, want := mustSigner(t, aliceKeyFile).Public(), k; got != want {
		t.Errorf("public key of the zero seed = %s, want %s", got, want)
	}
	if hx := "3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29"; string(k[:]) != string(mustHex(t, hx)) {
		t.Errorf("key bytes = %x, want %s", k[:], hx)
	}
}

// TestKeyEncodingRejected covers every way a key or signature text can be
// malformed; each is refused for from, to and sig alike.
func TestKeyEncodingRejected(t *testing.T) {
	good := signed(t, mustSigner(t, aliceKeyFile), bobPub, nil)
	cases := map[string]func(string) string{
		"padded":            func(s string) string { return s + "=" },
		"trailing bits":     func(s string) string { return s[:len(s)-1] + nextChar(s[len(s)-1]) },
		"embedded newline":  func(s string) string { return s[:10] + "\n" + s[10:] },
		"embedded CR":       func(s string) string { return s[:10] + "\r" + s[10:] },
		"trailing newline":  func(s string) string { return s + "\n" },
		"leading space":     func(s string) string { return " " + s },
		"one char short":    func(s string) string { return s[:len(s)-1] },
		"one char long":     func(s string) string { return s + "A" },
		"standard alphabet": func(s string) string { return "+/" + s[2:] },
		"empty":             func(string) string { return "" },
	}
	for name, mangle := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := ParsePublicKey(mangle(alicePub)); err == nil {
				t.Errorf("ParsePublicKey accepted %q", mangle(alicePub))
			}
			for field, set := range map[string]func(*Message){
				"from": func(m *Message) { m.From = mangle(m.From) },
				"to":   func(m *Message) { m.To = mangle(m.To) },
				"sig":  func(m *Message) { m.Sig = mangle(m.Sig) },
			} {
				m := good
				set(&m)
				if _, err := m.Verify(); !errors.Is(err, ErrSignature) {
					t.Errorf("%s: Verify = %v, want ErrSignature", field, err)
				}
			}
		})
	}
	// The mangled forms above must be rejected by the decoder, not merely
	// by a failing signature check.
	for _, s := range []string{alicePub + "=", "O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2il", alicePub[:5] + "\n" + alicePub[5:]} {
		if _, err := DecodeBase64(s); !errors.Is(err, ErrEncoding) {
			t.Errorf("DecodeBase64(%q) = %v, want ErrEncoding", s, err)
		}
	}
	if _, err := ParsePublicKey(EncodeBase64(make([]byte, 31))); !errors.Is(err, ErrKeyLength) {
		t.Errorf("31-byte key: %v, want ErrKeyLength", err)
	}
}

// nextChar returns the base64 character after c, which changes only the
// unused low bits when c ends a 43-character key.
func nextChar(c byte) string {
	const alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	return string(alpha[(strings.IndexByte(alpha, c)+1)%64])
}

func TestKeyFile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		wantErr error
	}{
		{"bare", aliceKeyFile, nil},
		{"trailing newline", aliceKeyFile + "\n", nil},
		{"CRLF", aliceKeyFile + "\r\n", nil},
		{"surrounding spaces", "  " + aliceKeyFile + " \t\n", nil},
		{"31-byte seed", EncodeBase64(make([]byte, 31)), ErrKeyLength},
		{"33-byte seed", EncodeBase64(make([]byte, 33)), ErrKeyLength},
		{"padded", EncodeBase64(make([]byte, 31)) + "=", ErrEncoding},
		{"inner newline", aliceKeyFile[:20] + "\n" + aliceKeyFile[20:], ErrEncoding},
		{"64-byte Go private key", EncodeBase64(make([]byte, 64)), ErrKeyLength},
		{"empty", "", ErrKeyLength},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseKeyFile([]byte(tc.content))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Public().String() != alicePub {
				t.Errorf("public key %s, want %s", s.Public(), alicePub)
			}
		})
	}
	seed := mustSigner(t, bobKeyFile).Seed()
	if got := string(EncodeKeyFile(seed)); got != bobKeyFile+"\n" || len(got) != 44 {
		t.Errorf("EncodeKeyFile = %q", got)
	}
}

func TestFingerprint(t *testing.T) {
	k, _ := ParsePublicKey(bobPub)
	if k.Fingerprint() != "11qYAYKx" || Fingerprint(bobPub) != "11qYAYKx" {
		t.Errorf("fingerprint = %s / %s, want 11qYAYKx", k.Fingerprint(), Fingerprint(bobPub))
	}
	if Fingerprint("abc") != "abc" {
		t.Errorf("short text fingerprint changed")
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("no entropy") }

func TestEntropyFailure(t *testing.T) {
	if _, err := GenerateSeed(failingReader{}); err == nil {
		t.Error("GenerateSeed succeeded without entropy")
	}
	if _, err := NewMsgID(failingReader{}); err == nil {
		t.Error("NewMsgID succeeded without entropy")
	}
	// A reader that runs dry midway is a failure too, not a short id.
	if _, err := NewMsgID(strings.NewReader("0123456789")); err == nil {
		t.Error("NewMsgID accepted a short read")
	}
}

func TestNewMsgID(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id, err := NewMsgID(nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
			t.Fatalf("msg id %q is not 32 lowercase hex characters", id)
		}
		if seen[id] {
			t.Fatalf("duplicate msg id %s", id)
		}
		seen[id] = true
	}
	seed, err := GenerateSeed(nil)
	if err != nil || len(seed) != SeedSize {
		t.Fatalf("GenerateSeed = %d bytes, %v", len(seed), err)
	}
}
